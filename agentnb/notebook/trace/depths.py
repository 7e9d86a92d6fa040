"""One depth of a trace, and one call in it, as the trace shows them (no widgets here).

:class:`~agentnb.notebook.trace.state.TraceState` folds the loop's events into these views.

>>> v = DepthView(0)
>>> v.done, v.seconds
(False, None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from agentnb.events import (
    CallDecision,
    DedupDecision,
    Event,
    LimitReached,
    ModelRequest,
    ModelResponse,
    StepDecision,
    ToolFinished,
    UnknownTool,
    ValidationResult,
)
from agentnb.messages import Image

#: Shortest generation (seconds after the first token) a speed is shown for.
MIN_SPAN = 0.05
#: Notes that say a reply's usage also counts requests streamed before it (a reply written
#: without the tools and dropped, a call asked again): its tokens did not take its stream's time.
_OTHER_REPLIES = frozenset({"route_switched", "call_repair"})


@dataclass(frozen=True, slots=True)
class Pause:
    """Where a step-through run waits: before the model call at ``depth`` or before a tool call."""

    target: Literal["model", "tool"]
    depth: int
    call_id: str | None = None


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
    source: str | None = None  # where the tool came from (``mcp:SERVER``), from ToolStarted
    original: dict[str, Any] | None = None  # the model's arguments, when the debugger edited them
    approval: Any = None  # ApprovalRequested, then ApprovalDecided
    over_limit: LimitReached | None = None  # asked for past a limit: never run, the model was told
    inner: Any = None  # the run of an agent this call ran (a TraceState), see notebook/nested.py

    @property
    def settled(self) -> bool:
        """Nothing more will happen to this call (run, refused, skipped or answered from before)."""
        return bool(
            self.finished
            or self.unknown
            or (self.validation and not self.validation.ok)
            or (self.dedup and self.dedup.action == "skip")
            or any(d.action == "skip" for d in self.decisions)
            or (self.approval is not None and getattr(self.approval, "decision", None) == "deny")
            or self.over_limit
        )


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
    ended: str | None = None  # the run's stop reason, when it ended with this depth unfinished
    dropped: bool = False  # a stop dropped this depth's tool calls from the transcript
    # Clock readings taken by the widget as events arrive (None in a replay).
    t_request: float | None = None  # when the model call was made (after any pause)
    t_first: float | None = None  # the first streamed text or call fragment
    t_last: float | None = None
    n_deltas: int = 0
    #: Why the model called a tool or answered (from providers that decide it themselves).
    decision: CallDecision | None = None
    #: The run was stopped (in the debugger) before this depth's model request was sent.
    unsent: bool = False
    #: An in-process model loading its weights for this request (seconds None: still loading).
    loading: Any = None

    @property
    def done(self) -> bool:
        return self.response is not None and all(c.settled for c in self.calls.values())

    @property
    def ttft(self) -> float | None:
        """Seconds from the model call to its first streamed fragment."""
        if self.t_request is None or self.t_first is None:
            return None
        return max(0.0, self.t_first - self.t_request)

    @property
    def tokens_per_second(self) -> tuple[float, bool] | None:
        """Output speed after the first token, and whether it is exact (from usage) or estimated
        from the number of streamed fragments (about one token each; also where the usage counts
        other replies). None while too short to tell."""
        ttft = self.ttft
        if ttft is None:
            return None
        r = self.response
        own = not any(n.kind in _OTHER_REPLIES for n in self.notes)
        if r is not None and own and r.usage.output_tokens and r.duration - ttft >= MIN_SPAN:
            return r.usage.output_tokens / (r.duration - ttft), True
        assert self.t_first is not None
        span = (self.t_last or self.t_first) - self.t_first
        return (self.n_deltas / span, False) if span >= MIN_SPAN and self.n_deltas > 1 else None

    @property
    def seconds(self) -> float | None:
        """The model call's duration plus the tool time (calls of one turn run concurrently);
        None until every call of the depth is settled."""
        if not self.done:
            return None
        assert self.response is not None
        tools = [c.finished.duration for c in self.calls.values() if c.finished is not None]
        return self.response.duration + (max(tools) if tools else 0.0)
