"""A run's own events: its start and end, each model call and reply, each tool call and
result, the limit, the answer and its validation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentnb.events.base import DedupAction, StopReason, _EventBase
from agentnb.messages import Image, ToolCall, Usage


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
    #: The conversation this run belongs to (a :class:`~agentnb.run.session.Session`'s id).
    conversation_id: str | None = None
    #: The model asked for, where the provider names one (``gpt-4o-mini``).
    model: str | None = None
    #: Who serves the model, in OpenTelemetry's words (``openai``, ``anthropic``, ...).
    vendor: str | None = None
    #: This run's id (a fork names its parent by it); None in transcripts older than it.
    run_id: str | None = None


@dataclass(frozen=True, slots=True)
class ModelRequest(_EventBase):
    """The loop is about to ask the model (``tools`` is empty once the limit is reached)."""

    depth: int
    n_messages: int
    tools: tuple[str, ...]
    tool_choice: str
    #: The request's size in tokens (:mod:`agentnb.context.size`), None where it was not measured
    #: (transcripts older than the gauge).
    context_tokens: int | None = None
    #: The model's context window in tokens, None when unknown.
    context_window: int | None = None
    #: Whether ``context_tokens`` was counted by the model's own tokenizer (else estimated).
    context_exact: bool = False
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
    """A limit of the run was reached: the model must answer in text now (see :mod:`agentnb.control.limits`).

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
    #: it was asked to answer in text (see :mod:`agentnb.run.endings`).
    by: Literal["model", "agentnb"] = "model"


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
    #: Every budget of the run's ``UsageLimits`` it went past: ``(limit, value, used)``
    #: (:func:`agentnb.run.budget.overrun`); empty when it kept them all.
    overrun: tuple[tuple[str, float, float], ...] = ()
    #: The budget that took the tools away from the request whose reply is the run's answer
    #: (``"total_tokens"``...; :func:`agentnb.run.budget.without_tools_text`); None when the model
    #: answered with its tools on offer, or when agentnb wrote the answer.
    without_tools: str | None = None
