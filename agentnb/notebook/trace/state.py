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
    Event,
    Forked,
    LimitReached,
    ModelRequest,
    RunFinished,
    RunStarted,
)
from agentnb.messages import Usage
from agentnb.notebook.trace.depths import CallView, DepthView, Pause

__all__ = ["CallView", "DepthView", "Pause", "TraceState"]


@dataclass
class TraceState:
    """The trace so far; ``dirty`` holds the depths changed since the last :meth:`clean`."""

    started: RunStarted | None = None
    finished: RunFinished | None = None
    depths: dict[int, DepthView] = field(default_factory=dict)
    tool_calls: int = 0
    requested: int = 0  # tool calls the model asked for that were handled (as the loop counts)
    usage: Usage = Usage()
    answer: str | None = None
    #: The last valid structured answer, as JSON text (``output_type`` runs).
    value: str | None = None
    events: list[Event] = field(default_factory=list)
    dirty: set[int] = field(default_factory=set)
    header_dirty: bool = True
    pause: Pause | None = None  # where a step-through run waits now
    limit: LimitReached | None = None  # the limit the run reached, if any
    live_from: int = 0  # a fork: its steps before this one are the parent's recording
    lineage: Forked | None = None  # a fork: what it edited, where
    #: ``(depth, tokens)`` of each of the run's own requests that was measured (the gauge), in order.
    context: list[tuple[int, int]] = field(default_factory=list)
    #: The last measured request (its window and whether its count is exact).
    last_request: ModelRequest | None = None

    @property
    def model_calls(self) -> int:
        """Model calls made so far, those of agents run as tools included (as their tokens and
        tool calls are); one the debugger holds back is not made yet."""
        n = sum(1 for v in self.depths.values() if v.request is not None and not v.unsent)
        n += sum(c.inner.model_calls for v in self.depths.values() for c in v.calls.values() if c.inner is not None)
        return n - 1 if self.pause is not None and self.pause.target == "model" else n

    @property
    def recorded_calls(self) -> int:
        """A fork's model calls taken from its parent's recording (never sent), 0 for a run:
        those of its recorded steps, agents' runs as tools included."""
        return sum(_made(v) for d, v in self.depths.items() if d < self.live_from)

    @property
    def edited_calls(self) -> int:
        """1 when a fork's edit gave the reply of its fork step (never sent), else 0."""
        f = self.lineage
        v = self.depths.get(f.forked_at) if f is not None and f.edited_reply else None
        if v is None or v.request is None or v.unsent:
            return 0
        return 0 if self.pause is not None and self.pause.target == "model" and self.pause.depth == v.depth else 1

    @property
    def dropped_calls(self) -> int:
        """Tool calls handled, then dropped from the transcript by a stop."""
        return max(0, self.requested - self.tool_calls) if self.finished is not None else 0

    def set_pause(self, pause: Pause | None, now: float | None = None) -> None:
        """Show where the run waits (None: it goes on); a model call starts when its pause ends."""
        old = self.pause
        self.pause = pause
        for p in (old, pause):
            if p is not None and p.depth in self.depths:
                self.dirty.add(p.depth)
        if old is not None and old.target == "model" and pause is None and old.depth in self.depths:
            self.depths[old.depth].t_request = now
        self.header_dirty = True

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

    def add(self, event: Event, now: float | None = None) -> None:
        """Fold one event in (dispatched on ``kind``: this runs for every event of a run).

        ``now`` is the widget's clock reading, for time to first token and speed.
        """
        self.events.append(event)
        kind = event.kind
        if kind == "run_started":
            self.started = event  # type: ignore[assignment]
            self.header_dirty = True
            return
        if kind == "run_finished":
            self._finish(event)  # type: ignore[arg-type]
            return
        if kind == "forked":
            self.live_from = event.live_from  # type: ignore[union-attr]
            self.lineage = event  # type: ignore[assignment]
            self.header_dirty = True
        depth = event.depth
        v = self.depths.get(depth)
        if v is None:
            v = self.depths[depth] = DepthView(depth)
        if now is not None:
            if kind == "model_request":
                v.t_request = now
            elif kind in ("text_delta", "tool_call_delta"):
                v.t_first = now if v.t_first is None else v.t_first
                v.t_last = now
                v.n_deltas += 1
        _FOLD.get(kind, _note)(self, v, event)  # an unknown kind is kept as a note
        self.dirty.add(depth)

    def _finish(self, event: RunFinished) -> None:
        self.finished = event
        self.pause = None
        self.tool_calls = event.tool_calls
        self.usage = event.usage
        self.header_dirty = True
        last = max(self.depths, default=None)
        for v in self.depths.values():  # nothing still "runs" once the run has ended
            if (v.request is not None and v.response is None) or any(not c.settled for c in v.calls.values()):
                v.ended = event.stop_reason
                self.dirty.add(v.depth)
        if last is not None and self.dropped_calls and self.depths[last].calls:
            self.depths[last].dropped = True
            self.dirty.add(last)

    @staticmethod
    def _call(v: DepthView, call_id: str, name: str) -> CallView:
        c = v.calls.get(call_id)
        if c is None:  # a replayed transcript may lack the request event
            c = v.calls[call_id] = CallView(call_id, name, None)
        return c


