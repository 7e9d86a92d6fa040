"""The store of runs across processes: two kernels writing one file at once, and a kernel killed
mid-write (SIGKILL) leaving the store intact, with every run it had written."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import agentnb
from agentnb import Agent
from agentnb.runstore.query import Runs
from agentnb.testing import ScriptedProvider

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

#: A process that keeps its runs in argv[1]: argv[2] runs (-1: until killed), each with a large
#: tool result (so that writes take a while), printing each run's id, and "flushed N" each time
#: the first N runs are known to be written.
WRITER = """
import os, sys
import agentnb
from agentnb import Agent, tool
from agentnb.testing import ScriptedProvider, call

path, n, tag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
keeper = agentnb.keep_runs(path)

@tool
def fetch(i: int) -> str:
    '''Fetch a page.'''
    return os.urandom(20_000).hex()

i = 0
while n < 0 or i < n:
    model = ScriptedProvider([call("fetch", i=i), f"{tag} answer {i}"])
    r = Agent(model, tools=[fetch], name=tag).run(f"{tag} question {i}")
    print("ran", r.run_id, flush=True)
    i += 1
    if i % 10 == 0:
        keeper.flush()
        print("flushed", i, flush=True)
"""


def _writer(path: Path, n: int, tag: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(n), tag], stdout=subprocess.PIPE, text=True, env=env
    )


def _intact(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_two_processes_write_one_new_store_at_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"  # not there yet: both processes create it at once
    writers = [_writer(path, 20, tag) for tag in ("one", "two")]
    outputs = [w.communicate(timeout=300)[0] for w in writers]
    assert [w.returncode for w in writers] == [0, 0]
    ids = {line.split()[1] for out in outputs for line in out.splitlines() if line.startswith("ran ")}
    _intact(path)
    kept = Runs(path)
    assert len(ids) == 40 and {r["id"] for r in kept.rows()} == ids  # every run of both, once
    assert len(kept.where(agent="one")) == len(kept.where(agent="two")) == 20
    assert sorted(r.output for r in kept.where(agent="two"))[:2] == ["two answer 0", "two answer 1"]


def test_a_writer_killed_mid_write_leaves_the_store_intact(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    writer = _writer(path, -1, "doomed")
    assert writer.stdout is not None
    ran: list[str] = []
    written = 0
    try:
        for line in writer.stdout:
            word, value = line.split()
            if word == "ran":
                ran.append(value)
            else:
                written = int(value)
                if written >= 20:  # runs go on: the writer thread is busy when the kill comes
                    break
        for line in writer.stdout:  # a few more runs, not flushed
            ran.append(line.split()[1])
            if len(ran) >= written + 3:
                break
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait(timeout=60)
    ran += [line.split()[1] for line in writer.stdout.read().splitlines() if line.startswith("ran ")]
    _intact(path)
    kept = {r["id"] for r in Runs(path).rows()}
    assert set(ran[:written]) <= kept  # every run known to be written is there
    assert len(kept - set(ran)) <= 1  # and only runs that ended (the last may not have printed)
    # and the store goes on: another process keeps runs in it
    agentnb.keep_runs(path)
    try:
        after = Agent(ScriptedProvider(["after the kill"])).run("again")
        assert agentnb.runs().get(after.run_id).output == "after the kill"
    finally:
        agentnb.keep_runs(None)
    _intact(path)
