"""The sandbox kernel (issue 46 item 3): ``run_python`` in a separate process, against its targets.

Run: ``python benchmarks/kernel_sandbox.py`` (``--quick``: fewer repetitions, a 10 MB frame).

Measured in one run, each beside a bare baseline (jupyter_client's ``KernelManager`` and a
blocking client, ``python -m ipykernel_launcher``, nothing of agentnb's):

* the first ``run_python`` from nothing (tools made, kernel started, helper installed, the
  call answered): target <= 3 s; beside a bare kernel's start and first ``execute``;
* a later trivial call (``x = 1``): target <= 30 ms; beside a bare ``execute_interactive``;
* sharing a 100 MB DataFrame: a sandbox's start with ``share=["df"]`` less its start with
  nothing shared: target <= 2 s; and the copy alone (pickle, file, load in the sandbox).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from agentnb import kernel_tools


def seconds(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def best_ms(fn: Callable[[], Any], reps: int) -> float:
    """The fastest of ``reps`` runs, in ms (the least disturbed by the machine's other work)."""
    return min(seconds(fn) for _ in range(reps)) * 1000


def row(label: str, ms: float, target: float | None = None) -> None:
    verdict = "" if target is None else (f"  target <= {target:g} ms: " + ("met" if ms <= target else "MISSED"))
    print(f"  {label:<58} {ms:9.1f} ms{verdict}")


def bare(reps: int) -> tuple[float, float]:
    """A bare kernel: start + first execute (s), then the best trivial execute (ms)."""
    from jupyter_client import KernelManager

    km = KernelManager(kernel_name="python3")
    kc: Any = None
    try:

        def start() -> None:
            nonlocal kc
            km.start_kernel()
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            kc.execute_interactive("1", timeout=60, output_hook=lambda m: None)

        first = seconds(start)
        call = best_ms(lambda: kc.execute_interactive("x = 1", timeout=60, output_hook=lambda m: None), reps)
        return first, call
    finally:
        if kc is not None:
            kc.stop_channels()
        km.shutdown_kernel(now=True)


def frame(mb: int) -> pd.DataFrame:
    rows = mb * 2**20 // (8 * 4)
    rng = np.random.default_rng(1)
    return pd.DataFrame({f"x{i}": rng.random(rows) for i in range(4)})


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    quick = os.environ.get("AGENTNB_BENCH_QUICK") == "1"
    parser.add_argument("--quick", action="store_true", default=quick, help="fewer repetitions")
    args = parser.parse_args()
    reps, starts, mb = (10, 1, 10) if args.quick else (100, 3, 100)

    bare_first, bare_call = bare(reps) if not args.quick else (float("nan"), float("nan"))
    ns: dict[str, Any] = {"df": frame(mb)}
    size = ns["df"].memory_usage().sum() / 2**20

    firsts, plain_starts, shared_starts, copies, calls = [], [], [], [], []
    for _ in range(starts):
        tools = kernel_tools("sandbox", namespace=ns, approval=False)
        firsts.append(seconds(lambda: tools.sandbox.run("1")))  # noqa: B023 (called at once)
        calls.append(best_ms(lambda: tools.sandbox.run("x = 1"), reps))  # noqa: B023
        plain_starts.append(seconds(tools.restart) if not args.quick else min(firsts))
        tools.shutdown()
        shared = kernel_tools("sandbox", namespace=ns, share=["df"], approval=False)
        shared_starts.append(seconds(shared.restart))
        process = shared.sandbox.process
        copies.append(seconds(lambda: shared.sandbox._seed(process)))  # noqa: B023 (the copy alone, again)
        assert shared.sandbox.run("len(df)").value == str(len(ns["df"]))
        shared.shutdown()
    if args.quick:
        print("(--quick: a 10 MB frame, one start of each, no baselines, the first call's start as the plain one)")

    print(f"the sandbox's first run_python, from nothing (best of {starts}):")
    row("kernel_tools('sandbox') + first run_python('1')", min(firsts) * 1000, 3000)
    row("baseline: bare KernelManager start + first execute", bare_first * 1000)
    print(f"a later trivial run_python ('x = 1'), best of {reps}:")
    row("run_python('x = 1')", min(calls), 30)
    row("baseline: bare execute_interactive('x = 1')", bare_call)
    print(f"sharing a {size:,.0f} MB DataFrame (best of {starts}):")
    share_cost = min(shared_starts) - min(plain_starts)
    row("start with share=['df'] less start with nothing shared", share_cost * 1000, 2000 if mb >= 100 else None)
    row("the copy alone (pickle, file, load in the sandbox)", min(copies) * 1000, 2000 if mb >= 100 else None)
    row("start with nothing shared (restart)", min(plain_starts) * 1000)
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
