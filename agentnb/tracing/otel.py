"""OpenTelemetry spans from a run's events (the OTel GenAI semantic conventions).

A :class:`SpanWatcher` is an event consumer (:mod:`agentnb.observe`), like the printer: it
turns each run's events into spans, as they happen.

* ``invoke_agent {agent}``: from ``run_started`` to ``run_finished`` (the whole run);
* ``chat {model}``: from ``model_request`` to ``model_response`` (one model call);
* ``execute_tool {tool}``: from ``tool_started`` to ``tool_finished`` (one tool call);
* a sub-agent's run (:meth:`agentnb.Agent.as_tool`) is an ``invoke_agent`` span under the
  ``execute_tool`` span of the call that ran it, and so on down.

Attributes follow the GenAI conventions (``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.usage.*``,
``gen_ai.response.finish_reasons``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
``gen_ai.agent.name``, ``gen_ai.conversation.id``). A run's decisions (route switches, dedup
decisions, failed validations, retries, limits, the debugger's choices) are span events named
``agentnb.<kind>``. A failed tool or run sets its span's status to ERROR.

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
from typing import Any

from agentnb.errors import MissingDependencyError
from agentnb.events import Event, RunStarted
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
    "dedup",
    "step_decision",
    "limit_reached",
    "direct_output",
    "history_trimmed",
    "attachment",
)
_PRIVATE = frozenset({"depth", "kind", "text", "arguments", "rejected", "image", "event"})  # content or bulk


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
        from agentnb import __version__

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
    """The spans of one run (and, through ``children``, of the runs its tools started)."""

    __slots__ = ("w", "parent", "run", "ctx", "chat", "tools", "children", "model", "vendor", "base")

    def __init__(self, watcher: SpanWatcher, parent: Any) -> None:
        self.w = watcher
        self.parent = parent  # an OTel context (None: the current one)
        self.run: Any = None
        self.ctx: Any = None
        self.chat: Any = None
        self.tools: dict[str, Any] = {}
        self.children: dict[str, _RunSpans] = {}
        self.model: str | None = None
        self.vendor = ""
        self.base: dict[str, Any] = {}

    def see(self, event: Event) -> None:
        handler = _HANDLERS.get(event.kind)
        if handler is not None:
            handler(self, event)

    # -- spans --------------------------------------------------------------------------------
    def run_started(self, e: Any) -> None:
        w = self.w
        self.model = e.model or e.provider
        self.vendor = e.vendor or e.provider
        self.base = {"gen_ai.provider.name": self.vendor, "gen_ai.request.model": self.model}
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", **self.base}
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

    def model_request(self, e: Any) -> None:
        attrs = {"gen_ai.operation.name": "chat", **self.base}
        if self.w.openinference:
            attrs["openinference.span.kind"] = "LLM"
            attrs["llm.model_name"] = self.model
        self.chat = self.w.tracer.start_span(
            f"chat {self.model}", context=self.ctx, kind=SpanKind.CLIENT, attributes=attrs
        )

    def model_response(self, e: Any) -> None:
        span = self.chat
        if span is None:
            self.model_request(e)
            span = self.chat
        self.chat = None
        u = e.usage
        finish = e.finish_reason or ("tool_calls" if e.tool_calls else "stop")
        attrs: dict[str, Any] = {
            "gen_ai.response.model": e.model or self.model,
            "gen_ai.response.finish_reasons": (finish,),
            "gen_ai.usage.input_tokens": u.input_tokens,
            "gen_ai.usage.output_tokens": u.output_tokens,
        }
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
        span.set_attributes(attrs)
        span.end()

    def tool_started(self, e: Any) -> None:
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
        self.tools[e.call_id] = w.tracer.start_span(
            f"execute_tool {e.name}", context=self.ctx, kind=SpanKind.INTERNAL, attributes=attrs
        )

    def tool_finished(self, e: Any) -> None:
        span = self.tools.pop(e.call_id, None)
        if span is None:
            return
        w = self.w
        if w.content:
            span.set_attribute("gen_ai.tool.call.result", w.text(e.result))
            if w.openinference:
                span.set_attribute("output.value", w.text(e.result))
        if e.error is not None:
            _fail(span, e.error, w)
        span.end()

    def sub_agent(self, e: Any) -> None:
        child = self.children.get(e.call_id)
        if child is None:
            tool = self.tools.get(e.call_id)
            child = self.children[e.call_id] = _RunSpans(self.w, _trace.set_span_in_context(tool) if tool else self.ctx)
        child.see(e.event)
        if e.event.kind == "run_finished":
            del self.children[e.call_id]

    def run_finished(self, e: Any) -> None:
        if self.run is None:
            return
        ended = e.stop_reason in ("cancelled", "error")
        for child in self.children.values():  # inner runs cut off with this one
            child.close("the calling run ended")
        for span in [self.chat, *self.tools.values()]:
            if span is not None:
                if ended:
                    span.set_status(Status(StatusCode.ERROR, f"run {e.stop_reason}"))
                span.end()
        self.chat, self.tools, self.children = None, {}, {}
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
        for span in [self.chat, *self.tools.values(), self.run]:
            if span is not None:
                span.set_status(Status(StatusCode.ERROR, why))
                span.end()
        self.run = self.chat = None

    # -- span events --------------------------------------------------------------------------
    def note(self, e: Any) -> None:
        target = self.chat if self.chat is not None else self.run
        if target is not None:
            target.add_event(f"agentnb.{e.kind}", _flat(e))

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
            out[name] = list(value)
    if "call_id" in out:
        out["gen_ai.tool.call.id"] = out.pop("call_id")
    if "name" in out:
        out["gen_ai.tool.name"] = out.pop("name")
    return out


def _fail(span: Any, error: str, w: SpanWatcher) -> None:
    head = error.split(":", 1)[0].strip()
    span.set_attribute("error.type", head if head.isidentifier() else "_OTHER")
    span.set_status(Status(StatusCode.ERROR, w.redactor.redact(error) if w.redactor else Redactor().redact(error)))


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
    **{kind: _RunSpans.note for kind in _NOTES},
}
