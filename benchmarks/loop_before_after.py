"""The loop's overhead before and after a change, in one run: this tree against a git revision.

Run: ``python benchmarks/loop_before_after.py 73da4b9`` (any revision; default ``HEAD~1``;
``--quick``: a smoke run against ``HEAD``).

Both trees run the same scripted agent (N tool-call steps with an instant model and a trivial
tool, as in ``loop_overhead.py``) in fresh interpreters, alternated round by round, and the
best CPU microseconds per step of each is printed. On a shared machine CPU time still moves
with the neighbours, so where valgrind is installed (``--instructions``) it also counts the
instructions each tree executes per step under callgrind: deterministic, the figure to compare
when the machine is busy.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The measured program: N steps, R runs; prints each run's CPU microseconds per step. With
#: MEASURE_FLAG set, the first run warms up and the rest run between two marker files, so that
#: callgrind counts only them.
PROGRAM = r"""
import asyncio, os, sys, time
from agentnb import Agent, tool
from agentnb.testing import ScriptedProvider, call

@tool
def inc(i: int) -> int:
    '''Return i + 1.'''
    return i + 1

async def run(n):
    agent = Agent(ScriptedProvider([call("inc", i=k) for k in range(n)] + ["done"]), tools=[inc], max_tool_calls=n)
    cpu = time.process_time()
    await agent.arun("go")
    return (time.process_time() - cpu) / n * 1e6

def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.02)

async def main():
    n, reps, flag = int(sys.argv[1]), int(sys.argv[2]), os.environ.get("MEASURE_FLAG")
    await run(n)
    if flag:
        open(flag + ".ready", "w").close()
        wait_for(flag + ".go")
    times = [await run(n) for _ in range(reps)]
    print(" ".join(f"{t:.2f}" for t in times))
    if flag:
        open(flag + ".done", "w").close()
        wait_for(flag + ".exit")

asyncio.run(main())
"""


def checkout(rev: str, into: Path) -> Path:
    """The package as it was at ``rev`` (git archive), unpacked under ``into``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "agentnb"], capture_output=True, check=True)
    with tarfile.open(fileobj=__import__("io").BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def cpu_per_step(tree: Path, script: Path, n: int, reps: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(script), str(n), str(reps)], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{tree}: {out.stderr[-2000:]}")
    return [float(x) for x in out.stdout.split()]


def instructions_per_step(tree: Path, script: Path, n: int, reps: int, work: Path) -> float:
    """Instructions per step under callgrind, counting only the measured runs."""
    flag = work / f"flag-{tree.name}"
    for suffix in (".ready", ".go", ".done", ".exit"):
        Path(f"{flag}{suffix}").unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tree), "MEASURE_FLAG": str(flag)}
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={work}/cg.%p"]
    proc = subprocess.Popen(
        [*cmd, sys.executable, str(script), str(n), str(reps)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for suffix, then in ((".ready", "on"), (".done", "off")):
            while not Path(f"{flag}{suffix}").exists():
                if proc.poll() is not None:
                    raise SystemExit(f"callgrind ended early: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
                time.sleep(0.05)
            subprocess.run(["callgrind_control", "-i", then, str(proc.pid)], capture_output=True, check=False)
            if then == "on":
                Path(f"{flag}.go").touch()
        Path(f"{flag}.exit").touch()
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    found = re.search(r"Collected : (\d+)", err)
    if not found:
        raise SystemExit(f"no instruction count from callgrind: {err[-2000:]}")
    return int(found.group(1)) / (n * reps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", nargs="?", default="HEAD~1", help="the git revision to compare with (before)")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30, help="runs per round and tree")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--instructions", action="store_true", help="also count instructions (valgrind)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: few short runs, against HEAD")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.runs, args.rounds = 20, 3, 1
        args.rev = "HEAD" if args.rev == "HEAD~1" else args.rev
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        script = work / "measure.py"
        script.write_text(PROGRAM)
        trees = {f"before ({args.rev})": checkout(args.rev, work / "before"), "after (this tree)": ROOT}
        best = dict.fromkeys(trees, float("inf"))
        for round_ in range(args.rounds):  # ABBA: neither tree always goes first
            for name, tree in list(trees.items())[:: 1 if round_ % 2 == 0 else -1]:
                best[name] = min(best[name], *cpu_per_step(tree, script, args.steps, args.runs))
        print(f"load average {os.getloadavg()[0]:.2f}; N={args.steps} steps, {args.rounds} rounds x {args.runs} runs")
        print(f"{'tree':<32} {'best CPU us/step':>16} {'instructions/step':>18}")
        for name, tree in trees.items():
            count = f"{instructions_per_step(tree, script, args.steps, 5, work):18,.0f}" if args.instructions else ""
            print(f"{name:<32} {best[name]:16.1f} {count}")


if __name__ == "__main__":
    main()
