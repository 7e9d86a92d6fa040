"""The loop's drivers: what a consumer of ``Agent.stream`` sees when it leaves early or the
model fails, now that phases emit their events and yield only what they wait for."""

from __future__ import annotations

import asyncio
import gc
import warnings
from contextlib import aclosing

import pytest

from agentnb import Agent, tool
from agentnb.testing import FunctionProvider, ScriptedProvider, call

RAN: list[int] = []


@tool
def mark(i: int) -> int:
    """Record that the tool ran."""
    RAN.append(i)
    return i


def test_leaving_the_stream_before_a_wait_runs_nothing_and_leaves_no_coroutine() -> None:
    """The events said before the model is asked come out first; a consumer that leaves at
    one of them leaves no model call or tool call behind (and no un-awaited coroutine)."""
    RAN.clear()
    agent = Agent(ScriptedProvider([call("mark", i=1), "done"]), tools=[mark])

    async def first_tool_call() -> list[str]:
        seen = []
        async with aclosing(agent.stream("go")) as items:
            async for item in items:
                seen.append(item.kind)
                if item.kind == "tool_call":
                    break
        return seen

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = asyncio.run(first_tool_call())
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert seen == ["run_started", "model_request", "model_response", "tool_call"]
    assert RAN == []


def test_a_failing_model_still_delivers_what_was_said_before() -> None:
    """The request announced before the provider failed reaches the stream's consumer, then
    the run ends with the error in its transcript."""

    def broken(messages: list[object], tools: list[object]) -> str:
        raise ConnectionError("the server went away")

    async def kinds() -> list[str]:
        out = []
        async for item in Agent(FunctionProvider(broken), tools=[mark]).stream("go"):
            out.append(getattr(item, "kind", "result"))
        return out

    got = asyncio.run(kinds())
    assert got[:2] == ["run_started", "model_request"]
    assert got[-2:] == ["run_finished", "result"]


@pytest.mark.parametrize("stream", [True, False])
def test_stream_and_arun_see_the_same_events(stream: bool) -> None:
    """Every event, in order, through both drivers (a repeat, an unknown tool, invalid arguments)."""
    script = [call("mark", i=1), [call("mark", i=1), call("nope"), call("mark", i="x")], "done"]

    def kinds_of_stream() -> list[str]:
        async def go() -> list[str]:
            agent = Agent(ScriptedProvider(script), tools=[mark])
            return [e.kind async for e in agent.stream("go", stream=stream) if hasattr(e, "kind")]

        return asyncio.run(go())

    seen: list[str] = []
    Agent(ScriptedProvider(script), tools=[mark]).run("go", on_event=lambda e: seen.append(e.kind), stream=stream)
    assert kinds_of_stream() == seen
    assert seen.count("model_request") == 3
