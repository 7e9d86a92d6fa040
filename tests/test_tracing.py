"""OpenTelemetry spans from runs, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import agentnb
from agentnb import Agent, tool
from agentnb.messages import Usage
from agentnb.providers.base import Completion
from agentnb.testing import ScriptedProvider, call
from agentnb.tracing.observe import watching
from agentnb.tracing.otel import SpanWatcher

SECRET = "sk-proj-abcdefghijklmnopqrstuvwx0123456789"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def boom(x: int) -> int:
    """Always fails."""
    raise ValueError("no luck")


@pytest.fixture()
def spans() -> Any:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def by_name(finished: Any) -> dict[str, Any]:
    return {s.name: s for s in finished}


def test_names_nesting_and_genai_attributes(spans: Any) -> None:
    provider, exporter = spans
    model = ScriptedProvider([call("add", a=1, b=2), "3"], usage=Usage(10, 4))
    agent = Agent(model, tools=[add], name="calc", instrument=SpanWatcher(provider))
    agent.run("1 + 2?")
    finished = exporter.get_finished_spans()
    assert [s.name for s in finished] == ["chat scripted", "execute_tool add", "chat scripted", "invoke_agent calc"]
    run = finished[-1]
    assert run.parent is None
    for s in finished[:-1]:
        assert s.parent.span_id == run.context.span_id
        assert s.context.trace_id == run.context.trace_id
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "calc"
    assert run.attributes["gen_ai.provider.name"] == "scripted"
    assert run.attributes["gen_ai.usage.input_tokens"] == 20
    assert run.attributes["gen_ai.usage.output_tokens"] == 8
    chat = finished[0]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "scripted"
    assert chat.attributes["gen_ai.response.model"] == "scripted"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 10
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert finished[2].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    tool_span = finished[1]
    assert tool_span.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool_span.attributes["gen_ai.tool.name"] == "add"
    assert tool_span.attributes["gen_ai.tool.call.id"] == "call_1"
    # spans follow the events in time: the tool ran between the two model calls
    assert chat.end_time <= tool_span.start_time <= tool_span.end_time <= finished[2].start_time


def test_response_model_and_finish_reason_come_from_the_provider(spans: Any) -> None:
    provider, exporter = spans
    reply = Completion("hi", (), Usage(1, 1), "length", model="gpt-x-2026-01-01")
    Agent(ScriptedProvider([reply]), instrument=SpanWatcher(provider)).run("hello")
    chat = by_name(exporter.get_finished_spans())["chat scripted"]
    assert chat.attributes["gen_ai.response.model"] == "gpt-x-2026-01-01"
    assert chat.attributes["gen_ai.response.finish_reasons"] == ("length",)


def test_content_is_off_by_default(spans: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    provider, exporter = spans
    agent = Agent(
        ScriptedProvider([call("add", a=40, b=2), "the answer is 42"]),
        tools=[add],
        system="be brief",
        instrument=SpanWatcher(provider),
    )
    agent.run("what is forty plus two?")
    text = repr([(s.attributes, [ev.attributes for ev in s.events]) for s in exporter.get_finished_spans()])
    for private in ("forty", "answer is 42", "be brief", "gen_ai.input.messages", "gen_ai.tool.call.arguments"):
        assert private not in text


def test_content_on_records_messages_with_secrets_redacted(spans: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    provider, exporter = spans
    monkeypatch.setenv("SOME_SERVICE_API_KEY", "correct-horse-battery")

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value for {key}; token correct-horse-battery"

    agent = Agent(
        ScriptedProvider([call("lookup", key=SECRET), "done with " + SECRET]),
        tools=[lookup],
        system="be brief",
        instrument=SpanWatcher(provider, content=True, openinference=True),
    )
    agent.run(f"use key {SECRET}")
    finished = by_name(exporter.get_finished_spans())
    text = repr([(s.attributes, [e.attributes for e in s.events]) for s in finished.values()])
    assert SECRET not in text and "correct-horse-battery" not in text
    run = finished["invoke_agent"]
    assert "use key ***" in run.attributes["gen_ai.input.messages"]
    assert "be brief" in run.attributes["gen_ai.system_instructions"]
    assert "done with ***" in run.attributes["gen_ai.output.messages"]
    assert run.attributes["input.value"] == "use key ***"
    assert run.attributes["openinference.span.kind"] == "AGENT"
    t = finished["execute_tool lookup"]
    assert t.attributes["gen_ai.tool.call.arguments"] == '{"key": "***"}'
    assert t.attributes["gen_ai.tool.call.result"] == "value for ***; token ***"
    assert t.attributes["openinference.span.kind"] == "TOOL"
    chat = next(s for s in exporter.get_finished_spans() if s.name.startswith("chat"))
    assert chat.attributes["openinference.span.kind"] == "LLM"
    assert chat.attributes["llm.token_count.total"] == 0
    assert '"type": "tool_call"' in chat.attributes["gen_ai.output.messages"]


def test_tool_error_sets_status_and_decisions_are_span_events(spans: Any) -> None:
    provider, exporter = spans
    script = [[call("boom", x=1), call("add", a="x", b=1), call("add", a=1, b=1)], call("add", a=1, b=1), "gave up"]
    Agent(ScriptedProvider(script), tools=[boom, add], instrument=SpanWatcher(provider)).run("go")
    finished = exporter.get_finished_spans()
    failed = [s for s in finished if s.name == "execute_tool boom"]
    assert len([s for s in finished if s.name == "execute_tool add"]) == 1  # the repeat was not run
    assert failed[0].status.status_code is StatusCode.ERROR
    assert "no luck" in failed[0].status.description
    assert failed[0].attributes["error.type"] == "ValueError"
    run = finished[-1]
    names = [e.name for e in run.events]
    assert "agentnb.validation_failed" in names
    dedups = [e for e in run.events if e.name == "agentnb.dedup"]
    assert [e.attributes["action"] for e in dedups] == ["skip"]
    assert run.status.status_code is StatusCode.UNSET  # the run itself answered


def test_provider_decisions_land_on_the_chat_span(spans: Any) -> None:
    from agentnb.events import RouteSwitched

    provider, exporter = spans
    note = RouteSwitched(0, "m", "untooled", "server takes no tools")
    Agent(ScriptedProvider([Completion("ok", events=(note,))]), instrument=SpanWatcher(provider)).run("go")
    chat = by_name(exporter.get_finished_spans())["chat scripted"]
    (event,) = chat.events
    assert event.name == "agentnb.route_switched"
    assert event.attributes["route"] == "untooled"


def test_a_failed_run_sets_the_error_status(spans: Any) -> None:
    provider, exporter = spans
    Agent(ScriptedProvider([RuntimeError("server down")]), instrument=SpanWatcher(provider)).run("go")
    finished = by_name(exporter.get_finished_spans())
    assert finished["invoke_agent"].status.status_code is StatusCode.ERROR
    assert finished["chat scripted"].status.status_code is StatusCode.ERROR  # cut off, still ended


def test_a_cancelled_run_ends_every_span(spans: Any) -> None:
    provider, exporter = spans

    @tool
    async def slow() -> str:
        """Wait."""
        await asyncio.sleep(10)
        return "late"

    agent = Agent(ScriptedProvider([call("slow"), "never"]), tools=[slow], instrument=SpanWatcher(provider))

    async def main() -> None:
        task = asyncio.ensure_future(agent.arun("go"))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    finished = by_name(exporter.get_finished_spans())
    assert set(finished) == {"invoke_agent", "chat scripted", "execute_tool slow"}
    assert finished["execute_tool slow"].status.status_code is StatusCode.ERROR
    assert finished["invoke_agent"].attributes["agentnb.stop_reason"] == "cancelled"


def test_instrument_uses_the_global_path_and_uninstrument_stops_it(spans: Any) -> None:
    provider, exporter = spans
    watcher = agentnb.instrument(provider)
    try:
        assert watching() == (watcher,)
        again = agentnb.instrument(provider)  # replaces, never doubles
        assert watching() == (again,)
        Agent(ScriptedProvider(["hi"])).run("hello")
    finally:
        agentnb.uninstrument()
    assert watching() == ()
    Agent(ScriptedProvider(["hi"])).run("hello")
    assert [s.name for s in exporter.get_finished_spans()] == ["chat scripted", "invoke_agent"]


def test_an_uninstrumented_agent_has_no_watchers() -> None:
    agent = Agent(ScriptedProvider(["hi"]))
    assert agent.watchers == () and watching() == ()


def test_a_broken_watcher_never_breaks_a_run() -> None:
    class Broken:
        def start(self, first: Any) -> Any:
            def see(event: Any) -> None:
                raise RuntimeError("watcher bug")

            return see

    assert Agent(ScriptedProvider(["fine"]), instrument=Broken()).run("go").output == "fine"


def test_a_broken_watcher_beside_a_good_one_leaves_it_every_event() -> None:
    class Broken:
        def start(self, first: Any) -> Any:
            def see(event: Any) -> None:
                raise RuntimeError("watcher bug")

            return see

    class Count:
        kinds: list[str] = []

        def start(self, first: Any) -> Any:
            return lambda event: self.kinds.append(event.kind)

    good = Count()
    r = Agent(ScriptedProvider(["fine"]), instrument=[Broken(), good]).run("go")
    assert r.output == "fine" and good.kinds == [e.kind for e in r.events]
