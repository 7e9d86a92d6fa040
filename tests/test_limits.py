"""Budgets (UsageLimits): each ends the run like the tool-call limit, and says which limit it was."""

from __future__ import annotations

import io
import time

import pytest

from agentnb import Agent, RunResult, TextPrinter, Usage, UsageLimits, UserError, tool
from agentnb.events import LimitReached
from agentnb.testing import ScriptedProvider, call


@tool
def step(i: int) -> int:
    """Take a step."""
    return i + 1


@tool
def slow(i: int) -> int:
    """Take a slow step."""
    time.sleep(0.15)
    return i


def walk(n: int, **kw) -> ScriptedProvider:
    return ScriptedProvider([call("step", i=k) for k in range(n)] + ["the answer"], **kw)


def limit_events(result: RunResult) -> list[LimitReached]:
    return [e for e in result.events if isinstance(e, LimitReached)]


def test_requests_limit_makes_the_last_request_without_tools() -> None:
    model = walk(5)
    r = Agent(model, tools=[step], limits=UsageLimits(requests=3)).run("go")
    assert len(model.requests) == 3
    assert [bool(q.tools) for q in model.requests] == [True, True, False]
    assert (r.stop_reason, r.limit, r.tool_calls) == ("limit", "requests", 2)
    # The model called a tool where none was offered and no request is left: agentnb says so,
    # with the tool results, never an empty output.
    assert r.output.startswith("[agentnb] The run reached its requests limit (3 of 3)")
    assert "written by agentnb, not by the model" in r.output
    assert "Tool results so far:\n- step(i=0) -> 1\n- step(i=1) -> 2" in r.output, r.output
    assert r.events[-2].kind == "final_answer" and r.events[-2].by == "agentnb" and r.events[-2].text == r.output
    [event] = limit_events(r)
    assert (event.limit, event.value, event.used) == ("requests", 3, 2)


def test_no_request_allowed_ends_at_once() -> None:
    model = walk(1)
    r = Agent(model, tools=[step]).run("go", limits=UsageLimits(requests=0))
    assert model.requests == [] and (r.stop_reason, r.limit) == ("limit", "requests")
    assert r.output.startswith("[agentnb] The run reached its requests limit (0 of 0)")
    assert r.output.endswith("No tool produced a result.")


@pytest.mark.parametrize(
    ("limits", "name", "calls"),
    [
        (UsageLimits(total_tokens=400), "total_tokens", 2),
        (UsageLimits(input_tokens=250), "input_tokens", 1),
        (UsageLimits(output_tokens=45), "output_tokens", 2),
    ],
)
def test_token_budgets(limits: UsageLimits, name: str, calls: int) -> None:
    # Held before each request (agentnb.run.budget): a request goes with tools while a tool step
    # and the answer after it fit, else without tools, and the run ends within the budget.
    model = walk(calls, usage=Usage(100, 10))  # a text answer when asked without tools
    out = io.StringIO()
    r = Agent(model, tools=[step], limits=limits).run("go", on_event=TextPrinter(out))
    assert (r.stop_reason, r.limit, r.tool_calls) == ("limit", name, calls)
    assert model.requests[-1].tools == () and len(model.requests) == calls + 1
    assert r.output == "the answer"
    assert f"{name} limit (" in out.getvalue()
    assert getattr(r.usage, name) <= getattr(limits, name) and r.overrun == ()
    again = RunResult.from_dict(r.to_dict())  # saved and loaded: the limit is still named
    assert again.limit == name and limit_events(again) == limit_events(r)


def test_cost_budget_and_unknown_cost_counts_as_reached() -> None:
    priced = walk(2, usage=Usage(1000, 100, cost=0.01))
    r = Agent(priced, tools=[step], limits=UsageLimits(cost=0.015)).run("go")
    assert (r.limit, r.tool_calls) == ("cost", 2)
    assert r.usage.cost == pytest.approx(0.03) and r.cost == pytest.approx(0.03)
    unknown = walk(1, usage=Usage(1000, 100))  # a fake's price is unknown
    r = Agent(unknown, tools=[step], limits=UsageLimits(cost=100.0)).run("go")
    assert (r.limit, r.tool_calls, r.cost) == ("cost", 1, None)


def test_seconds_budget() -> None:
    model = ScriptedProvider([call("slow", i=k) for k in range(5)] + ["done"])
    r = Agent(model, tools=[slow], limits=UsageLimits(seconds=0.2)).run("go")
    assert (r.limit, r.tool_calls) == ("seconds", 2)
    [event] = limit_events(r)
    assert event.used is not None and event.used >= 0.2


def test_tool_calls_is_max_tool_calls() -> None:
    agent = Agent(walk(5), tools=[step], limits=UsageLimits(tool_calls=2))
    assert agent.max_tool_calls == 2
    r = agent.run("go")
    assert (r.stop_reason, r.limit, r.tool_calls) == ("limit", "tool_calls", 2)
    with pytest.raises(UserError, match="same limit"):
        Agent(walk(1), max_tool_calls=3, limits=UsageLimits(tool_calls=2))
    # a run's limits replace the agent's, tool calls included
    r = Agent(walk(5), tools=[step], max_tool_calls=1).run("go", limits={"tool_calls": 3})
    assert (r.limit, r.tool_calls, r.events[0].max_tool_calls) == ("tool_calls", 3, 3)


def test_bad_limits_are_user_errors() -> None:
    with pytest.raises(UserError, match="whole number"):
        UsageLimits(requests=1.5)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=">= 0"):
        UsageLimits(cost=-1)
    with pytest.raises(UserError, match="limits must be"):
        Agent(walk(1), limits=3)  # type: ignore[arg-type]


def test_a_run_without_budgets_is_unchanged() -> None:
    r = Agent(walk(2), tools=[step]).run("go")
    assert (r.stop_reason, r.limit, r.output, limit_events(r)) == ("answer", None, "the answer", [])
