"""Replay overhead (issue 38): a 1,000-step transcript replayed vs the loop with a ScriptedProvider,
and a cassette lookup at 10 and at 10,000 recorded calls.

Run: ``python benchmarks/replay_overhead.py`` (``--quick``: 200 steps, fewer repetitions).

Replay: one run of N tool-call steps (an instant model, a trivial tool) is recorded; then the
same agent runs again, once answered by a fresh ``ScriptedProvider`` (the loop's own overhead,
the baseline) and once by ``agentnb.replay(recording)``, which checks every request against the
recorded one. The two are measured in alternation, in this process, so load hits both alike.
Target: replay <= 2x the scripted loop per step.

Cassette: a cassette file of 10 and of 10,000 recorded calls; the time to answer one call from
it (the CassetteProvider's whole path: canonical form, scrubbing, hash, dict lookup), beside a
linear scan of the recorded requests (what a list without a key would cost).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

import agentnb
from agentnb import Agent, tool
from agentnb.messages import UserMessage
from agentnb.providers.base import Completion, Request
from agentnb.testing import ScriptedProvider, call
from agentnb.timetravel import Cassette, CassetteProvider
from agentnb.timetravel.canonical import canonical_request


@tool
def inc(i: int) -> int:
    """Return i + 1."""
    return i + 1


def script(n: int) -> list[object]:
    return [call("inc", i=k) for k in range(n)] + ["done"]


async def timed(agent: Agent, n: int) -> float:
    start = time.perf_counter()
    result = await agent.arun("go")
    elapsed = time.perf_counter() - start
    if result.tool_calls != n or result.output != "done":
        raise SystemExit(f"unexpected result: {result!r}")
    return elapsed / n * 1e6


def replay_rows(n: int, reps: int) -> list[tuple[str, float]]:
    recording = Agent(ScriptedProvider(script(n)), tools=[inc], max_tool_calls=n).run("go")
    scripted, replayed, built = [], [], []
    for _ in range(reps):
        scripted.append(asyncio.run(timed(Agent(ScriptedProvider(script(n)), tools=[inc], max_tool_calls=n), n)))
        start = time.perf_counter()
        provider = agentnb.replay(recording)
        built.append((time.perf_counter() - start) / n * 1e6)
        replayed.append(asyncio.run(timed(Agent(provider, tools=[inc], max_tool_calls=n), n)))
    s, r, b = statistics.median(scripted), statistics.median(replayed), statistics.median(built)
    return [
        (f"loop with a ScriptedProvider, {n} steps (baseline)", s),
        (f"loop with agentnb.replay(recording), {n} steps", r),
        ("  + building the replay from the RunResult (once per replay)", b),
        (f"  ratio replay/scripted (target <= 2.0): {r / s:.2f}; with building: {(r + b) / s:.2f}", r / s),
    ]


def request(i: int) -> Request:
    return Request([UserMessage(f"question number {i}: what is {i} + 1?")])


def cassette_with(n: int, folder: str) -> Cassette:
    path = os.path.join(folder, f"c{n}.jsonl")
    tape = Cassette(path, mode="record")
    for i in range(n):
        tape.write(canonical_request(request(i), "m"), Completion(f"{i + 1}"), (), "Bench")
    tape.close()
    return Cassette(path, mode="replay")


async def answer_all(provider: CassetteProvider, asks: list[Request]) -> float:
    """Microseconds per call answered from the cassette."""
    start = time.perf_counter()
    for r in asks:
        await provider.complete(r)
    return (time.perf_counter() - start) / len(asks) * 1e6


def lookup_rows(sizes: tuple[int, ...], probes: int) -> list[tuple[str, float]]:
    """The sizes measured in alternation (load on the machine hits each alike)."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        tapes = {n: cassette_with(n, folder) for n in sizes}
        asks = {n: [request(i * 7919 % n) for i in range(probes)] for n in sizes}
        keyed: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(7):
            for n in sizes:
                keyed[n].append(asyncio.run(answer_all(CassetteProvider(None, tapes[n]), asks[n])))
        for n in sizes:
            wanted = [canonical_request(r, None) for r in asks[n][:50]]
            start = time.perf_counter()
            for w in wanted:  # the baseline: compare with every recorded request in turn
                next(e for e in tapes[n].entries if e.request["messages"] == w["messages"])
            scan = (time.perf_counter() - start) / len(wanted) * 1e6
            rows.append((f"cassette of {n:>6} calls: answer one call (keyed lookup)", statistics.median(keyed[n])))
            rows.append((f"cassette of {n:>6} calls: linear scan of the requests (baseline)", scan))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("AGENTNB_BENCH_QUICK") == "1"
    n, reps = (200, 3) if quick else (1000, 9)
    rows = replay_rows(n, reps) + lookup_rows((10, 10_000), 200 if quick else 2000)
    width = max(len(label) for label, _ in rows)
    print(f"{'case':<{width}}  us/step or us/call")
    for label, value in rows:
        print(f"{label:<{width}}  {value:10.1f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f} (python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