def _made(v: DepthView) -> int:
    """The model calls of one depth: its own (if sent) and those of agents its calls ran."""
    own = 1 if v.request is not None and not v.unsent else 0
    return own + sum(c.inner.model_calls for c in v.calls.values() if c.inner is not None)


def _request(s: TraceState, v: DepthView, e: Any) -> None:
    v.request = e
    s.header_dirty = True
    if e.context_tokens is not None:
        s.context.append((e.depth, e.context_tokens))
        s.last_request = e


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
    s.requested += 1
    s.header_dirty = True


def _setter(attr: str) -> Any:
    def fold(s: TraceState, v: DepthView, e: Any) -> None:
        setattr(TraceState._call(v, e.call_id, e.name), attr, e)

    return fold


def _started(s: TraceState, v: DepthView, e: Any) -> None:
    c = TraceState._call(v, e.call_id, e.name)
    c.started = True
    if c.arguments != e.arguments and c.original is None and c.arguments is not None:
        c.original = c.arguments
    c.arguments = e.arguments
    c.source = e.source


def _step(s: TraceState, v: DepthView, e: Any) -> None:
    if e.target == "model" and e.action == "stop":
        v.unsent = True
    if e.call_id is None:
        v.notes.append(e)
        return
    c = TraceState._call(v, e.call_id, "?")
    c.decisions.append(e)
    if e.arguments is not None:
        if c.original is None:
            c.original = c.arguments
        c.arguments = e.arguments


def _approval(s: TraceState, v: DepthView, e: Any) -> None:
    c = TraceState._call(v, e.call_id, e.name)
    c.approval = e
    if getattr(e, "arguments", None) is not None and e.kind == "approval_decided":
        if c.original is None:
            c.original = c.arguments
        c.arguments = e.arguments


def _attachment(s: TraceState, v: DepthView, e: Any) -> None:
    TraceState._call(v, e.call_id, e.name).images.append(e.image)


def _sub_agent(s: TraceState, v: DepthView, e: Any) -> None:
    c = TraceState._call(v, e.call_id, e.agent)
    if c.inner is None:
        c.inner = TraceState()
    c.inner.add(e.event)


def _note(s: TraceState, v: DepthView, e: Any) -> None:
    v.notes.append(e)


def _loading(s: TraceState, v: DepthView, e: Any) -> None:
    """The weights loading (the wait says so), then loaded (a note says how long it took)."""
    v.loading = e
    if e.seconds is not None:
        v.notes.append(e)


def _limit(s: TraceState, v: DepthView, e: Any) -> None:
    """A limit reached after this depth's calls were asked for: those the loop never took up
    (past the budget) were answered "not executed" and are not counted, not dropped by a stop."""
    v.notes.append(e)
    s.limit = s.limit or e
    for c in v.calls.values():
        if not (c.validation or c.unknown or c.dedup or c.decisions or c.started or c.finished or c.approval):
            c.over_limit = e
            s.tool_calls -= 1
            s.requested -= 1
            s.header_dirty = True


def _output(s: TraceState, v: DepthView, e: Any) -> None:
    v.output = e
    if e.ok:
        s.value = e.value


def _output_mode(s: TraceState, v: DepthView, e: Any) -> None:
    v.output_mode = e


def _decision(s: TraceState, v: DepthView, e: Any) -> None:
    v.decision = e


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
    "limit_reached": _limit,
    "direct_output": _note,
    "reasoning_summary": _note,
    "final_answer": _final,
    "output_validation": _output,
    "output_mode": _output_mode,
    "call_decision": _decision,
    "route_switched": _note,
    "calls_from_text": _note,
    "constraint_dropped": _note,
    "call_repair": _note,
    "call_steered": _note,
    "request_retried": _note,
    "model_loading": _loading,
    "provider_answered": _note,
    "approval_requested": _approval,
    "approval_decided": _approval,
    "guidance_skipped": _note,
    "sub_agent": _sub_agent,
}
