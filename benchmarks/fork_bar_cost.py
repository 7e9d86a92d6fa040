"""What the fork bar (issue 38: Fork from here under a finished trace) costs each displayed run.

In a real Jupyter kernel (started here with jupyter_client, as a notebook's), a cell displays
``--runs`` finished runs the quickstart's way (``trace = TraceWidget(); agent.run(..., on_event=
trace)``: shown live at the start, swapped for static HTML at the end), each a scripted run of
``--steps`` tool calls and an answer. It is timed with the fork bar (as shipped: the bar's
widgets, the result handed to the trace, the Fork… button, one ToggleButtons for all steps)
and without it (the bar's display hook and the hand-over switched off: today's main), in
alternating rounds in the same kernel, so load hits both alike. Printed: ms per displayed run,
the median of the rounds, for each, and the difference.

    .venv/bin/python benchmarks/fork_bar_cost.py [--runs 50] [--rounds 5] [--steps 2] [--quick]
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import time
from pathlib import Path
from typing import Any

SETUP = """\
import gc, time
from agentnb import Agent, tool
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call

@tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b

shipped = (TraceWidget._after_display, TraceWidget.take_run_result)

def timed(bar, runs, steps):
    if bar:
        TraceWidget._after_display, TraceWidget.take_run_result = shipped
    else:  # main before issue 38's bar: no bar displayed, no result handed to the trace
        TraceWidget._after_display, TraceWidget.take_run_result = (lambda self: None), None
    gc.collect()
    start = time.perf_counter()
    for i in range(runs):
        model = ScriptedProvider([call("add", a=j, b=1) for j in range(steps)] + ["done"])
        trace = TraceWidget()
        Agent(model, tools=[add], max_tool_calls=steps).run("go", on_event=trace)
        while trace.stop_button.layout.display != "none":  # the swap to static HTML, on the run's loop
            time.sleep(0.0002)
    took = (time.perf_counter() - start) / runs * 1000
    TraceWidget._after_display, TraceWidget.take_run_result = shipped
    return took
"""


def _run(kc: Any, code: str, timeout: float = 600) -> str:
    """Execute ``code``; its printed output (raises on an error)."""
    msg_id = kc.execute(code)
    out: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        if kind == "stream":
            out.append(msg["content"]["text"])
        elif kind == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)
    raise TimeoutError(code[:80])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 runs, 1 round")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.rounds = 5, 1
    import jupyter_client

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    try:
        _run(kc, SETUP)
        _run(kc, "timed(True, 3, 1); timed(False, 3, 1)")  # warm up: imports, first widgets
        with_bar, without = [], []
        for _ in range(args.rounds):
            for bar, into in ((False, without), (True, with_bar)):
                into.append(float(_run(kc, f"print(timed({bar}, {args.runs}, {args.steps}))")))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    a, b = statistics.median(without), statistics.median(with_bar)
    print(f"{args.runs} displayed runs of {args.steps} tool calls + an answer, {args.rounds} rounds, in a kernel")
    print(f"  without the fork bar (baseline): {a:7.2f} ms per run  (rounds: {', '.join(f'{x:.1f}' for x in without)})")
    print(
        f"  with the fork bar:               {b:7.2f} ms per run  (rounds: {', '.join(f'{x:.1f}' for x in with_bar)})"
    )
    print(f"  cost of the bar: {b - a:+.2f} ms per displayed run ({b / a:.2f}x)")


if __name__ == "__main__":
    main()
