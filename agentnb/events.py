"""Typed events: everything the loop does, as frozen dataclasses tagged by ``kind``.

The loop renders nothing; the widget, the magics, the terminal printer and the transcript
recorder all consume these. Every event carries the recursion ``depth`` it happened at
(depth 0 is the first model call of a run; each round of tool calls adds one).

>>> from agentnb.events import ToolStarted, event_from_dict
>>> e = ToolStarted(depth=1, call_id="c1", name="add", arguments={"a": 1})
>>> event_from_dict(e.to_dict()) == e
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from agentnb.codec import decode_v1, decoders, encode
from agentnb.fastinit import fast_init
from agentnb.messages import Image, ToolCall, Usage


class _EventBase:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """This event as JSON-ready data (see :func:`event_from_dict`)."""
        return event_to_dict(self)  # type: ignore[arg-type]


StopReason: TypeAlias = Literal["answer", "direct_output", "limit", "cancelled", "error", "invalid_output"]
DedupAction: TypeAlias = Literal["execute", "skip", "allow_repeat"]


@dataclass(frozen=True, slots=True)
class RunStarted(_EventBase):
    depth: int
    provider: str
    tools: tuple[str, ...]
    max_tool_calls: int
    n_messages: int
    prompt: str | None = None  # the new prompt's text, after any {var} interpolation
    system: str | None = None
    backend: str | None = None  # the provider's class, e.g. "UnTooled over TransformersProvider"
    turn: int = 1  # 2 and up: the run continues an earlier conversation
    kind: Literal["run_started"] = "run_started"
    #: The agent's name (``Agent(name=...)``); spans are named ``invoke_agent {name}``.
    agent_name: str | None = None
    #: The conversation this run belongs to (a :class:`~agentnb.session.Session`'s id).
    conversation_id: str | None = None
    #: The model asked for, where the provider names one (``gpt-4o-mini``).
    model: str | None = None
    #: Who serves the model, in OpenTelemetry's words (``openai``, ``anthropic``, ...).
    vendor: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest(_EventBase):
    """The loop is about to ask the model (``tools`` is empty once the limit is reached)."""

    depth: int
    n_messages: int
    tools: tuple[str, ...]
    tool_choice: str
    kind: Literal["model_request"] = "model_request"


@dataclass(frozen=True, slots=True)
class TextDelta(_EventBase):
    depth: int
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True, slots=True)
class ToolCallDelta(_EventBase):
    """A fragment of a streamed tool call (name and/or argument text), by call index."""

    depth: int
    index: int
    name: str | None
    arguments: str
    kind: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True, slots=True)
class ModelResponse(_EventBase):
    depth: int
    text: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    duration: float
    kind: Literal["model_response"] = "model_response"
    #: Why the model stopped (``stop``, ``tool_calls``, ``length``), when the provider said.
    finish_reason: str | None = None
    #: The model that answered, when the provider reported it.
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallRequested(_EventBase):
    depth: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class UnknownTool(_EventBase):
    depth: int
    call_id: str
    name: str
    available: tuple[str, ...]
    kind: Literal["unknown_tool"] = "unknown_tool"


@dataclass(frozen=True, slots=True)
class ValidationResult(_EventBase):
    """Arguments checked against the tool's JSON Schema; ``errors`` empty means valid."""

    depth: int
    call_id: str
    name: str
    errors: tuple[str, ...]
    kind: Literal["validation"] = "validation"

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class DedupDecision(_EventBase):
    depth: int
    call_id: str
    name: str
    fingerprint: str
    seen_before: bool
    action: DedupAction
    kind: Literal["dedup"] = "dedup"


@dataclass(frozen=True, slots=True)
class StepDecision(_EventBase):
    """A step controller (the debugger) decided what to do before a model or tool call.

    ``stop``: the run was stopped there; for a model call, the request was never sent.
    """

    depth: int
    target: Literal["model", "tool"]
    action: Literal["run", "skip", "edit", "stop"]
    call_id: str | None = None
    arguments: dict[str, Any] | None = None
    kind: Literal["step_decision"] = "step_decision"


