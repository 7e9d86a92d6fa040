"""A StopRun from an on_event callback keeps what the step did (issue 26 item 12).

A tool that finished keeps its result (and its call) in the transcript; a call that never
started, or was cut off while running, is not reported as run; the run ends ``cancelled``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agentnb import Agent, AssistantMessage, StopRun, ToolMessage, tool
from agentnb.events import Event, ToolFinished
from agentnb.messages import ToolCall, Usage
from agentnb.providers.base import Completion
from agentnb.testing import ScriptedProvider, Streamed, call

RAN: list[str] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    RAN.append(f"add {a} {b}")
    return a + b


@tool
def quick(x: int) -> str:
    """Answer at once."""
    RAN.append(f"quick {x}")
    return f"quick {x}"


@tool
async def slow(x: int) -> str:
    """Answer after a while."""
    import asyncio

    await asyncio.sleep(5)
    RAN.append(f"slow {x}")
    return f"slow {x}"


def stop_at(kind: str, nth: int = 1) -> Callable[[Event], None]:
    seen = {"n": 0}

    def on_event(event: Event) -> None:
        if event.kind == kind:
            seen["n"] += 1
            if seen["n"] == nth:
                raise StopRun

    return on_event


def roles(result) -> list[str]:  # type: ignore[no-untyped-def]
    return [m.role for m in result.messages]


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def test_stop_at_tool_finished_keeps_the_call_and_its_result() -> None:
    model = ScriptedProvider([call("add", a=2, b=3), "5"])
    result = Agent(model, tools=[add]).run("go", on_event=stop_at("tool_finished"))
    assert result.stop_reason == "cancelled"
    assert roles(result) == ["user", "assistant", "tool"]
    assert isinstance(result.messages[1], AssistantMessage) and result.messages[1].tool_calls[0].name == "add"
    assert isinstance(result.messages[2], ToolMessage) and result.messages[2].content == "5"
    assert result.tool_calls == 1 and RAN == ["add 2 3"]
    assert len(model.requests) == 1  # nothing was asked after the stop


def test_a_stopped_run_continues_as_a_valid_conversation() -> None:
    first = Agent(ScriptedProvider([call("add", a=2, b=3), "never"]), tools=[add]).run(
        "go", on_event=stop_at("tool_finished")
    )
    model = ScriptedProvider(["It was 5."])
    second = Agent(model, tools=[add]).run("and?", history=first)
    assert second.output == "It was 5."
    assert [m.role for m in model.requests[0].messages] == ["user", "assistant", "tool", "user"]


def test_stop_at_tool_started_reports_no_call_as_run() -> None:
    model = ScriptedProvider([call("add", a=1, b=1), "never"])
    result = Agent(model, tools=[add]).run("go", on_event=stop_at("tool_started"))
    assert result.stop_reason == "cancelled" and RAN == []
    assert roles(result) == ["user"] and result.tool_calls == 0
    assert not any(isinstance(e, ToolFinished) for e in result.events)


def test_stop_at_model_response_keeps_a_text_turn_but_no_unrun_call() -> None:
    turn = Completion("Let me add.", (ToolCall("c1", "add", {"a": 1, "b": 1}),), Usage(), "tool_calls")
    with_text = ScriptedProvider([turn, "never"])
    result = Agent(with_text, tools=[add]).run("go", on_event=stop_at("model_response"))
    assert result.stop_reason == "cancelled" and RAN == []
    assert roles(result) == ["user", "assistant"] and result.messages[1].tool_calls == ()
    assert result.messages[1].content == "Let me add." and result.tool_calls == 0
    bare = Agent(ScriptedProvider([call("add", a=1, b=1), "never"]), tools=[add]).run(
        "go", on_event=stop_at("model_response")
    )
    assert roles(bare) == ["user"] and bare.tool_calls == 0


def test_stop_at_a_text_delta_keeps_the_completed_steps_only() -> None:
    model = ScriptedProvider([call("add", a=1, b=2), Streamed(["The ", "answer ", "is 3."])])
    result = Agent(model, tools=[add]).run("go", stream=True, on_event=stop_at("text_delta", 2))
    assert result.stop_reason == "cancelled"
    assert roles(result) == ["user", "assistant", "tool"] and result.tool_calls == 1
    assert result.partial_output == "The answer "


def test_stop_in_a_second_step_keeps_the_first() -> None:
    model = ScriptedProvider([call("add", a=1, b=1), call("add", a=2, b=2), "never"])
    result = Agent(model, tools=[add]).run("go", on_event=stop_at("tool_finished", 2))
    assert roles(result) == ["user", "assistant", "tool", "assistant", "tool"]
    assert [m.content for m in result.messages if isinstance(m, ToolMessage)] == ["2", "4"]
    assert result.tool_calls == 2


def test_parallel_calls_the_finished_one_keeps_its_result_the_running_one_is_dropped() -> None:
    model = ScriptedProvider([[call("quick", x=1), call("slow", x=2), call("nope")], "never"])
    t0 = time.perf_counter()
    result = Agent(model, tools=[quick, slow]).run("go", on_event=stop_at("tool_finished"))
    assert time.perf_counter() - t0 < 4  # the slow call was cancelled, not waited for
    assert result.stop_reason == "cancelled"
    assert roles(result) == ["user", "assistant", "tool", "tool"]
    kept = result.messages[1].tool_calls
    assert [c.name for c in kept] == ["quick", "nope"]  # the unknown tool was answered: kept
    assert result.messages[2].content == "quick 1"
    assert "not found" in result.messages[3].content
    assert result.tool_calls == 2 and RAN == ["quick 1"]
    finished = [e.name for e in result.events if isinstance(e, ToolFinished)]
    assert finished == ["quick"]


def test_parallel_calls_that_both_finished_are_both_kept_and_reported() -> None:
    @tool
    async def first(x: int) -> str:
        """First."""
        return "first"

    @tool
    async def second(x: int) -> str:
        """Second."""
        return "second"

    # Both finish in the same turn of the event loop; the stop comes at the first report.
    model = ScriptedProvider([[call("first", x=1), call("second", x=2)], "never"])
    seen: list[str] = []

    def on_event(event: Event) -> None:
        seen.append(event.kind)
        if event.kind == "tool_finished" and seen.count("tool_finished") == 1:
            raise StopRun

    result = Agent(model, tools=[first, second]).run("go", on_event=on_event)
    assert result.stop_reason == "cancelled"
    assert sorted(m.content for m in result.messages if isinstance(m, ToolMessage)) == ["first", "second"]
    assert sorted(e.name for e in result.events if isinstance(e, ToolFinished)) == ["first", "second"]
    assert seen.count("tool_finished") == 2  # the late one is reported to the callback too
    assert result.tool_calls == 2


@pytest.mark.parametrize("mode", ["run", "arun", "stream"])
def test_stop_at_run_started_ends_the_run_before_any_model_call(mode: str) -> None:
    """A StopRun at run_started is a stop like any other: a cancelled result, not an exception."""
    import asyncio

    model = ScriptedProvider([call("add", a=2, b=3), "5"])
    agent = Agent(model, tools=[add])
    on_event = stop_at("run_started")
    if mode == "arun":
        result = asyncio.run(agent.arun("go", on_event=on_event))
    else:
        result = agent.run("go", on_event=on_event, stream=mode == "stream")
    assert result.stop_reason == "cancelled"
    assert model.requests == [] and RAN == []
    assert roles(result) == ["user"]
    assert [e.kind for e in result.events] == ["run_started", "run_finished"]


@pytest.mark.parametrize("mode", ["run", "arun"])
def test_stop_at_run_finished_changes_nothing(mode: str) -> None:
    """The run is over when run_finished is seen: the result comes back whole."""
    import asyncio

    model = ScriptedProvider([call("add", a=2, b=3), "5"])
    agent = Agent(model, tools=[add])
    on_event = stop_at("run_finished")
    result = asyncio.run(agent.arun("go", on_event=on_event)) if mode == "arun" else agent.run("go", on_event=on_event)
    assert result.stop_reason != "cancelled" and result.output == "5"
    assert roles(result) == ["user", "assistant", "tool", "assistant"]


def test_a_callback_that_fails_after_a_tool_ran_keeps_the_call_and_its_result() -> None:
    def broken(event: Event) -> None:
        if event.kind == "tool_finished":
            raise ValueError("a bug in the callback")

    model = ScriptedProvider([call("add", a=2, b=3), "5"])
    result = Agent(model, tools=[add]).run("go", on_event=broken)
    assert result.stop_reason == "error" and result.error == "ValueError: a bug in the callback"
    assert roles(result) == ["user", "assistant", "tool"] and result.messages[2].content == "5"
    assert result.tool_calls == 1 and RAN == ["add 2 3"]


def test_a_callback_that_fails_on_run_finished_raises_with_the_result() -> None:
    def broken(event: Event) -> None:
        if event.kind == "run_finished":
            raise ValueError("a bug in the callback")

    with pytest.raises(ValueError, match="a bug in the callback") as info:
        Agent(ScriptedProvider([call("add", a=2, b=3), "5"]), tools=[add]).run("go", on_event=broken)
    kept = info.value.run_result  # type: ignore[attr-defined]
    assert (
        kept.output == "5"
        and kept.stop_reason == "answer"
        and roles(kept) == ["user", "assistant", "tool", "assistant"]
    )
    assert any("run_result" in note for note in info.value.__notes__)
