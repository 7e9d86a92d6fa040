"""``run_python`` in the live kernel (issue 46 item 2): what it adds to ``exec`` of the same code.

Run: ``python benchmarks/kernel_code.py`` (``--quick``: fewer repetitions).

Measured in one run, side by side, best and median of many calls:

* ``exec(code, ns)`` of the code (compiled each time, as a cell is) -- the baseline;
* ``run_python`` as the agent's loop calls it (the tool's coroutine on an event loop: its thread,
  the output capture, the names-changed map, the result's text) -- target: adds <= 1 ms;
* both in a namespace of 10 variables and of 10,000 (the names-changed map reads every name).

Then how long a stop takes: code in a Python loop (stopped between bytecodes, at once) and code
blocked in ``time.sleep`` (a C call: ``PyThreadState_SetAsyncExc`` cannot interrupt it; the stop
gives up after ``STOP_WAIT`` seconds and the code ends when the call returns).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from agentnb.kernel.code import STOP_WAIT, CodeRunner
from agentnb.kernel.run_tool import run_python_tool
from agentnb.tools import ToolContext

CODES = {
    "assignment": "x = 1 + 1",
    "loop, print, value": "total = 0\nfor i in range(1000):\n    total += i\nprint(total)\ntotal",
}


def timings(fn: Callable[[], Any], reps: int) -> tuple[float, float]:
    """(best, median) of ``reps`` calls, in microseconds."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1e6, statistics.median(times) * 1e6


def tool_timings(ns: dict[str, Any], code: str, reps: int) -> tuple[float, float]:
    """The tool's coroutine, awaited on one event loop as the loop awaits it."""
    run_python = run_python_tool(ns, approval=False).fn
    assert run_python is not None
    times: list[float] = []

    async def main() -> None:
        for _ in range(reps):
            start = time.perf_counter()
            await run_python(code, ToolContext("c", "run_python", 0))
            times.append(time.perf_counter() - start)

    asyncio.run(main())
    return min(times) * 1e6, statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    quick = args.quick or os.environ.get("AGENTNB_BENCH_QUICK") == "1"
    reps = 50 if quick else 1000
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {reps} calls each; us (best / median)")
    print(f"{'code':<20} {'variables':>9} {'exec':>17} {'run_python':>19} {'adds (median)':>14}")
    for n_vars in (10, 10_000):
        for label, code in CODES.items():
            ns: dict[str, Any] = {f"v{i}": i for i in range(n_vars)}
            with contextlib.redirect_stdout(io.StringIO()):  # the tool captures its output too
                base = timings(lambda code=code, ns=ns: exec(code, ns), reps)
            tool = tool_timings(ns, code, reps)
            adds = (tool[1] - base[1]) / 1000
            print(
                f"{label:<20} {n_vars:>9,} {base[0]:>8.1f} / {base[1]:>6.1f} {tool[0]:>9.1f} / {tool[1]:>7.1f}"
                f" {adds:>11.3f} ms"
            )
    runner = CodeRunner({})
    for label, code in (("a Python loop", "while True:\n    pass"), ("time.sleep(3)", "import time\ntime.sleep(3)")):
        start = time.perf_counter()
        result = runner.run(code, timeout=0.1)
        took = time.perf_counter() - start - 0.1
        ended = "ended" if "could not be interrupted" not in (result.stopped or "") else "still blocked"
        print(f"stop after a 0.1 s timeout, {label}: {took * 1000:.1f} ms ({ended}; STOP_WAIT {STOP_WAIT:g} s)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
