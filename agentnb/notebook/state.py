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
    AttachmentAdded,
    DedupDecision,
    DirectOutput,
    Event,
    FinalAnswer,
    LimitReached,
    ModelRequest,
    ModelResponse,
    RunFinished,
    RunStarted,
    StepDecision,
    TextDelta,
    ToolCallDelta,
    ToolCallRequested,
    ToolFinished,
    ToolStarted,
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
        """Fold one event in."""
        self.events.append(event)
        match event:
            case RunStarted():
                self.started = event
                self.header_dirty = True
                return
            case RunFinished():
                self.finished = event
                self.tool_calls = event.tool_calls
                self.usage = event.usage
                self.header_dirty = True
                return
            case FinalAnswer(text=text):
                self.answer = text
                self.view(event.depth).final = text
                self.header_dirty = True
            case _:
                self._add_to_depth(event)
        self.dirty.add(event.depth)

    def _add_to_depth(self, event: Event) -> None:
        v = self.view(event.depth)
        match event:
            case ModelRequest():
                v.request = event
                self.header_dirty = True
            case TextDelta(text=text):
                v.text.append(text)
            case ToolCallDelta(index=i, name=name, arguments=args):
                parts = v.call_deltas.setdefault(i, [""])
                if name:
                    parts[0] += name
                parts.append(args)
            case ModelResponse(usage=u):
                v.response = event
                self.usage += u
                self.header_dirty = True
            case ToolCallRequested(call_id=cid, name=name, arguments=args):
                v.calls[cid] = CallView(cid, name, args)
                self.tool_calls += 1
                self.header_dirty = True
            case UnknownTool() | ValidationResult() | DedupDecision() | ToolStarted() | ToolFinished():
                c = self._call(v, event.call_id, event.name)
                if isinstance(event, UnknownTool):
                    c.unknown = event
                elif isinstance(event, ValidationResult):
                    c.validation = event
                elif isinstance(event, DedupDecision):
                    c.dedup = event
                elif isinstance(event, ToolStarted):
                    c.started = True
                    c.arguments = event.arguments
                else:
                    c.finished = event
            case StepDecision(call_id=cid) if cid is not None:
                c = self._call(v, cid, "?")
                c.decisions.append(event)
                if event.arguments is not None:
                    c.arguments = event.arguments
            case AttachmentAdded(image=image):
                self._call(v, event.call_id, event.name).images.append(image)
            case LimitReached() | DirectOutput() | StepDecision():
                v.notes.append(event)
            case _:
                pass

    @staticmethod
    def _call(v: DepthView, call_id: str, name: str) -> CallView:
        c = v.calls.get(call_id)
        if c is None:  # a replayed transcript may lack the request event
            c = v.calls[call_id] = CallView(call_id, name, None)
        return c
