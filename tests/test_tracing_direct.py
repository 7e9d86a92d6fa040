"""Finished spans handed straight to the SDK's processors (agentnb.tracing.direct) are the spans
the tracer would have made; anything it cannot vouch for goes through the tracer."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, SamplingResult
from opentelemetry.trace import StatusCode
from test_tracing import SECRET, add

from agentnb import Agent, tool
from agentnb.events import RouteSwitched
from agentnb.messages import Usage
from agentnb.providers.base import Completion
from agentnb.testing import ScriptedProvider, call
from agentnb.tracing import direct, otel
from agentnb.tracing.otel import SpanWatcher


@tool
def boom(x: int) -> int:
    """Always fails."""
    raise ValueError(f"no luck with {SECRET}")


def _run(provider: TracerProvider, **watcher: Any) -> None:
    inner = Agent(ScriptedProvider([call("add", a=2, b=2), "4"], usage=Usage(3, 1)), tools=[add], name="inner")
    note = RouteSwitched(0, "m", "untooled", "server takes no tools")
    script = [
        Completion("", tool_calls=(call("boom", x=1),), events=(note,)),
        [call("add", a=1, b=2), call("add", a="x", b=1)],
        call("helper", prompt="2+2?"),
        call("add", a=1, b=2),  # a repeat: a dedup decision on the run span
        "done",
    ]
    agent = Agent(
        ScriptedProvider(script, usage=Usage(10, 4)),
        tools=[boom, add, inner.as_tool("helper", "Ask the helper.")],
        name="outer",
        instrument=SpanWatcher(provider, **watcher),
    )
    agent.run("go")


def _shape(spans: Any) -> list[tuple[Any, ...]]:
    """Everything about the spans but their ids and clocks; parents by name."""
    names = {s.context.span_id: s.name for s in spans}
    return [
        (
            s.name,
            s.kind,
            names.get(s.parent.span_id) if s.parent else None,
            dict(s.attributes),
            [(e.name, dict(e.attributes)) for e in s.events],
            s.status.status_code,
            s.status.description,
            s.resource.attributes,
            s.instrumentation_scope,
            int(s.context.trace_flags),
            s.dropped_attributes,
            s.dropped_events,
        )
        for s in spans
    ]


def _exported(monkeypatch: pytest.MonkeyPatch, direct_path: bool, **watcher: Any) -> list[Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "t"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    used: list[bool] = []
    real = direct.direct_sink

    def sink(tracer: Any, ctx: Any) -> Any:
        got = real(tracer, ctx) if direct_path else None
        used.append(got is not None)
        return got

    monkeypatch.setattr(otel, "direct_sink", sink)
    monkeypatch.setenv("AGENTNB_TEST_TOKEN", SECRET)
    _run(provider, **watcher)
    provider.shutdown()
    assert used and all(used) == direct_path
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize("options", [{}, {"content": True, "openinference": True}])
def test_the_direct_path_exports_the_spans_the_tracer_would(monkeypatch: pytest.MonkeyPatch, options: Any) -> None:
    direct_spans = _exported(monkeypatch, True, **options)
    traced_spans = _exported(monkeypatch, False, **options)
    assert _shape(direct_spans) == _shape(traced_spans)
    names = [s.name for s in direct_spans]
    assert names.count("invoke_agent inner") == 1 and names.count("execute_tool add") == 2
    failed = next(s for s in direct_spans if s.name == "execute_tool boom")
    assert failed.status.status_code is StatusCode.ERROR and SECRET not in failed.status.description
    first_chat = next(s for s in direct_spans if s.name == "chat scripted")
    assert [e.name for e in first_chat.events] == ["agentnb.route_switched"]
    for s in direct_spans:  # the clocks still follow the events
        assert s.start_time <= s.end_time


class Marking(SpanProcessor):
    """A processor that does something when a span starts: it must see every span start."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        self.started.append(span.name)
        span.set_attribute("marked", True)


def _parent_ctx(provider: TracerProvider) -> Any:
    from opentelemetry import trace

    return trace.set_span_in_context(provider.get_tracer("p").start_span("p"))


def _provider(**options: Any) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(**options)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _simple_run(provider: TracerProvider) -> None:
    agent = Agent(ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add], instrument=SpanWatcher(provider))
    agent.run("go")


def test_a_processor_that_acts_on_start_gets_every_span_from_the_tracer() -> None:
    provider, exporter = _provider()
    marking = Marking()
    provider.add_span_processor(marking)
    _simple_run(provider)
    spans = exporter.get_finished_spans()
    assert sorted(marking.started) == sorted(s.name for s in spans) and len(spans) == 4
    assert all(s.attributes["marked"] for s in spans)
    assert direct.direct_sink(provider.get_tracer("x"), _parent_ctx(provider)) is None