@dataclass(frozen=True, slots=True)
class CallDecision(_EventBase):
    """Why a model that chooses for itself called a tool or answered in text (a provider's event).

    ``score >= threshold`` means "call". ``ranking`` lists the tools best first, each with how
    much better it explains the request than no tool does (positive: better); ``tool`` is the
    one the call will use, when it was picked before the arguments were written.
    """

    depth: int
    action: Literal["call", "answer"]
    reason: str
    score: float | None = None
    threshold: float | None = None
    call_share: float | None = None
    ranking: tuple[tuple[str, float], ...] = ()
    tool: str | None = None
    kind: Literal["call_decision"] = "call_decision"


@dataclass(frozen=True, slots=True)
class ToolStarted(_EventBase):
    depth: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    kind: Literal["tool_started"] = "tool_started"
    #: Where the tool comes from when not from Python, e.g. ``"mcp:files"``.
    source: str | None = None


@dataclass(frozen=True, slots=True)
class ToolFinished(_EventBase):
    depth: int
    call_id: str
    name: str
    result: str
    error: str | None
    duration: float
    #: Structured data the tool returned beside its text (an MCP tool's ``structuredContent``).
    structured: Any = None
    kind: Literal["tool_finished"] = "tool_finished"


@dataclass(frozen=True, slots=True)
class AttachmentAdded(_EventBase):
    depth: int
    call_id: str
    name: str
    image: Image
    kind: Literal["attachment"] = "attachment"


@dataclass(frozen=True, slots=True)
class LimitReached(_EventBase):
    """A limit of the run was reached: the model must answer in text now (see :mod:`agentnb.limits`).

    ``limit`` names it (``tool_calls``, ``requests``, ``total_tokens``, ``cost``, ``seconds``...);
    ``value`` is the limit and ``used`` what the run had used (for budgets other than tool calls).
    """

    depth: int
    max_tool_calls: int
    tool_calls: int
    kind: Literal["limit_reached"] = "limit_reached"
    limit: str = "tool_calls"
    value: float | None = None
    used: float | None = None


@dataclass(frozen=True, slots=True)
class DirectOutput(_EventBase):
    depth: int
    call_id: str
    name: str
    text: str
    kind: Literal["direct_output"] = "direct_output"


@dataclass(frozen=True, slots=True)
class ReasoningSummary(_EventBase):
    """A summary of the model's hidden reasoning, where the API gives one (never the reasoning)."""

    depth: int
    text: str
    kind: Literal["reasoning_summary"] = "reasoning_summary"


@dataclass(frozen=True, slots=True)
class FinalAnswer(_EventBase):
    depth: int
    text: str
    kind: Literal["final_answer"] = "final_answer"
    #: Who wrote ``text``: the model, or agentnb when the model would only call tools after
    #: it was asked to answer in text (see :mod:`agentnb.endings`).
    by: Literal["model", "agentnb"] = "model"


@dataclass(frozen=True, slots=True)
class RouteSwitched(_EventBase):
    """A provider changed how it asks for tool calls, for the rest of its life.

    ``OpenAIProvider(tool_calling="auto")`` emits it when the server answers that the model
    takes no ``tools``: that step and every later one go through the UnTooled layer.
    """

    depth: int
    provider: str
    route: str
    reason: str
    kind: Literal["route_switched"] = "route_switched"


@dataclass(frozen=True, slots=True)
class ConstraintDropped(_EventBase):
    """A provider stopped asking its server to constrain replies (the server refused or ignored it)."""

    depth: int
    provider: str
    mechanism: str
    reason: str
    kind: Literal["constraint_dropped"] = "constraint_dropped"


@dataclass(frozen=True, slots=True)
class CallRepair(_EventBase):
    """A constrained call broke its tool's schema (the server's grammar left a keyword out), so
    the provider asked the model once more, with the errors, before the loop saw the call.

    ``rejected`` are the arguments that failed; ``repaired`` says whether the model's new call
    validates. Either way the call the loop gets is one the model wrote (still invalid: the
    loop reports it back as usual); ``detail`` says what happened in words.
    """

    depth: int
    provider: str
    name: str
    rejected: dict[str, Any] | None
    errors: tuple[str, ...]
    repaired: bool
    detail: str = ""
    kind: Literal["call_repair"] = "call_repair"


