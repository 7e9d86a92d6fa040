"""executor="ray": a real local Ray (127.0.0.1) runs the cases; the same rows as the local executor."""

from __future__ import annotations

import os
import signal
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


# --- a worker that dies (issue 39, item 9) -----------------------------------------------------


def _worker_pids() -> set[int]:
    """Our Ray cluster's evaluation workers: the actors under this process's raylet."""
    found = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if " ".join(p.cmdline()).startswith("ray::_Worker"):
                found.add(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


class KillAWorker:
    """A progress view that kills one worker (SIGKILL) once ``after`` rows are done, and notes
    the workers alive afterwards."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.done = 0
        self.killed: int | None = None
        self.before: set[int] = set()
        self.seen: set[int] = set()

    def start(self, ev: Any, total: int, stopper: Any) -> None:
        pass

    def row(self, row: dict[str, Any]) -> None:
        self.done += 1
        if self.done == self.after:
            self.before = _worker_pids()
            self.killed = sorted(self.before)[0]
            os.kill(self.killed, signal.SIGKILL)
        elif self.killed is not None:
            self.seen |= _worker_pids()

    def finish(self, ev: Any) -> None:
        pass


def slow_ok(messages: Any, tools: Any) -> str:
    return "ok"


@tool
def explode() -> str:
    """Ends the worker's process (a crash that no exception handler sees)."""
    os._exit(1)


def poisoned(messages: Any, tools: Any) -> Any:
    q = next(m.content for m in messages if isinstance(m, UserMessage))
    if q == "poison" and not any(m.role == "tool" for m in messages):
        return call("explode")
    return "ok"


def test_a_killed_worker_is_replaced_and_its_cases_run_again(cluster: None, tmp_path: Path) -> None:
    killer = KillAWorker(after=6)
    cases = [f"case {i}" for i in range(40)]
    log = tmp_path / "killed.jsonl"
    ev = agentnb.evaluate(
        Agent(FunctionProvider(slow_ok, delay=0.2)), cases, scorers=[contains("ok")], concurrency=6,
        executor="ray", ray_workers=2, log=str(log), progress=[killer],
    )  # fmt: skip
    assert killer.killed is not None and killer.killed not in _worker_pids()
    # The cases the dead worker held were sent again: every case passed, none is an error.
    assert len(ev.rows) == 40 and all(r["passed"] for r in ev.rows), ev.failures()[["input", "error"]]
    assert not any(r.get("lost") for r in ev.rows)
    assert killer.seen - killer.before, "no worker was started in place of the killed one"


def test_a_case_that_kills_every_worker_is_an_infrastructure_error_that_a_resume_runs_again(
    cluster: None, tmp_path: Path
) -> None:
    log = tmp_path / "poison.jsonl"
    agent = Agent(FunctionProvider(poisoned), tools=[explode])
    cases = ["fine 1", "poison", "fine 2", "fine 3"]
    ev = agentnb.evaluate(agent, cases, scorers=[contains("ok")], executor="ray", ray_workers=2, log=str(log),
                          progress=False)  # fmt: skip
    rows = ev.table.set_index("input")
    assert rows.loc[["fine 1", "fine 2", "fine 3"], "passed"].all()
    assert not rows.loc["poison", "passed"] and "infrastructure error, not a verdict" in rows.loc["poison", "error"]
    assert [r.get("lost", False) for r in ev.rows if r["input"] == "poison"] == [True]
    again = agentnb.evaluate(agent, cases, scorers=[contains("ok")], executor="ray", ray_workers=2, log=str(log),
                             progress=False)  # fmt: skip
    assert again.resumed == 3  # the lost case is not done: it ran again
    assert [r["input"] for r in again.rows if r not in ev.rows][-1:] == ["poison"]
    assert len(log.read_text().splitlines()) == 5
