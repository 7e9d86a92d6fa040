"""executor="processes": forked worker processes run the cases; the rows are the local executor's.

Real processes throughout: the workers are forked for each evaluation and must all be gone after
it; one of them is killed with SIGKILL mid-run; an OpenAI provider already used on the driver's
loop goes on working there after the workers used it in theirs.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import psutil
import pytest

from agentnb import Agent, evaluate, tool
from agentnb.evaluation import contains
from agentnb.testing import FunctionProvider, call
from agentnb.testing.server import ScriptedServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs os.fork")

CASES = [{"input": f"case {i}", "expected": "pid"} for i in range(12)]


def pid_agent() -> Agent:
    @tool
    def whoami(case: str) -> str:
        """The process that runs this call."""
        if case == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if case == "slow":
            time.sleep(3)
        if case == "fail":
            raise RuntimeError("tool broke")
        return f"pid {os.getpid()}"

    def model(messages, tools):
        if messages[-1].role == "user":
            return call("whoami", case=messages[-1].content.split()[-1])
        return messages[-1].content

    return Agent(FunctionProvider(model), tools=[whoami])


def no_children_left() -> bool:
    return not [p for p in psutil.Process().children(recursive=True) if p.is_running() and p.status() != "zombie"]


def test_processes_give_the_rows_of_the_local_executor_from_other_processes() -> None:
    agent = pid_agent()
    local = evaluate(agent, CASES, scorers=[contains()], concurrency=4, progress=False)
    spread = evaluate(
        agent, CASES, scorers=[contains()], concurrency=4, progress=False, executor="processes", workers=2
    )
    keep = ("key", "case", "input", "stop_reason", "tool_calls", "tools", "model_calls", "passed", "error")

    def table(ev):
        return sorted(({k: r[k] for k in keep} for r in ev.rows), key=lambda r: r["key"])

    assert table(spread) == table(local) and len(spread.rows) == len(CASES)
    pids = {int(r["output"].split()[-1]) for r in spread.rows}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2  # ran in the workers, not here
    assert {int(r["output"].split()[-1]) for r in local.rows} == {os.getpid()}
    assert all(r["passed"] for r in spread.rows)
    assert no_children_left()


def test_a_killed_worker_fails_its_runs_in_flight_and_the_rest_go_on() -> None:
    cases = ["a", "die", "b", "c", "fail", "slow"]
    ev = evaluate(pid_agent(), cases, concurrency=3, progress=False, executor="processes", workers=2, timeout=1.0)
    rows = {r["input"]: r for r in ev.rows}
    assert len(rows) == 6
    assert rows["die"]["stop_reason"] == "error" and "ended during this run" in rows["die"]["error"]
    assert rows["slow"]["stop_reason"] in ("timeout", "error")  # error: it was on the killed worker
    assert rows["fail"]["stop_reason"] in ("answer", "error")
    done = [r for r in ev.rows if r["stop_reason"] == "answer" and r["output"].startswith("pid ")]
    assert done, "no case finished on the surviving worker"
    assert no_children_left()


def test_an_openai_provider_works_in_the_workers_and_after_them_on_the_same_loop() -> None:
    import asyncio

    from agentnb import aevaluate
    from agentnb.providers import OpenAIProvider

    with ScriptedServer(default_text="pid ok") as server:
        agent = Agent(OpenAIProvider("m", base_url=server.url, api_key="sk-test-proc-0001", timeout=20))

        async def main() -> list[str]:
            # Connections open on this loop before the fork; the workers replace the client they
            # inherit, and this loop's connections must still work after them.
            first = await aevaluate(agent, ["x", "y"], concurrency=2, progress=False)
            spread = await aevaluate(
                agent, [f"q{i}" for i in range(8)], concurrency=8, progress=False, executor="processes"
            )
            after = await aevaluate(agent, ["z", "w"], concurrency=2, progress=False)
            return [r["output"] for r in first.rows + spread.rows + after.rows]

        started = time.perf_counter()
        assert asyncio.run(main()) == ["pid ok"] * 12
        assert time.perf_counter() - started < 15  # no request hung until its timeout
        assert len(server.requests) == 12
    assert no_children_left()


def test_bad_workers_is_a_clear_error() -> None:
    with pytest.raises(Exception, match="workers must be a whole number"):
        evaluate(pid_agent(), ["a"], progress=False, executor="processes", workers=0)


def test_processes_from_inside_a_running_loop_as_in_jupyter() -> None:
    import asyncio

    async def cell() -> list[str]:  # evaluate() in a running loop drives its runs from a worker thread
        ev = evaluate(pid_agent(), ["a", "b", "c", "d"], concurrency=4, progress=False, executor="processes", workers=2)
        return [r["stop_reason"] for r in ev.rows]

    assert asyncio.run(cell()) == ["answer"] * 4
    assert no_children_left()