@dataclass(frozen=True, slots=True)
class CallSteered(_EventBase):
    """A call was decoded token by token on a server, with the in-process steering
    (:mod:`agentnb.providers.openai.steer`): the server proposed each token and its
    alternatives; agentnb kept the grammar and favoured copies of the request.

    ``requests``: the server requests it took; ``tokens``: the tokens read; ``changed``: the
    places where steering chose another alternative than the server's own token (each one
    started a new request); ``detail`` names them.
    """

    depth: int
    provider: str
    name: str
    requests: int
    tokens: int
    changed: int
    detail: str = ""
    kind: Literal["call_steered"] = "call_steered"


@dataclass(frozen=True, slots=True)
class CallsFromText(_EventBase):
    """A native reply held its tool calls as text (``<tool_call>{...}</tool_call>``, a bare
    JSON call, ...): the server passed the tools to the model but did not parse its calls.
    The provider read them (:mod:`agentnb.providers.openai.text_calls`) and the loop runs them.
    """

    depth: int
    provider: str
    names: tuple[str, ...]
    detail: str = ""
    kind: Literal["calls_from_text"] = "calls_from_text"


@dataclass(frozen=True, slots=True)
class OutputMode(_EventBase):
    """How a provider asks for structured output (``output_type``): reported by the provider.

    ``mode`` is ``response_format`` (the API's JSON Schema response format), ``tool`` (a
    final-answer tool), ``grammar`` (decoded under the schema's grammar) or ``prompt`` (the
    schema is only described in the prompt); ``detail`` says more (strict or not, why).
    """

    depth: int
    mode: str
    detail: str = ""
    kind: Literal["output_mode"] = "output_mode"


@dataclass(frozen=True, slots=True)
class OutputValidated(_EventBase):
    """The final answer checked against ``output_type``; ``errors`` empty means valid.

    ``value`` is the valid value as JSON text (None when invalid); ``retry`` is True when the
    errors were sent back to the model for another try.
    """

    depth: int
    type_name: str
    errors: tuple[str, ...]
    value: str | None = None
    retry: bool = False
    kind: Literal["output_validation"] = "output_validation"

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class RunFinished(_EventBase):
    depth: int
    stop_reason: StopReason
    tool_calls: int
    usage: Usage
    duration: float
    error: str | None = None
    kind: Literal["run_finished"] = "run_finished"


@dataclass(frozen=True, slots=True)
class ApprovalRequested(_EventBase):
    """A call needs a decision before it runs (see :mod:`agentnb.approval`); the run waits."""

    depth: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    approver: str
    kind: Literal["approval_requested"] = "approval_requested"


@dataclass(frozen=True, slots=True)
class ApprovalDecided(_EventBase):
    """The decision on a call that needed approval: ``approve``, ``deny`` or ``edit``.

    ``by`` says who decided (``"widget"``, ``"terminal"``, ``"policy NAME"``, ``"unattended"``);
    ``reason`` is what the model reads for a denial; ``arguments`` the edited arguments.
    """

    depth: int
    call_id: str
    name: str
    decision: Literal["approve", "deny", "edit"]
    by: str
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    kind: Literal["approval_decided"] = "approval_decided"


@dataclass(frozen=True, slots=True)
class GuidanceSkipped(_EventBase):
    """A guidance step (tool ranking, the call-or-answer measurements, steering) was skipped
    on this step: its estimated cost (``estimate`` seconds, from what such requests cost on
    this server) would take the step past its ``budget`` (:mod:`agentnb.providers.openai.cost`).
    The step went on without it."""

    depth: int
    provider: str
    step: str
    reason: str
    estimate: float
    budget: float
    kind: Literal["guidance_skipped"] = "guidance_skipped"


