"""OpenTelemetry spans from a run's events (the OTel GenAI semantic conventions).

A :class:`SpanWatcher` is an event consumer (:mod:`agentnb.tracing.observe`), like the printer: it
turns each run's events into spans, as they happen.

* ``invoke_agent {agent}``: from ``run_started`` to ``run_finished`` (the whole run);
* ``chat {model}``: from ``model_request`` to ``model_response`` (one model call);
* ``execute_tool {tool}``: from ``tool_started`` to ``tool_finished`` (one tool call);
* a sub-agent's run (:meth:`agentnb.Agent.as_tool`) is an ``invoke_agent`` span under the
  ``execute_tool`` span of the call that ran it, and so on down.

Attributes follow the GenAI conventions (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.usage.*``,
``gen_ai.response.finish_reasons``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.agent.name``, ``gen_ai.conversation.id``); a ``chat`` span also has the request's size
and the window (``agentnb.context.tokens``, ``agentnb.context.window``: :mod:`agentnb.context`). A run's decisions (route switches, dedup
decisions on repeated calls, failed validations, retries, limits, the debugger's choices) are
span events named ``agentnb.<kind>``. A failed tool or run sets its span's status to ERROR.

Message content (prompts, answers, tool arguments and results) is recorded only with
``content=True``, then with secrets redacted (:mod:`agentnb.tracing.redact`).
``openinference=True`` adds the attributes Phoenix reads (``openinference.span.kind``,
``llm.token_count.*``, ``input.value`` / ``output.value``; the values with ``content=True``).
Nothing is exported here: the tracer provider (the global one unless given) decides where
spans go.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from time import time_ns
from typing import Any

from agentnb.errors import MissingDependencyError
from agentnb.events import Event, RunStarted
from agentnb.tracing.direct import direct_sink
from agentnb.tracing.redact import Redactor

try:
    from opentelemetry import trace as _trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # pragma: no cover - checked when a SpanWatcher is made
    _trace = None  # type: ignore[assignment]

_SCALARS = (str, int, float, bool)
#: Events that become span events, with their names (``None``: the event's ``agentnb.<kind>``).
_NOTES = (
    "route_switched",
    "constraint_dropped",
    "call_repair",
    "call_steered",
    "calls_from_text",
    "call_decision",
    "output_mode",
    "unknown_tool",
    "step_decision",
    "limit_reached",
    "direct_output",
    "history_trimmed",
    "context_compacted",
    "forked",
    "attachment",
    "user_interjected",
)
_PRIVATE = frozenset({"depth", "kind", "text", "arguments", "rejected", "image", "event", "summary"})  # content or bulk


class SpanWatcher:
    """Turns runs into OpenTelemetry spans (see the module docstring).

    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> from agentnb import Agent, tool
    >>> from agentnb.testing import ScriptedProvider, call
    >>> exporter = InMemorySpanExporter()
    >>> provider = TracerProvider()
    >>> provider.add_span_processor(SimpleSpanProcessor(exporter))
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> agent = Agent(ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add], name="calc",
    ...               instrument=SpanWatcher(provider))
    >>> _ = agent.run("1 + 2?")
    >>> [s.name for s in exporter.get_finished_spans()]
    ['chat scripted', 'execute_tool add', 'chat scripted', 'invoke_agent calc']
    """

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        content: bool = False,
        openinference: bool = False,
        secrets: Iterable[str] = (),
    ) -> None:
        if _trace is None:
            raise MissingDependencyError(
                "OpenTelemetry is not installed: pip install 'agentnb[otel]' (or opentelemetry-api)"
            )
        from agentnb.version import __version__

        self.tracer = _trace.get_tracer("agentnb", __version__, tracer_provider=tracer_provider)
        self.content = content
        self.openinference = openinference
        self.redactor = Redactor(secrets) if content else None

    def start(self, first: RunStarted) -> Callable[[Event], None]:
        return _RunSpans(self, None).see

    def text(self, value: Any) -> str:
        """Content as recorded: JSON for data, secrets redacted."""
        raw = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        return self.redactor.redact(raw) if self.redactor is not None else raw


class _RunSpans:
    """The spans of one run (and, through ``children``, of the runs its tools started).

    A model call's or a tool call's span is made when it ends, with its start time and all its
    attributes at once (half the SDK work of starting it early and adding to it); a tool call
    that runs an agent gets its span as soon as the inner run starts, to be its parent.
    """

    __slots__ = (
        "w",
        "parent",
        "run",
        "ctx",
        "chat",
        "notes",
        "started",
        "tools",
        "children",
        "chat_attrs",
        "sink",
        "size",
    )

    def __init__(self, watcher: SpanWatcher, parent: Any) -> None:
        self.w = watcher
        self.parent = parent  # an OTel context (None: the current one)
        self.run: Any = None
        self.ctx: Any = None
        self.chat: int | None = None  # the open model call's start time (ns)
        self.size: tuple[int | None, int | None] = (None, None)  # the open call's (tokens, window)
        self.notes: list[tuple[str, dict[str, Any], int]] = []  # its span events so far
        self.started: dict[str, tuple[int, Any]] = {}  # open tool calls: start time, tool_started
        self.tools: dict[str, Any] = {}  # open tool calls that already have a span
        self.children: dict[str, _RunSpans] = {}
        self.chat_attrs: dict[str, Any] = {}
        self.sink: Any = None  # where finished spans may go without the tracer (agentnb.tracing.direct)

    def see(self, event: Event) -> None:
        handler = _HANDLERS.get(event.kind)
        if handler is not None:
            handler(self, event)

    # -- spans --------------------------------------------------------------------------------
    def run_started(self, e: Any) -> None:
        w = self.w
        model = e.model or e.provider
        base = {"gen_ai.provider.name": e.vendor or e.provider, "gen_ai.request.model": model}
        self.chat_attrs = {"gen_ai.operation.name": "chat", **base}
        if w.openinference:
            self.chat_attrs["openinference.span.kind"] = "LLM"
            self.chat_attrs["llm.model_name"] = model
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", **base}
        if e.agent_name:
            attrs["gen_ai.agent.name"] = e.agent_name
        if e.conversation_id:
            attrs["gen_ai.conversation.id"] = e.conversation_id
        if e.turn > 1:
            attrs["agentnb.turn"] = e.turn
        if w.openinference:
            attrs["openinference.span.kind"] = "AGENT"
        if w.content:
            if e.system:
                attrs["gen_ai.system_instructions"] = w.text([{"type": "text", "content": e.system}])
            if e.prompt is not None:
                attrs["gen_ai.input.messages"] = w.text(
                    [{"role": "user", "parts": [{"type": "text", "content": e.prompt}]}]
                )
                if w.openinference:
                    attrs["input.value"] = w.text(e.prompt)
        name = f"invoke_agent {e.agent_name}" if e.agent_name else "invoke_agent"
        self.run = w.tracer.start_span(name, context=self.parent, kind=SpanKind.INTERNAL, attributes=attrs)
        self.ctx = _trace.set_span_in_context(self.run)
        self.sink = direct_sink(w.tracer, self.ctx) if self.run.is_recording() else None

    def model_request(self, e: Any) -> None:
        self.chat = time_ns()
        self.size = (e.context_tokens, e.context_window)  # the gauge (agentnb.context)

    def model_response(self, e: Any) -> None:
        u = e.usage
        finish = e.finish_reason or ("tool_calls" if e.tool_calls else "stop")
        attrs = dict(self.chat_attrs)
        attrs["gen_ai.response.model"] = e.model or attrs["gen_ai.request.model"]
        attrs["gen_ai.response.finish_reasons"] = (finish,)
        attrs["gen_ai.usage.input_tokens"] = u.input_tokens
        attrs["gen_ai.usage.output_tokens"] = u.output_tokens
        for key, value in zip(("agentnb.context.tokens", "agentnb.context.window"), self.size, strict=True):
            if value is not None:
                attrs[key] = value
        w = self.w
        if w.openinference:
            attrs["llm.token_count.prompt"] = u.input_tokens
            attrs["llm.token_count.completion"] = u.output_tokens
            attrs["llm.token_count.total"] = u.input_tokens + u.output_tokens
        if w.content:
            parts: list[dict[str, Any]] = [{"type": "text", "content": e.text}] if e.text else []
            parts += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments} for c in e.tool_calls]
            attrs["gen_ai.output.messages"] = w.text([{"role": "assistant", "parts": parts, "finish_reason": finish}])
            if w.openinference:
                attrs["output.value"] = w.text(e.text or "")
        sink, start, name = self.sink, self.chat, f"chat {attrs['gen_ai.request.model']}"
        if sink is not None and start is not None and sink.emit(name, SpanKind.CLIENT, attrs, start, self.notes):
            self.chat = None
            self.notes = []
            return
        self._chat_span(attrs).end()

    def _chat_span(self, attrs: dict[str, Any]) -> Any:
        start = self.chat if self.chat is not None else time_ns()
        self.chat = None
        span = self.w.tracer.start_span(
            f"chat {attrs['gen_ai.request.model']}",
            context=self.ctx,
            kind=SpanKind.CLIENT,
            attributes=attrs,
            start_time=start,
        )
        if self.notes:
            for name, values, at in self.notes:
                span.add_event(name, values, at)
            self.notes = []
        return span

    def tool_started(self, e: Any) -> None:
        self.started[e.call_id] = (time_ns(), e)

    def _tool_attrs(self, e: Any) -> dict[str, Any]:
        w = self.w
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": e.name,
            "gen_ai.tool.call.id": e.call_id,
            "gen_ai.tool.type": "extension" if e.source else "function",
        }
        if w.openinference:
            attrs["openinference.span.kind"] = "TOOL"
            attrs["tool.name"] = e.name
        if w.content:
            attrs["gen_ai.tool.call.arguments"] = w.text(e.arguments)
            if w.openinference:
                attrs["input.value"] = attrs["gen_ai.tool.call.arguments"]
        return attrs

    def _result_attrs(self, e: Any) -> dict[str, Any]:
        """A finished tool call's result, as attributes (only with content on)."""
        w = self.w
        if not w.content:
            return {}
        text = w.text(e.result)
        return (
            {"gen_ai.tool.call.result": text, "output.value": text}
            if w.openinference
            else {"gen_ai.tool.call.result": text}
        )

    def _tool_span(self, call_id: str) -> Any:
        span = self.tools.get(call_id)
        if span is None and call_id in self.started:
            start, e = self.started.pop(call_id)
            span = self.tools[call_id] = self.w.tracer.start_span(
                f"execute_tool {e.name}",
                context=self.ctx,
                kind=SpanKind.INTERNAL,
                attributes=self._tool_attrs(e),
                start_time=start,
            )
        return span

    def _tool_emitted(self, e: Any) -> bool:
        """The finished tool call's span, handed over whole (see :mod:`agentnb.tracing.direct`)."""
        start, started = self.started[e.call_id]
        attrs, w, status = {**self._tool_attrs(started), **self._result_attrs(e)}, self.w, None
        if e.error is not None:
            attrs["error.type"], description = _failure(e.error, w)
            status = Status(StatusCode.ERROR, description)
        if not self.sink.emit(f"execute_tool {started.name}", SpanKind.INTERNAL, attrs, start, (), status):
            return False
        del self.started[e.call_id]
        return True

    def tool_finished(self, e: Any) -> None:
        if self.sink is not None and e.call_id in self.started and self._tool_emitted(e):
            return
        span = self._tool_span(e.call_id)
        if span is None:
            return
        del self.tools[e.call_id]
        span.set_attributes(self._result_attrs(e))
        if e.error is not None:
            _fail(span, e.error, self.w)
        span.end()

    def sub_agent(self, e: Any) -> None:
        child = self.children.get(e.call_id)
        if child is None:
            tool = self._tool_span(e.call_id)
            child = _RunSpans(self.w, _trace.set_span_in_context(tool) if tool is not None else self.ctx)
            self.children[e.call_id] = child
        child.see(e.event)
        if e.event.kind == "run_finished":
            del self.children[e.call_id]

    def _open(self) -> list[Any]:
        """Spans of calls still running (a run cut off by a Stop or an error), now made."""
        spans = [self._chat_span(dict(self.chat_attrs))] if self.chat is not None else []
        for call_id in list(self.started):
            self._tool_span(call_id)
        spans += self.tools.values()
        self.tools = {}
        return spans

    def run_finished(self, e: Any) -> None:
        if self.run is None:
            return
        ended = e.stop_reason in ("cancelled", "error")
        for child in self.children.values():  # inner runs cut off with this one
            child.close("the calling run ended")
        self.children = {}
        for span in self._open():
            if ended:
                span.set_status(Status(StatusCode.ERROR, f"run {e.stop_reason}"))
            span.end()
        u = e.usage
        attrs: dict[str, Any] = {
            "gen_ai.usage.input_tokens": u.input_tokens,
            "gen_ai.usage.output_tokens": u.output_tokens,
            "agentnb.stop_reason": e.stop_reason,
            "agentnb.tool_calls": e.tool_calls,
        }
        if self.w.openinference:
            attrs["llm.token_count.prompt"] = u.input_tokens
            attrs["llm.token_count.completion"] = u.output_tokens
            attrs["llm.token_count.total"] = u.input_tokens + u.output_tokens
        self.run.set_attributes(attrs)
        if e.error:
            _fail(self.run, e.error, self.w)
        self.run.end()
        self.run = None

    def close(self, why: str) -> None:
        for child in self.children.values():
            child.close(why)
        for span in [*self._open(), self.run]:
            if span is not None:
                span.set_status(Status(StatusCode.ERROR, why))
                span.end()
        self.run = None

    # -- span events --------------------------------------------------------------------------
    def note(self, e: Any) -> None:
        if self.chat is not None:  # a provider's decision about the model call under way
            self.notes.append((f"agentnb.{e.kind}", _flat(e), time_ns()))
        elif self.run is not None:
            self.run.add_event(f"agentnb.{e.kind}", _flat(e))

    def dedup(self, e: Any) -> None:
        if e.seen_before:  # a first call simply runs (its span says so); a repeat is a decision
            self.note(e)

    def validation(self, e: Any) -> None:
        if e.errors and self.run is not None:
            self.run.add_event(
                "agentnb.validation_failed",
                {"gen_ai.tool.name": e.name, "gen_ai.tool.call.id": e.call_id, "errors": list(e.errors)},
            )

    def output_validation(self, e: Any) -> None:
        if self.run is not None:
            name = "agentnb.retry" if e.retry else ("agentnb.output_validated" if e.ok else "agentnb.validation_failed")
            self.run.add_event(name, {"type": e.type_name, "errors": list(e.errors), "retry": e.retry})

    def final_answer(self, e: Any) -> None:
        w = self.w
        if w.content and self.run is not None:
            self.run.set_attribute(
                "gen_ai.output.messages",
                w.text([{"role": "assistant", "parts": [{"type": "text", "content": e.text}]}]),
            )
            if w.openinference:
                self.run.set_attribute("output.value", w.text(e.text))

    def reasoning_summary(self, e: Any) -> None:
        if self.w.content:
            self.note(e)


