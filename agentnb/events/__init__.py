"""Typed events: everything the loop does, as frozen dataclasses tagged by ``kind``.

Layer: above :mod:`agentnb.messages`; may import it and :mod:`agentnb.errors` only, so
every other part of agentnb can import the events.

The loop renders nothing; the widget, the magics, the terminal printer and the transcript
recorder all consume these. Every event carries the recursion ``depth`` it happened at
(depth 0 is the first model call of a run; each round of tool calls adds one).

>>> from agentnb.events import ToolStarted, event_from_dict
>>> e = ToolStarted(depth=1, call_id="c1", name="add", arguments={"a": 1})
>>> event_from_dict(e.to_dict()) == e
True
"""

from __future__ import annotations

from typing import Any, TypeAlias

from agentnb.events.base import DedupAction, StopReason, event_to_dict
from agentnb.events.control import (
    ApprovalDecided,
    ApprovalRequested,
    ContextCompacted,
    Forked,
    HistoryTrimmed,
    ModelLoading,
    ProviderAnswered,
    RequestRetried,
    SubAgentEvent,
    UserInterjected,
)
from agentnb.events.guidance import (
    CallDecision,
    CallRepair,
    CallsFromText,
    CallSteered,
    ConstraintDropped,
    GuidanceSkipped,
    RouteSwitched,
    StepDecision,
)
from agentnb.events.run import (
    AttachmentAdded,
    DedupDecision,
    DirectOutput,
    FinalAnswer,
    LimitReached,
    ModelRequest,
    ModelResponse,
    OutputMode,
    OutputValidated,
    ReasoningSummary,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallDelta,
    ToolCallRequested,
    ToolFinished,
    ToolStarted,
    UnknownTool,
    ValidationResult,
)
from agentnb.messages.codec import decoders, untag_v1
from agentnb.messages.fastinit import fast_init

__all__ = [
    "EVENT_TYPES",
    "ApprovalDecided",
    "ApprovalRequested",
    "AttachmentAdded",
    "CallDecision",
    "CallRepair",
    "CallSteered",
    "CallsFromText",
    "ConstraintDropped",
    "ContextCompacted",
    "DedupAction",
    "DedupDecision",
    "DirectOutput",
    "Event",
    "FinalAnswer",
    "Forked",
    "GuidanceSkipped",
    "HistoryTrimmed",
    "LimitReached",
    "ModelLoading",
    "ModelRequest",
    "ModelResponse",
    "OutputMode",
    "OutputValidated",
    "ProviderAnswered",
    "ReasoningSummary",
    "RequestRetried",
    "RouteSwitched",
    "RunFinished",
    "RunStarted",
    "StepDecision",
    "StopReason",
    "SubAgentEvent",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallRequested",
    "ToolFinished",
    "ToolStarted",
    "UnknownTool",
    "UserInterjected",
    "ValidationResult",
    "event_from_dict",
    "event_to_dict",
]


Event: TypeAlias = (
    RunStarted
    | ModelRequest
    | TextDelta
    | ToolCallDelta
    | ModelResponse
    | ToolCallRequested
    | UnknownTool
    | ValidationResult
    | DedupDecision
    | StepDecision
    | CallDecision
    | ToolStarted
    | ToolFinished
    | AttachmentAdded
    | LimitReached
    | DirectOutput
    | ReasoningSummary
    | FinalAnswer
    | OutputMode
    | OutputValidated
    | RunFinished
    | RouteSwitched
    | ConstraintDropped
    | CallRepair
    | CallSteered
    | CallsFromText
    | ApprovalRequested
    | ApprovalDecided
    | GuidanceSkipped
    | RequestRetried
    | ModelLoading
    | ProviderAnswered
    | SubAgentEvent
    | HistoryTrimmed
    | ContextCompacted
    | Forked
    | UserInterjected
)

EVENT_TYPES: dict[str, type] = {
    cls.__dataclass_fields__["kind"].default: cls  # type: ignore[attr-defined]
    for cls in Event.__args__  # type: ignore[attr-defined]
}


def event_from_dict(d: dict[str, Any], version: int = 2) -> Event:
    """Rebuild an event from :func:`event_to_dict` output; ``version`` is the transcript's.

    Each value is read by its field's declared type, so model data (argument keys such as
    ``__image__``) can never turn into objects.
    """
    kind = d.get("kind")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown event kind {kind!r:.60}")
    read = decoders(cls)
    unknown = set(d) - set(read) - {"kind"}
    if unknown:
        raise ValueError(f"{d['kind']} event has unknown fields {sorted(unknown)}")
    kwargs = {}
    for k, v in d.items():  # every version is type-checked: views show these values
        if k != "kind":
            try:
                kwargs[k] = read[k](untag_v1(v) if version < 2 else v)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise ValueError(f"{d['kind']}.{k}: {_why(exc)}") from None
    return cls(**kwargs)  # type: ignore[no-any-return]


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}" if exc.args else "a field is missing"
    return str(exc) or type(exc).__name__


# A sub-agent's event is an event again (and so on down): read it back as one.
def _nested_event(v: Any, version: int = 2) -> Any:
    return event_from_dict(v, version) if isinstance(v, dict) else v


decoders(SubAgentEvent)["event"] = _nested_event

for _cls in EVENT_TYPES.values():  # cheaper construction, same frozen dataclasses
    fast_init(_cls)
