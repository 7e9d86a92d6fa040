"""The kernel's read tools (issue 46 item 1): ``describe`` and ``list_variables`` against their targets.

Run: ``python benchmarks/kernel_read.py`` (``--quick``: a 1,000,000-row frame instead of
10,000,000, fewer repetitions).

Measured in one run, each beside a bare baseline of what a person would type:

* ``describe`` of a 10,000,000 x 8 DataFrame (floats with NaNs, integers, a categorical, a
  column of strings): target <= 100 ms; beside ``df.info()`` and ``df.describe()``. Its peak of
  new memory (``tracemalloc``, which sees numpy's buffers) against the frame's size shows it
  does not copy the frame.
* ``describe`` of a 1,000-row frame of the same columns: target <= 10 ms; beside ``df.info()``
  and ``df.describe()``.
* ``list_variables`` over 10,000 variables: target <= 50 ms; beside a bare listing (name and
  type of each); and the definition-order hook's cost per cell over the same namespace.
"""

from __future__ import annotations

import argparse
import io
import os
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from agentnb import kernel_tools
from agentnb.kernel.history import DefinitionOrder


def frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    df = pd.DataFrame({f"x{i}": rng.random(rows) for i in range(4)})
    df.loc[::7, "x0"] = np.nan
    df["n"] = rng.integers(0, 100, rows)
    df["id"] = np.arange(rows)
    df["kind"] = pd.Categorical.from_codes(rng.integers(0, 3, rows), ["a", "b", "c"])
    df["city"] = np.array(["Oslo", "Rome", "Lima", None], dtype=object)[rng.integers(0, 4, rows)]
    return df


def best_ms(fn: Callable[[], Any], reps: int) -> float:
    """The fastest of ``reps`` runs, in ms (the least disturbed by the machine's other work)."""
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def peak_mb(fn: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def namespace(n: int) -> dict[str, Any]:
    kinds = [lambda i: i, lambda i: f"text {i}", lambda i: [i] * 3, lambda i: {"k": i}, lambda i: float(i)]
    ns: dict[str, Any] = {f"v{i}": kinds[i % len(kinds)](i) for i in range(n)}
    ns["arr"] = np.zeros((512, 512), dtype="float32")
    ns["small"] = frame(10)
    return ns


def row(label: str, ms: float, target: float | None = None) -> None:
    verdict = "" if target is None else (f"  target <= {target:g} ms: " + ("met" if ms <= target else "MISSED"))
    print(f"  {label:<52} {ms:9.2f} ms{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    quick = os.environ.get("AGENTNB_BENCH_QUICK") == "1"
    parser.add_argument("--quick", action="store_true", default=quick, help="a smaller frame, fewer runs")
    args = parser.parse_args()
    rows, reps = (1_000_000, 3) if args.quick else (10_000_000, 7)

    big, small = frame(rows), frame(1_000)
    describe = {t.name: t for t in kernel_tools("read", namespace={"df": big, "small": small})}["describe"]
    sink = io.StringIO()
    print(
        f"describe() of a {rows:,} x {big.shape[1]} DataFrame ({big.memory_usage().sum() / 2**20:,.0f} MB of numbers):"
    )
    row("describe('df')", best_ms(lambda: describe(name="df"), reps), 100 if rows >= 10_000_000 else None)
    row("baseline: df.info()", best_ms(lambda: big.info(buf=sink), reps))
    row("baseline: df.describe() (once)", best_ms(big.describe, 1))
    peak = peak_mb(lambda: describe(name="df"))
    print(
        f"  peak new memory during describe: {peak:.1f} MB (the frame: {big.memory_usage(deep=False).sum() / 2**20:,.0f} MB)"
    )

    print("describe() of a 1,000-row DataFrame:")
    row("describe('small')", best_ms(lambda: describe(name="small"), reps * 5), 10)
    row("baseline: df.info()", best_ms(lambda: small.info(buf=sink), reps * 5))
    row("baseline: df.describe()", best_ms(small.describe, reps * 5))

    ns = namespace(10_000)
    listing = {t.name: t for t in kernel_tools("read", namespace=ns)}["list_variables"]
    print(f"list_variables() over {len(ns):,} variables:")
    row("list_variables()", best_ms(listing, reps * 3), 50)
    row(
        "baseline: name and type of each",
        best_ms(lambda: [f"{k}: {type(v).__name__}" for k, v in ns.items()], reps * 3),
    )
    order = DefinitionOrder(ns)
    row("definition-order hook, per cell (post_run_cell)", best_ms(order.update, reps * 3))
    print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    print(f"each figure is the best of its runs ({reps} to {reps * 5}), the least disturbed by other work")


if __name__ == "__main__":
    main()
