"""How much the live trace widget slows a fast run down.

A 100-step scripted run (100 tool calls, then an answer) is timed without a listener and
with a :class:`~agentnb.notebook.trace.TraceWidget` fed every event (its throttle renders at
most every 0.1 s). Target: with the widget, at most 1.5x the time without it.

    .venv/bin/python benchmarks/widget_overhead.py [--steps 100] [--repeat 7] [--delay 0]

``--delay`` adds a per-model-call delay (seconds), like a real model; 0 is the worst case
for the widget (a loop that does nothing but emit events).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from agentnb import Agent, tool
from agentnb.notebook.trace import TraceWidget
from agentnb.testing import ScriptedProvider, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def script(steps: int) -> list[Any]:
    return [call("add", a=i, b=1) for i in range(steps)] + ["done"]


async def one_run(steps: int, delay: float, widget: TraceWidget | None) -> tuple[float, float]:
    """Seconds until the run returned, and until the widget had rendered the end too."""
    agent = Agent(ScriptedProvider(script(steps), delay=delay), tools=[add], max_tool_calls=steps)
    start = time.perf_counter()
    result = await agent.arun("go", on_event=widget)
    took = time.perf_counter() - start
    if widget is not None:  # the final render runs on the next loop turn, after the run
        while widget.state.dirty or widget.state.header_dirty or widget.stop_button.layout.display != "none":
            await asyncio.sleep(0)
    shown = time.perf_counter() - start
    if result.tool_calls != steps or result.output != "done":
        raise RuntimeError(f"unexpected run: {result!r}")
    return took, shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()

    async def measure() -> tuple[list[float], list[float], list[float], list[int]]:
        await one_run(args.steps, args.delay, TraceWidget())  # warm-up (imports, widget classes)
        bare, traced, shown, renders = [], [], [], []
        for _ in range(args.repeat):  # interleaved, so drift in machine load hits both alike
            bare.append((await one_run(args.steps, args.delay, None))[0])
            w = TraceWidget()
            took, done = await one_run(args.steps, args.delay, w)
            traced.append(took)
            shown.append(done)
            renders.append(w.renders)
        return bare, traced, shown, renders

    bare, traced, shown, renders = asyncio.run(measure())
    b, t, s = statistics.median(bare), statistics.median(traced), statistics.median(shown)
    ms = lambda xs: f"median {statistics.median(xs) * 1000:.1f} ms, min {min(xs) * 1000:.1f} ms"  # noqa: E731
    print(f"steps={args.steps} delay={args.delay}s repeat={args.repeat}")
    print(f"without widget:                {ms(bare)}")
    print(f"with widget, run returned:     {ms(traced)}  (renders per run: {statistics.median(renders):.0f})")
    print(f"with widget, widget rendered:  {ms(shown)}")
    print(f"ratio (run):             {t / b:.2f}x median, {min(traced) / min(bare):.2f}x min (target <= 1.5x)")
    print(f"ratio (run + rendering): {s / b:.2f}x median, {min(shown) / min(bare):.2f}x min")


if __name__ == "__main__":
    main()
