"""Loop overhead: microseconds per tool-call step with an instant model and a trivial tool.

Run: ``python benchmarks/loop_overhead.py`` (add ``--quick`` for fewer repetitions).

Each step is one model call answered instantly by a scripted model with one tool call, plus
the loop's work around it: events, validation (jsonschema), dedup fingerprint, tool execution,
messages. The floor is a bare hand-written async loop doing the same model/tool calls with
none of that. Also prints ``import agentnb`` time (fresh interpreter, best of 5).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

from agentnb import Agent, tool
from agentnb.testing import ScriptedProvider, call


@tool
def inc(i: int) -> int:
    """Return i + 1."""
    return i + 1


@tool
async def ainc(i: int) -> int:
    """Return i + 1 (async)."""
    return i + 1


def script(name: str, n: int) -> list[object]:
    # Distinct arguments, so the deduplicator lets every call run.
    return [call(name, i=k) for k in range(n)] + ["done"]


async def agent_run(name: str, n: int) -> float:
    agent = Agent(ScriptedProvider(script(name, n)), tools=[inc, ainc], max_tool_calls=n)
    start = time.perf_counter()
    result = await agent.arun("go")
    elapsed = time.perf_counter() - start
    if result.tool_calls != n or result.stop_reason not in ("limit", "answer"):
        raise SystemExit(f"unexpected result: {result!r}")
    return elapsed


async def bare_run(n: int) -> float:
    """The floor: the same instant model and tool, no events, validation or bookkeeping."""
    replies = [("inc", {"i": k}) for k in range(n)] + [("", None)]

    async def model(messages: list[dict[str, object]]) -> tuple[str, dict[str, int] | None]:
        return replies[len(messages) // 2]

    start = time.perf_counter()
    messages: list[dict[str, object]] = [{"role": "user", "content": "go"}]
    while True:
        name, args = await model(messages)
        if args is None:
            break
        messages.append({"role": "assistant", "call": (name, args)})
        messages.append({"role": "tool", "content": str(inc.fn(**args))})
    return time.perf_counter() - start


def measure(fn, n: int, reps: int) -> float:  # type: ignore[no-untyped-def]
    """Median microseconds per step over ``reps`` runs."""
    times = [asyncio.run(fn(n)) for _ in range(reps)]
    return statistics.median(times) / n * 1e6


def import_time() -> float:
    code = "import time; t = time.perf_counter(); import agentnb; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout) for _ in range(5)
    ]
    return min(runs) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    reps = 5 if parser.parse_args().quick else 21
    rows = []
    for n in (10, 100):
        rows.append((f"agentnb, sync tool, N={n}", measure(lambda k: agent_run("inc", k), n, reps)))
        rows.append((f"agentnb, async tool, N={n}", measure(lambda k: agent_run("ainc", k), n, reps)))
        rows.append((f"bare Python loop (floor), N={n}", measure(bare_run, n, reps)))
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  us/step")
    for label, us in rows:
        print(f"{label:<{width}}  {us:7.1f}")
    print(f"{'import agentnb (ms, best of 5)':<{width}}  {import_time():7.1f}")
    print("target: <= 50 us/step at N=10 and N=100; import < 150 ms")


if __name__ == "__main__":
    main()