def _flat(e: Any) -> dict[str, Any]:
    """An event's plain fields as span-event attributes (content fields left out)."""
    out: dict[str, Any] = {}
    for name in e.__dataclass_fields__:
        if name in _PRIVATE:
            continue
        value = getattr(e, name)
        if isinstance(value, _SCALARS):
            out[name] = value
        elif isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            out[name] = value  # a tuple: what the SDK keeps as it is
    if "call_id" in out:
        out["gen_ai.tool.call.id"] = out.pop("call_id")
    if "name" in out:
        out["gen_ai.tool.name"] = out.pop("name")
    return out


def _failure(error: str, w: SpanWatcher) -> tuple[str, str]:
    """A failure's ``error.type`` and its status description (secrets redacted)."""
    head = error.split(":", 1)[0].strip()
    return head if head.isidentifier() else "_OTHER", (w.redactor or Redactor()).redact(error)


def _fail(span: Any, error: str, w: SpanWatcher) -> None:
    kind, description = _failure(error, w)
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, description))


_HANDLERS: dict[str, Callable[[_RunSpans, Any], None]] = {
    "run_started": _RunSpans.run_started,
    "model_request": _RunSpans.model_request,
    "model_response": _RunSpans.model_response,
    "tool_started": _RunSpans.tool_started,
    "tool_finished": _RunSpans.tool_finished,
    "sub_agent": _RunSpans.sub_agent,
    "run_finished": _RunSpans.run_finished,
    "validation": _RunSpans.validation,
    "output_validation": _RunSpans.output_validation,
    "final_answer": _RunSpans.final_answer,
    "reasoning_summary": _RunSpans.reasoning_summary,
    "dedup": _RunSpans.dedup,
    **{kind: _RunSpans.note for kind in _NOTES},
}
