"""Events of the guidance for weak models: which route a call took, how it was decided, steered,
repaired or read from text, and which guidance step was skipped and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentnb.events.base import _EventBase


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
