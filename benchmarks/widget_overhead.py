"""How much the live trace widget slows a fast run down.

A 100-step scripted run (100 tool calls, then an answer) is timed without a listener and
with a :class:`~agentnb.notebook.trace.widget.TraceWidget` fed every event (its throttle renders at
most every 0.1 s). Target: with the widget, at most 1.5x the time without it.

Where the time goes is printed too: building the widget (before the run, not in the ratio),
and per event, the state's fold (``TraceState.add``) and the widget's whole ``handle``, from
the same run's events replayed with no loop. Each timed run starts after a full garbage
collection, so one run's garbage (a widget's thousands of traitlets objects) is not collected
inside the next run's timing.

    .venv/bin/python benchmarks/widget_overhead.py [--steps 100] [--repeat 7] [--delay 0]

``--delay`` adds a per-model-call delay (seconds), like a real model; 0 is the worst case
for the widget (a loop that does nothing but emit events).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import time
from typing import Any

from agentnb import Agent, tool
from agentnb.notebook.trace.state import TraceState
from agentnb.notebook.trace.widget import TraceWidget
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
    gc.collect()
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


def where_it_goes(steps: int, repeat: int) -> tuple[float, float, float, int]:
    """Median ms to build a widget, and us per event for the fold and the widget's handle."""
    events: list[Any] = []
    Agent(ScriptedProvider(script(steps)), tools=[add], max_tool_calls=steps).run("go", on_event=events.append)
    events = events[:-1]  # without run_finished: its final render comes after the run
    build, fold, handle = [], [], []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        w = TraceWidget()
        build.append(time.perf_counter() - start)
        state = TraceState()
        gc.collect()
        start = time.perf_counter()
        for e in events:
            state.add(e, 0.0)
        fold.append(time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        for e in events:
            w.handle(e)
        handle.append(time.perf_counter() - start)
    per = 1e6 / len(events)
    med = statistics.median
    return med(build) * 1e3, med(fold) * per, med(handle) * per, len(events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("AGENTNB_BENCH_QUICK") == "1",
        help="a smoke run in seconds (also AGENTNB_BENCH_QUICK=1): 20 steps, 2 repeats",
    )
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeat = 20, 2

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
    build, fold, handle = where_it_goes(args.steps, args.repeat)[:3]
    events = where_it_goes(args.steps, 1)[3]
    print(f"where it goes: building the widget {build:.1f} ms (before the run, not in the ratio);")
    print(f"  per event ({events} per run): state fold {fold:.2f} us, whole widget handle {handle:.2f} us")
    print(f"  the bare run spends {b / events * 1e6:.2f} us per event; (load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
