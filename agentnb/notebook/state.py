"""What a trace shows, built from the loop's events alone (no widgets here).

:class:`TraceState` folds events into one :class:`DepthView` per recursion depth; the widget
renders the views that changed since its last update.

>>> from agentnb.events import ModelRequest, ToolCallRequested
>>> s = TraceState()
>>> s.add(ModelRequest(depth=0, n_messages=1, tools=("add",), tool_choice="auto"))
>>> s.add(ToolCallRequested(depth=0, call_id="c1", name="add", arguments={"a": 1}))
>>> s.depths[0].calls["c1"].name, sorted(s.dirty)
('add', [0])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentnb.events import (
    DedupDecision,
    Event,
    ModelRequest,
    ModelResponse,
    RunFinished,
    RunStarted,
    StepDecision,
    ToolFinished,
    UnknownTool,
    ValidationResult,
)
from agentnb.messages import Image, Usage


@dataclass
class CallView:
    """Everything known about one tool call."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    unknown: UnknownTool | None = None
    validation: ValidationResult | None = None
    dedup: DedupDecision | None = None
    decisions: list[StepDecision] = field(default_factory=list)
    started: bool = False
    finished: ToolFinished | None = None
    images: list[Image] = field(default_factory=list)


@dataclass
class DepthView:
    """One recursion depth: a model call and the tool calls it asked for."""

    depth: int
    request: ModelRequest | None = None
    text: list[str] = field(default_factory=list)
    call_deltas: dict[int, list[str]] = field(default_factory=dict)  # index -> [name, args...]
    response: ModelResponse | None = None
    calls: dict[str, CallView] = field(default_factory=dict)
    notes: list[Event] = field(default_factory=list)
    final: str | None = None
    #: The structured answer's check (``output_type`` runs), and how the provider asked for it.
    output: Any = None
    output_mode: Any = None

    @property
    def done(self) -> bool:
        return self.response is not None and all(
            c.finished or c.unknown or (c.validation and not c.validation.ok) or (c.dedup and c.dedup.action == "skip")
            for c in self.calls.values()
        )


@dataclass
class TraceState:
    """The trace so far; ``dirty`` holds the depths changed since the last :meth:`clean`."""

    started: RunStarted | None = None
    finished: RunFinished | None = None
    depths: dict[int, DepthView] = field(default_factory=dict)
    tool_calls: int = 0
    usage: Usage = Usage()
    answer: str | None = None
    #: The last valid structured answer, as JSON text (``output_type`` runs).
    value: str | None = None
    events: list[Event] = field(default_factory=list)
    dirty: set[int] = field(default_factory=set)
    header_dirty: bool = True

    @property
    def current_depth(self) -> int:
        return max(self.depths, default=0)

    @property
    def status(self) -> str:
        if self.finished is not None:
            return self.finished.stop_reason
        return "running" if self.started is not None else "waiting"

    def view(self, depth: int) -> DepthView:
        v = self.depths.get(depth)
        if v is None:
            v = self.depths[depth] = DepthView(depth)
        return v

    def clean(self) -> None:
        self.dirty.clear()
        self.header_dirty = False

    def add(self, event: Event) -> None:
        """Fold one event in (dispatched on ``kind``: this runs for every event of a run)."""
        self.events.append(event)
        kind = event.kind
        if kind == "run_started":
            self.started = event  # type: ignore[assignment]
            self.header_dirty = True
            return
        if kind == "run_finished":
            self.finished = event  # type: ignore[assignment]
            self.tool_calls = event.tool_calls  # type: ignore[union-attr]
            self.usage = event.usage  # type: ignore[union-attr]
            self.header_dirty = True
            return
        depth = event.depth
        v = self.depths.get(depth)
        if v is None:
            v = self.depths[depth] = DepthView(depth)
        _FOLD[kind](self, v, event)
        self.dirty.add(depth)

    @staticmethod
    def _call(v: DepthView, call_id: str, name: str) -> CallView:
        c = v.calls.get(call_id)
        if c is None:  # a replayed transcript may lack the request event
            c = v.calls[call_id] = CallView(call_id, name, None)
        return c


def _request(s: TraceState, v: DepthView, e: Any) -> None:
    v.request = e
    s.header_dirty = True


def _text(s: TraceState, v: DepthView, e: Any) -> None:
    v.text.append(e.text)


def _call_delta(s: TraceState, v: DepthView, e: Any) -> None:
    parts = v.call_deltas.setdefault(e.index, [""])
    if e.name:
        parts[0] += e.name
    parts.append(e.arguments)


def _response(s: TraceState, v: DepthView, e: Any) -> None:
    v.response = e
    s.usage += e.usage
    s.header_dirty = True


def _requested(s: TraceState, v: DepthView, e: Any) -> None:
    v.calls[e.call_id] = CallView(e.call_id, e.name, e.arguments)
    s.tool_calls += 1
    s.header_dirty = True


def _setter(attr: str) -> Any:
    def fold(s: TraceState, v: DepthView, e: Any) -> None:
        setattr(TraceState._call(v, e.call_id, e.name), attr, e)

    return fold


def _started(s: TraceState, v: DepthView, e: Any) -> None:
    c = TraceState._call(v, e.call_id, e.name)
    c.started = True
    c.arguments = e.arguments


def _step(s: TraceState, v: DepthView, e: Any) -> None:
    if e.call_id is None:
        v.notes.append(e)
        return
    c = TraceState._call(v, e.call_id, "?")
    c.decisions.append(e)
    if e.arguments is not None:
        c.arguments = e.arguments


def _attachment(s: TraceState, v: DepthView, e: Any) -> None:
    TraceState._call(v, e.call_id, e.name).images.append(e.image)


def _note(s: TraceState, v: DepthView, e: Any) -> None:
    v.notes.append(e)


def _output(s: TraceState, v: DepthView, e: Any) -> None:
    v.output = e
    if e.ok:
        s.value = e.value


def _output_mode(s: TraceState, v: DepthView, e: Any) -> None:
    v.output_mode = e


def _final(s: TraceState, v: DepthView, e: Any) -> None:
    s.answer = v.final = e.text
    s.header_dirty = True


_FOLD: dict[str, Any] = {
    "model_request": _request,
    "text_delta": _text,
    "tool_call_delta": _call_delta,
    "model_response": _response,
    "tool_call": _requested,
    "unknown_tool": _setter("unknown"),
    "validation": _setter("validation"),
    "dedup": _setter("dedup"),
    "tool_started": _started,
    "tool_finished": _setter("finished"),
    "step_decision": _step,
    "attachment": _attachment,
    "limit_reached": _note,
    "direct_output": _note,
    "final_answer": _final,
    "output_validation": _output,
    "output_mode": _output_mode,
}