def test_span_limits_that_truncate_go_through_the_tracer() -> None:
    provider, exporter = _provider(span_limits=SpanLimits(max_attribute_length=5))
    assert direct.direct_sink(provider.get_tracer("x"), _parent_ctx(provider)) is None
    _simple_run(provider)
    chat = exporter.get_finished_spans()[0]
    assert chat.attributes["gen_ai.operation.name"] == "chat"  # 4 characters: kept
    assert chat.attributes["gen_ai.provider.name"] == "scrip"  # truncated by the SDK


class DropChats(Sampler):
    """Samples everything but model calls, and marks what it keeps."""

    def should_sample(self, parent_context: Any, trace_id: int, name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("chat"):
            return SamplingResult(Decision.DROP)
        return SamplingResult(Decision.RECORD_AND_SAMPLE, {"sampled.by": "test"})

    def get_description(self) -> str:
        return "DropChats"


def test_the_sampler_decides_for_direct_spans_too() -> None:
    provider, exporter = _provider(sampler=DropChats())
    assert direct.direct_sink(provider.get_tracer("x"), _parent_ctx(provider)) is not None
    _simple_run(provider)
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["execute_tool add", "invoke_agent"]
    assert dict(spans[0].attributes) == {"sampled.by": "test"}  # the sampler's attributes replace the span's
    assert spans[1].attributes["sampled.by"] == "test" and "agentnb.stop_reason" in spans[1].attributes


def test_an_unsampled_run_hands_over_nothing() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    provider, exporter = _provider(sampler=ParentBased(ALWAYS_OFF))
    _simple_run(provider)
    assert exporter.get_finished_spans() == ()


def test_values_the_sdk_would_convert_go_through_the_tracer() -> None:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    provider, exporter = _provider()
    tracer = provider.get_tracer("x")
    parent = tracer.start_span("p")
    sink = direct.direct_sink(tracer, trace.set_span_in_context(parent))
    assert sink is not None
    assert not sink.emit("s", SpanKind.INTERNAL, {"a": ["x"]}, 1)  # a list: the SDK makes it a tuple
    assert not sink.emit("s", SpanKind.INTERNAL, {"a": None}, 1)  # None: the SDK drops it, warning
    assert direct.direct_sink(tracer, None) is None  # no parent: the tracer makes the trace
    assert sink.emit("s", SpanKind.INTERNAL, {"a": ("x",), "b": 1.5}, 1)
    parent.end()
    (made, _) = exporter.get_finished_spans()
    assert made.parent.span_id == parent.get_span_context().span_id and made.attributes == {"a": ("x",), "b": 1.5}


def test_a_batch_processor_is_a_direct_one() -> None:
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    assert direct.direct_sink(provider.get_tracer("x"), _parent_ctx(provider)) is not None
    _simple_run(provider)
    provider.force_flush()
    assert len(exporter.get_finished_spans()) == 4
    provider.shutdown()


def _under_remote_parent(provider: TracerProvider, direct_path: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from opentelemetry import context, trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

    monkeypatch.setattr(otel, "direct_sink", direct.direct_sink if direct_path else (lambda *a: None))
    incoming = SpanContext(7, 9, is_remote=True, trace_flags=TraceFlags(1), trace_state=TraceState([("v", "1")]))
    token = context.attach(trace.set_span_in_context(NonRecordingSpan(incoming)))
    try:
        _simple_run(provider)
    finally:
        context.detach(token)
    return list(provider._active_span_processor._span_processors[0].span_exporter.get_finished_spans())


@pytest.mark.parametrize("sampler", ["default", "always_on"])
def test_spans_under_an_incoming_trace_keep_its_state_on_both_paths(
    monkeypatch: pytest.MonkeyPatch, sampler: str
) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    got = []
    for direct_path in (True, False):
        provider, _ = _provider(**({"sampler": ALWAYS_ON} if sampler == "always_on" else {}))
        spans = _under_remote_parent(provider, direct_path, monkeypatch)
        got.append([(s.name, s.context.trace_id, s.context.trace_state, int(s.context.trace_flags)) for s in spans])
    assert got[0] == got[1]
    assert len(got[0]) == 4 and all(t == 7 and dict(state) == {"v": "1"} for _, t, state, _ in got[0])


def test_a_processor_added_during_a_run_sees_the_spans_that_follow_start() -> None:
    provider, exporter = _provider()
    marking = Marking()

    @tool
    def subscribe() -> str:
        """Adds a processor halfway through the run."""
        provider.add_span_processor(marking)
        return "ok"

    script = [call("subscribe"), call("add", a=1, b=2), "3"]
    Agent(ScriptedProvider(script), tools=[subscribe, add], instrument=SpanWatcher(provider)).run("go")
    names = [s.name for s in exporter.get_finished_spans()]
    assert names[:2] == ["chat scripted", "execute_tool subscribe"] and len(names) == 6
    # every span made once the processor is there (spans are made when their call ends): the
    # subscribing call's own, the second call's, the two chats after it (the run's began before)
    assert sorted(marking.started) == ["chat scripted", "chat scripted", "execute_tool add", "execute_tool subscribe"]
