"""Long runs that fit (issue 47): a 200-step run whose tool results each take 2,000 tokens, against a
real HTTP server with an 8,000-token window, with and without compaction.

Run: ``python benchmarks/context_compaction.py`` (``--quick``: 40 steps).

The server is :class:`agentnb.testing.ScriptedServer` with ``window=8000``: it counts each
request's prompt (4 characters a token) and refuses one too long with HTTP 400 in OpenAI's words
(``This model's maximum context length is 8000 tokens. However, your messages resulted in N
tokens...``). The agent is not told the window: the first refusal states it.

* With ``Agent(..., context=agentnb.Compaction())``: the run must end in its answer, every
  request the server answered under the window; the figures are the largest request, how many
  compactions (and of which steps), how many requests were refused, and the time per step.
* Without a policy: the run must end with :class:`agentnb.ContextOverflow` at the step whose
  request first passes the window, naming the tokens and the window.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

import agentnb
from agentnb import Agent, Compaction, ContextOverflow, tool
from agentnb.providers import OpenAIProvider
from agentnb.testing.server import ScriptedServer, text, tool_calls

WINDOW = 8000
#: 2,000 tokens as the server counts them (4 characters a token).
CHUNK = 4 * 2000


@tool
def read_chunk(n: int) -> str:
    """Read chunk n of the file."""
    return f"chunk {n}: " + ("lorem ipsum " * (CHUNK // 12 + 1))[: CHUNK - 12]


def run(steps: int, policy: Compaction | None) -> tuple[agentnb.RunResult, ScriptedServer, float]:
    with ScriptedServer(window=WINDOW) as server:
        server.script(*[tool_calls(("read_chunk", {"n": i}, f"call_{i}")) for i in range(steps)], text("all read"))
        model = OpenAIProvider("wire", base_url=server.url, api_key="sk-bench", max_retries=0)
        agent = Agent(model, tools=[read_chunk], max_tool_calls=steps + 1, context=policy, system="Read every chunk.")
        start = time.perf_counter()
        result = agent.run("Read the file, chunk by chunk.")
        return result, server, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", default=os.environ.get("AGENTNB_BENCH_QUICK") == "1")
    args = parser.parse_args()
    steps = 40 if args.quick else 200
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{steps} steps, tool results of {CHUNK:,} characters (2,000 tokens), window {WINDOW:,}; load {load:.1f}")

    result, server, seconds = run(steps, Compaction())
    done = [e for e in result.events if e.kind == "context_compacted"]
    kinds = collections.Counter(", ".join(e.steps) for e in done)
    answered = [s for s in server.sizes if s <= WINDOW]
    refused = len(server.sizes) - len(answered)
    print("with Compaction():")
    print(f"  stop reason {result.stop_reason}, output {result.output!r}, tool calls {result.tool_calls}")
    print(f"  largest request the server answered: {max(answered):,} tokens of {WINDOW:,}")
    print(f"  compactions: {len(done)} ({dict(kinds)}); requests refused as too long: {refused}")
    print(f"  {seconds:.2f} s, {1000 * seconds / (steps + 1):.1f} ms/step (real HTTP, 2 cores)")
    print(f"  messages kept in the transcript: {len(result.messages)}")
    ok = result.stop_reason == "answer" and result.output == "all read" and result.tool_calls == steps
    ok = ok and max(answered) <= WINDOW and refused <= 1

    result, server, seconds = run(steps, None)
    err = result.exception
    failed_at = sum(1 for e in result.events if e.kind == "model_request") - 1
    print("without a policy:")
    print(f"  stop reason {result.stop_reason} at step {failed_at}: {type(err).__name__}: {err}")
    ok = ok and isinstance(err, ContextOverflow) and err.window == WINDOW and (err.tokens or 0) > WINDOW
    print("targets met" if ok else "TARGETS MISSED")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