@dataclass(frozen=True, slots=True)
class RequestRetried(_EventBase):
    """A provider's request failed in a way worth retrying (429, 5xx, a dropped connection) and
    was sent again after ``delay`` seconds (:mod:`agentnb.providers.retry`).

    ``attempt`` counts the retries (1 first) out of ``retries``; ``status`` is the HTTP status
    (None for a connection failure).
    """

    depth: int
    provider: str
    attempt: int
    retries: int
    reason: str
    delay: float
    status: int | None = None
    kind: Literal["request_retried"] = "request_retried"

    def describe(self) -> str:
        """In words, e.g. ``rate limited, retrying in 2.0 s (retry 1 of 2)``."""
        return f"{self.reason}, retrying in {self.delay:.1f} s (retry {self.attempt} of {self.retries})"


@dataclass(frozen=True, slots=True)
class ProviderAnswered(_EventBase):
    """Which provider of a :class:`~agentnb.providers.fallback.FallbackProvider` answered this
    step (``index``: its place, 0 the preferred); ``passed`` lists the providers tried or skipped
    before it, each with why: ``(name, reason)``."""

    depth: int
    provider: str
    index: int
    passed: tuple[tuple[str, str], ...] = ()
    kind: Literal["provider_answered"] = "provider_answered"


@dataclass(frozen=True, slots=True)
class SubAgentEvent(_EventBase):
    """An event of an agent run by a tool of this run (:meth:`agentnb.Agent.as_tool`).

    ``call_id`` is this run's tool call that runs the inner agent, ``agent`` its name and
    ``event`` the inner run's own event (itself a ``SubAgentEvent`` one level further down).
    The inner run's events arrive live, between the call's ``tool_started`` and
    ``tool_finished``; they start with its ``run_started`` and end with its ``run_finished``.
    """

    depth: int
    call_id: str
    agent: str
    event: Any
    kind: Literal["sub_agent"] = "sub_agent"


@dataclass(frozen=True, slots=True)
class HistoryTrimmed(_EventBase):
    """Old turns of a conversation were left out so it fits the model's context window.

    Whole turns go, oldest first (a tool call never without its result); the system prompt
    stays. ``dropped_turns`` / ``dropped_messages`` say how much; ``kept_messages`` is what the
    model reads now; ``reason`` names the bound (``max_messages=40``, ``max_tokens=2000``).
    """

    depth: int
    dropped_turns: int
    dropped_messages: int
    kept_messages: int
    reason: str
    kind: Literal["history_trimmed"] = "history_trimmed"


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
    | ProviderAnswered
    | SubAgentEvent
    | HistoryTrimmed
)

EVENT_TYPES: dict[str, type] = {
    cls.__dataclass_fields__["kind"].default: cls  # type: ignore[attr-defined]
    for cls in Event.__args__  # type: ignore[attr-defined]
}


def event_to_dict(event: Event) -> dict[str, Any]:
    """An event as JSON data: fields by name, values without type tags (see :mod:`agentnb.codec`)."""
    return {f.name: encode(getattr(event, f.name)) for f in dataclasses.fields(event)}


def event_from_dict(d: dict[str, Any], version: int = 2) -> Event:
    """Rebuild an event from :func:`event_to_dict` output; ``version`` is the transcript's.

    Each value is read by its field's declared type, so model data (argument keys such as
    ``__image__``) can never turn into objects.
    """
    cls = EVENT_TYPES.get(d.get("kind"))  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown event kind {d.get('kind')!r}")
    if version < 2:
        kwargs = {k: decode_v1(v) for k, v in d.items() if k != "kind"}
    else:
        read = decoders(cls)
        unknown = set(d) - set(read)
        if unknown:
            raise ValueError(f"{d['kind']} event has unknown fields {sorted(unknown)}")
        kwargs = {k: read[k](v) for k, v in d.items() if k != "kind"}
    return cls(**kwargs)  # type: ignore[no-any-return]


# A sub-agent's event is an event again (and so on down): read it back as one.
def _nested_event(v: Any, version: int = 2) -> Any:
    return event_from_dict(v, version) if isinstance(v, dict) else v


decoders(SubAgentEvent)["event"] = _nested_event

for _cls in EVENT_TYPES.values():  # cheaper construction, same frozen dataclasses
    fast_init(_cls)
