"""The store of runs (issue 48): what keeping runs costs a run, and how fast runs() opens and filters.

Run: ``python benchmarks/runs_store.py`` (``--quick``: fewer runs, a 2,000-run store).

Cost on the loop's path: one run of 10 tool-call steps (an instant model, a tool returning 2 kB
of text) is timed with ``keep_runs`` off and on, in alternating blocks in this one process (so
load hits both alike); the difference of the medians is what keeping costs per run, the
background writer's share of the CPU included. Target: <= 2 ms per run of 10 steps.

Finding: a store of 100,000 runs (10 agents, one run in ten labelled); ``agentnb.runs(path)``
opened (its file checked, its runs counted) and the view's first page (the 50 newest rows)
read; then a filter (an agent, a label, a search for a word of the prompt) counted and its first
page read; then a filter on a tool the run called. Targets: open <= 1 s, filter <= 200 ms.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time

import agentnb
from agentnb import Agent, tool
from agentnb.runstore.store import RunStore
from agentnb.testing import ScriptedProvider, call

PAGE = "lorem ipsum dolor sit amet " * 80  # ~2 kB, what a small tool's result holds


@tool
def lookup(i: int) -> str:
    """Look a page up."""
    return f"{i}: {PAGE}"


def ten_steps() -> Agent:
    return Agent(ScriptedProvider([call("lookup", i=k) for k in range(10)] + ["done"]), tools=[lookup], name="bench")


def run_once() -> float:
    agent = ten_steps()  # built outside the timing
    start = time.perf_counter()
    result = agent.run("look ten pages up")
    took = time.perf_counter() - start
    if result.tool_calls != 10:
        raise SystemExit(f"unexpected result: {result!r}")
    return took * 1e3


def loop_cost(folder: str, blocks: int, per_block: int) -> dict[str, float]:
    """Median run time without and with the store (the loop's path), and the whole cost per run:
    the "with" block's runs plus the wait for the writer to empty its queue, minus the "without"
    block's runs, per run (the writer's own work, had nothing overlapped it)."""
    path = os.path.join(folder, "cost.sqlite")
    off: list[float] = []
    on: list[float] = []
    whole: list[float] = []
    for _ in range(3):  # warm up both paths
        run_once()
    for _ in range(blocks):
        these_off = [run_once() for _ in range(per_block)]
        keeper = agentnb.keep_runs(path)
        these_on = [run_once() for _ in range(per_block)]
        start = time.perf_counter()
        keeper.flush()
        wait = (time.perf_counter() - start) * 1e3
        agentnb.keep_runs(None)
        off += these_off
        on += these_on
        whole.append((sum(these_on) + wait - sum(these_off)) / per_block)
    return {
        "off": statistics.median(off),
        "on": statistics.median(on),
        "whole": statistics.median(whole),
        "kept": len(agentnb.runs(path)),
    }


def write_lag(folder: str, n: int) -> tuple[float, float]:
    """(median, max) ms from a run's end until it is committed, runs 20 ms apart (flush() timed
    right after each run: an upper bound, since it waits for a round trip through the queue)."""
    keeper = agentnb.keep_runs(os.path.join(folder, "lag.sqlite"))
    assert keeper is not None
    lags = []
    for _ in range(n):
        run_once()
        start = time.perf_counter()
        keeper.flush()
        lags.append((time.perf_counter() - start) * 1e3)
        time.sleep(0.02)  # a pause between runs, as a person or a model leaves one
    agentnb.keep_runs(None)
    return statistics.median(lags), max(lags)


def fill(path: str, n: int) -> float:
    """A store of ``n`` runs: each a copy of one real run with its own id, prompt, agent and label."""
    base = Agent(ScriptedProvider([call("lookup", i=1), "done"]), tools=[lookup]).run("x")
    store = RunStore(path)
    start = time.perf_counter()
    for first in range(0, n, 2000):
        batch = []
        for i in range(first, min(n, first + 2000)):
            head = dataclasses.replace(
                base.events[0],
                run_id=f"{i:012x}",
                prompt=f"question {i} about topic {i % 97}",
                agent_name=f"agent-{i % 10}",
            )
            batch.append((dataclasses.replace(base, events=(head, *base.events[1:]), output=f"answer {i}"), 1e9 + i))
        store.save(batch)
    labels = [(f"{i:012x}", {"good": i % 20 == 0, "expected": f"answer {i}", "note": None, "at": "2026-12-07T10:00:00+00:00"}, None)
              for i in range(0, n, 10)]  # fmt: skip
    store.save([], labels)
    store.close()
    return n / (time.perf_counter() - start)


def timed(fn: object, reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def finding(path: str, n: int, reps: int) -> list[tuple[str, float]]:
    def open_page() -> None:
        runs = agentnb.runs(path)
        runs.rows(limit=50)

    def filtered() -> None:
        sel = agentnb.runs(path).where(agent="agent-3", label="bad").search(f"question {n - 7}")
        len(sel), sel.rows(limit=50)

    def by_tool() -> None:
        sel = agentnb.runs(path).where(tool="lookup", agent="agent-5")
        len(sel), sel.rows(limit=50)

    fresh = (
        "import time; t = time.perf_counter(); import agentnb; r = agentnb.runs(sys.argv[1]); r.rows(limit=50); "
        "print((time.perf_counter() - t) * 1e3)"
    )
    cold = [
        float(subprocess.run([sys.executable, "-c", f"import sys; {fresh}", path], capture_output=True, text=True,
                             check=True).stdout)
        for _ in range(reps)
    ]  # fmt: skip
    rows = [
        ("a new process: import agentnb, runs(path), 50 rows", statistics.median(cold)),
        ("runs(path) opened + first 50 rows", timed(open_page, reps)),
        ("filter agent+label+search: count + 50 rows", timed(filtered, reps)),
        ("filter agent+tool: count + 50 rows", timed(by_tool, reps)),
        (f".table of all {n:,} runs (a DataFrame)", timed(lambda: agentnb.runs(path).table, 1)),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, a 2,000-run store")
    quick = parser.parse_args().quick or os.environ.get("AGENTNB_BENCH_QUICK") == "1"
    blocks, per_block, n, reps = (3, 10, 2_000, 3) if quick else (10, 30, 100_000, 5)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f}")
    import pandas  # noqa: F401  (imported once here: .table's time is then its own)

    with tempfile.TemporaryDirectory() as folder:
        cost = loop_cost(folder, blocks, per_block)
        print(f"run of 10 steps, median of {blocks * per_block}: without the store {cost['off']:.2f} ms, "
              f"with it {cost['on']:.2f} ms ({cost['kept']:.0f} runs kept)")  # fmt: skip
        print(
            f"keeping runs costs {cost['on'] - cost['off']:+.2f} ms per run of 10 steps on the loop's path (target <= 2 ms)"
        )
        print(
            f"the writer's own work, had it not overlapped the runs: {cost['whole']:.2f} ms per run (median of {blocks} blocks)"
        )
        median_lag, max_lag = write_lag(folder, 10 if quick else 100)
        print(f"a run is committed {median_lag:.1f} ms after it ends (median; max {max_lag:.1f} ms)")
        path = os.path.join(folder, "many.sqlite")
        rate = fill(path, n)
        size = os.path.getsize(path) / 2**20
        print(f"store of {n:,} runs written at {rate:,.0f} runs/s, {size:.0f} MiB")
        for label, ms in finding(path, n, reps):
            print(f"  {label:<48} {ms:8.1f} ms")
    print(f"load average at end {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "")


if __name__ == "__main__":
    main()
