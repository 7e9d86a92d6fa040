"""Budgets for one run: requests, tokens, tool calls, cost and wall time.

``UsageLimits`` is given to an :class:`~agentnb.Agent` (``limits=``) or to one run
(``run(..., limits=...)``, which replaces the agent's). Every field is ``None`` (no limit) by
default, except the tool-call limit, which keeps its one name and one default:
``UsageLimits.tool_calls`` *is* ``max_tool_calls`` (unset, the agent's ``max_tool_calls``,
default 10, applies).

Reaching a limit ends the run the way the tool-call limit does: the pending tool calls of the
step still run, then, if one more model request is allowed, the model is asked once more with
no tools and must answer in text. ``stop_reason`` is ``"limit"`` and the
:class:`~agentnb.events.LimitReached` event names the limit (``limit="total_tokens"``...).

* ``requests``: model requests in the run; the last one allowed is made without tools.
* ``input_tokens`` / ``output_tokens`` / ``total_tokens`` / ``cost`` (in US dollars, priced
  by :mod:`agentnb.cost`) / ``seconds`` (wall time since the run started): checked before each
  model request. Usage is only known after a request, so the final text request (one request)
  can go past a token, cost or time budget; bound ``requests`` too for a hard count. A ``cost``
  budget with a model whose price is unknown counts as reached (it cannot be kept).

>>> from agentnb import Agent, UsageLimits, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def step(i: int) -> int:
...     '''Take a step.'''
...     return i + 1
>>> model = ScriptedProvider([call("step", i=1), "I stopped at 2", "never asked"])
>>> r = Agent(model, tools=[step], limits=UsageLimits(requests=2)).run("walk")
>>> r.stop_reason, r.limit, r.output, len(model.requests), model.requests[1].tools
('limit', 'requests', 'I stopped at 2', 2, ())
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError


@dataclass(frozen=True, slots=True)
class UsageLimits:
    """Per-run budgets; ``None`` means no limit (``tool_calls``: the agent's ``max_tool_calls``).

    >>> UsageLimits(total_tokens=1000, cost=0.05)
    UsageLimits(total_tokens=1000, cost=0.05)
    """

    requests: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    tool_calls: int | None = None
    cost: float | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            whole = f.name not in ("cost", "seconds")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise UserError(f"UsageLimits.{f.name} must be a number >= 0 or None, not {value!r}")
            if whole and not isinstance(value, int):
                raise UserError(f"UsageLimits.{f.name} must be a whole number >= 0 or None, not {value!r}")

    def __repr__(self) -> str:
        set_ = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if getattr(self, f.name) is not None
        )
        return f"UsageLimits({set_})"

    @property
    def budgets(self) -> bool:
        """Whether any limit besides ``tool_calls`` is set (the loop then checks them)."""
        return any(getattr(self, f.name) is not None for f in dataclasses.fields(self) if f.name != "tool_calls")


def check_limits(value: Any) -> UsageLimits | None:
    """``limits=``: a :class:`UsageLimits`, a dict of its fields, or None."""
    if value is None or isinstance(value, UsageLimits):
        return value
    if isinstance(value, dict):
        try:
            return UsageLimits(**value)
        except TypeError as exc:
            raise UserError(f"limits: {exc}") from None
    raise UserError(f"limits must be a UsageLimits (or a dict of its fields), not {type(value).__name__}")


def reached(
    limits: UsageLimits, requests: int, usage: Any, cost: float | None, priced: bool, elapsed: float
) -> str | None:
    """The first budget ``limits`` says is used up (the name of the limit), else None.

    ``requests`` is reached when at most one request is left (the last one goes without tools).
    """
    if limits.requests is not None and requests >= limits.requests - 1:
        return "requests"
    if limits.input_tokens is not None and usage.input_tokens >= limits.input_tokens:
        return "input_tokens"
    if limits.output_tokens is not None and usage.output_tokens >= limits.output_tokens:
        return "output_tokens"
    if limits.total_tokens is not None and usage.total_tokens >= limits.total_tokens:
        return "total_tokens"
    if limits.cost is not None and (not priced or (cost or 0.0) >= limits.cost):
        return "cost"
    if limits.seconds is not None and elapsed >= limits.seconds:
        return "seconds"
    return None


def used(
    limit: str, limits: UsageLimits, requests: int, usage: Any, cost: float | None, elapsed: float
) -> tuple[float | None, float | None]:
    """(the limit's value, what was used) for a :class:`~agentnb.events.LimitReached` event."""
    value = getattr(limits, limit)
    amount: Any = {
        "requests": requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cost": cost,
        "seconds": round(elapsed, 3),
    }.get(limit)
    return value, amount
