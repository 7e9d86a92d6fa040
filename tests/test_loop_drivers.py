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


def test_leaving_a_stream_mid_reply_ends_the_reply_and_its_cleanup_may_await() -> None:
    """A consumer that leaves at the first text delta: the reply's stream is closed where it
    waits, its cleanup (which awaits) runs to its end, and nothing is left un-awaited."""
    from agentnb.providers.base import Completion, Provider, TextChunk

    cleaned: list[str] = []

    class Slow(Provider):
        name = "slow"

        async def complete(self, request):  # type: ignore[no-untyped-def]
            return Completion("never")

        async def stream(self, request):  # type: ignore[no-untyped-def]
            try:
                yield TextChunk("one ")
                await asyncio.sleep(0.01)
                yield TextChunk("two")
                yield Completion("one two")
            finally:
                await asyncio.sleep(0)  # an awaiting cleanup (a connection given back)
                cleaned.append("closed")

    async def first_delta() -> list[str]:
        seen = []
        async with aclosing(Agent(Slow()).stream("go")) as items:
            async for item in items:
                seen.append(item.kind)
                if item.kind == "text_delta":
                    break
        return seen

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seen = asyncio.run(first_delta())
        gc.collect()
    assert seen == ["run_started", "model_request", "text_delta"]
    assert cleaned == ["closed"]
    assert not [w for w in caught if "never awaited" in str(w.message) or "ignored GeneratorExit" in str(w.message)]


def test_a_cancelled_stream_consumer_stops_the_run_where_it_waits() -> None:
    """Cancelling the task that reads a stream reaches the body where it waits (the model's
    reply here), and the run ends as cancelled with what it had."""
    from agentnb.providers.base import Completion, Provider

    started = asyncio.Event

    class Hanging(Provider):
        name = "hanging"

        async def complete(self, request):  # type: ignore[no-untyped-def]
            await asyncio.sleep(3600)
            return Completion("late")

    async def main() -> object:
        got: list[object] = []
        waiting = started()

        async def consume() -> None:
            async for item in Agent(Hanging()).stream("go", stream=False):
                got.append(item)
                if getattr(item, "kind", "") == "model_request":
                    waiting.set()

        task = asyncio.ensure_future(consume())
        await waiting.wait()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as exc:
            return getattr(exc, "run_result", None)
        return None

    result = asyncio.run(main())
    assert result is not None and result.stop_reason == "cancelled"  # type: ignore[attr-defined]
