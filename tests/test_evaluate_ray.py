"""executor="ray": a real local Ray (127.0.0.1) runs the cases; the same rows as the local executor."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentnb
from agentnb import Agent, UserError, tool
from agentnb.evaluation import called, contains, number
from agentnb.messages import UserMessage
from agentnb.testing import FunctionProvider, call

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

pytestmark = pytest.mark.slow


def _ray_processes() -> set[int]:
    names = ("raylet", "gcs_server")
    found = set()
    for p in psutil.process_iter(["name", "cmdline", "username"]):
        try:
            text = (p.info["name"] or "") + " " + " ".join(p.info["cmdline"] or [])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if any(n in text for n in names):
            found.add(p.pid)
    return found


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    before = _ray_processes()
    # The workers import this test module by name (its tools travel by reference): put it on their path.
    path = os.pathsep.join([str(Path(__file__).parent), os.getcwd(), os.environ.get("PYTHONPATH", "")])
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    ours = _ray_processes() - before
    try:
        assert ours, "Ray started no raylet / GCS process?"
        yield
    finally:
        ray.shutdown()
        left = [pid for pid in ours if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        assert not left, f"Ray processes left running: {left}"


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def model(messages: Any, tools: Any) -> Any:
    q = next(m.content for m in messages if isinstance(m, UserMessage))
    a, b = (int(x) for x in q.split(" times "))
    results = [m.content for m in messages if m.role == "tool"]
    if not results:
        return call("multiply", a=a, b=b)
    return f"{q} is {results[-1] if a != 3 else 0}"  # wrong for 3 times x


CASES = [{"input": f"{a} times {b}", "expected": str(a * b), "row": a} for a in range(1, 6) for b in (2, 7)]


def test_ray_gives_the_same_rows_as_local(cluster: None, tmp_path: Path) -> None:
    agents = {
        "m": Agent(FunctionProvider(model), tools=[multiply]),
        "plain": Agent(FunctionProvider(model), tools=[multiply]),
    }
    scorers = [number(), called("multiply")]
    local = agentnb.evaluate(agents, CASES, scorers=scorers, concurrency=4, progress=False)
    log = tmp_path / "ray.jsonl"
    remote = agentnb.evaluate(
        agents, CASES, scorers=scorers, concurrency=4, executor="ray", log=str(log), progress=False
    )
    cols = [
        "case",
        "agent",
        "input",
        "output",
        "number",
        "called_multiply",
        "passed",
        "stop_reason",
        "tool_calls",
        "model_calls",
    ]
    assert remote.table[cols].equals(local.table[cols])
    assert list(remote.table["passed"]).count(False) == 4  # 3 times 2, 3 times 7, for both agents
    assert len(log.read_text().splitlines()) == 20  # the driver wrote the log
    assert remote.run(0).output == local.run(0).output and remote.run(0).events[-1].kind == "run_finished"
    again = agentnb.evaluate(agents, CASES, scorers=scorers, executor="ray", log=str(log), progress=False)
    assert again.resumed == 20


def test_a_tool_that_cannot_travel_is_one_clear_error_before_any_case(cluster: None, tmp_path: Path) -> None:
    lock = threading.Lock()
    asked: list[Any] = []

    @tool
    def guarded(x: int) -> int:
        """Uses a lock that cannot be pickled."""
        with lock:
            return x

    def provider(messages: Any, tools: Any) -> str:
        asked.append(messages)
        return "ok"

    log = tmp_path / "never.jsonl"
    with pytest.raises(UserError, match="agent 'agent': its tool 'guarded' cannot be sent to Ray workers"):
        agentnb.evaluate(
            Agent(FunctionProvider(provider), tools=[guarded]), ["a", "b"], executor="ray", log=str(log), progress=False
        )
    assert asked == [] and (not log.exists() or log.read_text() == "")


def test_timeouts_and_failures_stay_per_case_on_ray(cluster: None) -> None:
    import asyncio

    @tool
    async def wait_forever() -> str:
        """Never returns."""
        await asyncio.sleep(3600)
        return ""

    def provider(messages: Any, tools: Any) -> Any:
        q = messages[-1].content if messages[-1].role == "user" else "done"
        if q == "hang":
            return call("wait_forever")
        if q == "fail":
            return RuntimeError("model down")
        return "fine"

    ev = agentnb.evaluate(
        Agent(FunctionProvider(provider), tools=[wait_forever]), ["hang", "fail", "ok"], executor="ray", timeout=1.0,
        scorers=[contains("fine")], progress=False,
    )  # fmt: skip
    t = ev.table.set_index("input")
    assert t.loc["hang", "stop_reason"] == "timeout" and t.loc["fail", "stop_reason"] == "error"
    assert "model down" in t.loc["fail", "error"] and t.loc["ok", "passed"]
