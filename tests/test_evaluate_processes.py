"""evaluate against real processes: the scripted OpenAI-compatible server, and kill -9 mid-run."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentnb
from agentnb import Agent
from agentnb.evaluation import contains
from agentnb.providers import OpenAIProvider
from agentnb.testing import FunctionProvider
from tests.server_process import free_port, running

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "agentnb.testing.server", "--port", str(port), "--default-text", "The answer is ok."]
    with running(cmd, f"http://127.0.0.1:{port}/v1", timeout=60) as url:
        yield url


def test_many_cases_through_a_server_process_at_high_concurrency(server: str, tmp_path: Path) -> None:
    before = len(json.load(urllib.request.urlopen(server.removesuffix("/v1") + "/_requests")))
    cases = [{"input": f"question {i}", "expected": "ok", "group": i % 3} for i in range(60)]
    agent = Agent(OpenAIProvider("scripted", base_url=server))
    ev = agentnb.evaluate(
        agent, cases, scorers=[contains()], concurrency=30, log=str(tmp_path / "l.jsonl"), progress=False
    )
    assert len(ev.rows) == 60 and all(ev.table["passed"])
    assert ev.summary().iloc[0]["errors"] == 0 and ev.table["input_tokens"].min() > 0
    seen = json.load(urllib.request.urlopen(server.removesuffix("/v1") + "/_requests"))[before:]
    asked = sorted(r["body"]["messages"][-1]["content"] for r in seen)
    assert asked == sorted(c["input"] for c in cases)  # each case asked exactly once


CHILD = """
import asyncio, sys
import agentnb
from agentnb import Agent
from agentnb.testing import FunctionProvider

async def slow(messages, tools):
    await asyncio.sleep(0.03)
    return "answer to " + messages[-1].content

cases = [{"input": f"q{i}", "id": f"case-{i}"} for i in range(%(n)d)]
agentnb.evaluate(Agent(FunctionProvider(slow)), cases, log=sys.argv[1], concurrency=6, progress=False)
print("finished")
"""


def test_kill_9_at_a_random_point_then_resume_runs_every_case_exactly_once(tmp_path: Path) -> None:
    n = 300
    log = tmp_path / "runs.jsonl"
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD % {"n": n}))
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, str(script), str(log)], env=env, start_new_session=True)
    target = random.Random().randint(5, n // 2)
    try:
        deadline = time.monotonic() + 120
        while (not log.exists() or log.read_bytes().count(b"\n") < target) and proc.poll() is None:
            assert time.monotonic() < deadline, "the child logged too slowly"
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed mid-run, not finished
    done_before = log.read_bytes().count(b"\n")
    assert target <= done_before < n

    ran: list[str] = []

    def answer(messages, tools):  # type: ignore[no-untyped-def]
        ran.append(messages[-1].content)
        return "answer to " + messages[-1].content

    cases = [{"input": f"q{i}", "id": f"case-{i}"} for i in range(n)]
    ev = agentnb.evaluate(Agent(FunctionProvider(answer)), cases, log=str(log), concurrency=6, progress=False)
    keys = []
    for line in log.read_text().splitlines():
        try:
            keys.append(json.loads(line)["row"]["key"])
        except ValueError:  # the torn line the kill left (skipped with a warning on resume)
            pass
    counts = Counter(keys)
    assert len(counts) == n and set(counts.values()) == {1}, "every case exactly once in the log"
    assert len(ran) == n - ev.resumed and ev.resumed == done_before
    assert sorted(r["output"] for r in ev.rows) == sorted(f"answer to q{i}" for i in range(n))
