"""What the context gauge costs (issue 47 item 2): per step with an estimated count, and as a share
of a request's time with the in-process tokenizer.

Run: ``python benchmarks/context_gauge.py`` (``--quick``: fewer repetitions, the tiny test model
instead of SmolLM2).

1. **Estimated.** The same scripted run of N tool-call steps (an instant model, a trivial tool),
   with the gauge and with a gauge that measures nothing, interleaved, best CPU time of several
   repetitions each: the difference per step is what counting and the gauge add to the loop.
   Also ``ContextGauge.measure`` alone on a conversation of 2N messages, per call.
2. **Exact.** Counting a request with the in-process model's tokenizer (its chat template, the
   UnTooled layer's tool prompt) against sending that request (SmolLM2-135M, 16 new tokens; the
   tiny random test model in quick mode), both in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

from agentnb import Agent, tool
from agentnb.context import gauge as gauge_module
from agentnb.context.size import RequestSize
from agentnb.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
from agentnb.providers.base import Request
from agentnb.run.phases import ask as ask_phase
from agentnb.testing import ScriptedProvider, call


@tool
def inc(i: int) -> int:
    """Return i + 1."""
    return i + 1


class NoGauge(gauge_module.ContextGauge):
    """The same loop without counting: a constant size, nothing learnt."""

    def measure(self, request: Any) -> RequestSize:
        return RequestSize(0, False, self.window)

    def learn(self, usage: Any) -> None:
        pass


def one_run(n: int) -> float:
    """CPU seconds of one scripted run of ``n`` tool-call steps."""
    agent = Agent(ScriptedProvider([call("inc", i=k) for k in range(n)] + ["done"]), tools=[inc], max_tool_calls=n)
    cpu = time.process_time()
    result = asyncio.run(agent.arun("go"))
    spent = time.process_time() - cpu
    assert result.output == "done" and result.tool_calls == n
    return spent


def estimated(n: int, reps: int) -> None:
    with_gauge, without = [], []
    for _ in range(reps):  # interleaved: both see the same load
        ask_phase.ContextGauge = gauge_module.ContextGauge  # type: ignore[attr-defined]
        with_gauge.append(one_run(n))
        ask_phase.ContextGauge = NoGauge  # type: ignore[attr-defined]
        without.append(one_run(n))
    ask_phase.ContextGauge = gauge_module.ContextGauge  # type: ignore[attr-defined]
    a, b = min(with_gauge) / (n + 1) * 1e6, min(without) / (n + 1) * 1e6
    print(f"loop, {n} steps, best of {reps} (CPU us/step): with the gauge {a:.1f}, without {b:.1f}, adds {a - b:+.2f}")
    medians = statistics.median(with_gauge) / (n + 1) * 1e6, statistics.median(without) / (n + 1) * 1e6
    print(f"  medians: with {medians[0]:.1f}, without {medians[1]:.1f}, adds {medians[0] - medians[1]:+.2f}")
    messages: list[Any] = [UserMessage("go")]
    g = gauge_module.ContextGauge(ScriptedProvider([]), 8192)
    tools = (inc,)
    total, k = 0.0, 0
    for i in range(n):
        c = ToolCall(f"c{i}", "inc", {"i": i})
        messages += [AssistantMessage(None, (c,)), ToolMessage(c.id, "inc", str(i + 1))]
        start = time.perf_counter()
        g.measure(Request(messages, tools))
        total += time.perf_counter() - start
        k += 1
    print(
        f"ContextGauge.measure alone, conversation growing to {len(messages)} messages: {total / k * 1e6:.2f} us/call"
    )


def exact(quick: bool, reps: int) -> None:
    try:
        from agentnb.providers.hf import TransformersProvider
        from agentnb.providers.untooled import UnTooled
    except ImportError as exc:
        print(f"exact: skipped ({exc})")
        return
    if quick:
        from tests.tiny_model import build_tiny

        model, tokenizer = build_tiny()
        inner, label = TransformersProvider(model, tokenizer, max_new_tokens=16), "tiny random Llama"
    else:
        from agentnb.providers.hf.local import local_provider

        inner, label = local_provider(quiet=True, max_new_tokens=16), "SmolLM2-135M"
    provider = UnTooled(inner)
    messages: list[Any] = [UserMessage("Read the notes and say what they are about.")]
    words = 8 if quick else 60  # SmolLM2: about 2k tokens in all
    for i in range(6):  # a conversation of a few tool steps
        c = ToolCall(f"c{i}", "inc", {"i": i})
        messages += [
            AssistantMessage(None, (c,)),
            ToolMessage(c.id, "inc", f"note {i}: " + "the quick brown fox " * words),
        ]
    request = Request(messages, (inc,), "auto", {"max_new_tokens": 16})
    counted = provider.estimate_input_tokens(request)
    asyncio.run(provider.complete(request))  # load, warm the caches
    count_s, send_s = [], []
    for _ in range(reps):
        start = time.perf_counter()
        provider.estimate_input_tokens(request)
        count_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        asyncio.run(provider.complete(request))
        send_s.append(time.perf_counter() - start)
    c, s = statistics.median(count_s), statistics.median(send_s)
    print(
        f"exact ({label}, {counted} tokens, median of {reps}): count {c * 1e3:.2f} ms, "
        f"request {s * 1e3:.0f} ms: counting is {100 * c / s:.1f}% of a request"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    quick = args.quick or os.environ.get("AGENTNB_BENCH_QUICK") == "1"
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    estimated(30 if quick else 200, 3 if quick else 9)
    exact(quick, 3 if quick else 7)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
