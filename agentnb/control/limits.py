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
* ``input_tokens`` / ``output_tokens`` / ``total_tokens``: held before each request
  (:mod:`agentnb.run.budget`): the request's input tokens are estimated, the last request that fits
  goes without tools, one that would not fit is never sent, and the reply is bounded to what is
  left. An estimate can fall short (a remote tokenizer); the run then says so
  (``RunResult.overrun``).
* ``cost`` (in US dollars, priced by :mod:`agentnb.control.cost`) / ``seconds`` (wall time since the run
  started): checked before each model request, so the last request can go past them (said in
  ``RunResult.overrun`` too). A ``cost`` budget with a model whose price is unknown counts as
  reached (it cannot be kept).

An agent used as a tool (:meth:`agentnb.Agent.as_tool`) spends its caller's budgets: its
requests, tokens, cost and tool calls count toward every run above it as they happen, and it
stops when any of those runs' limits is reached, leaving each caller one request for its own
answer. Agent tools called in parallel share what their caller has left (:class:`Ledger`).

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
from collections.abc import Iterator
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import Usage


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


class Ledger:
    """What a run, and the runs its tools started, have used against its limits, kept live.

    A run started by an agent tool (:meth:`agentnb.Agent.as_tool`) gets a ledger whose
    ``above`` is its caller's: every request, token and tool call it spends is charged to its
    own ledger and to every caller's at once, and before each model request and each tool call
    it checks its callers' limits as well as its own. So parallel inner runs share what their
    callers have left instead of each getting all of it, and a caller's limit holds across them.
    A request is charged when it is decided on, before any wait, so two parallel runs cannot
    both take the last one. An inner run leaves each caller one request for its own answer.

    >>> outer = Ledger(UsageLimits(requests=3), 10)
    >>> inner = Ledger(None, 10, above=outer)
    >>> inner.add_request(); inner.reached()  # the outer has 2 left, one of them for its answer
    ('requests', 3, 1)
    >>> inner.spent(), outer.spent()
    (False, False)
    >>> inner.add_request(); inner.spent(), outer.spent()
    (True, False)
    """

    __slots__ = ("limits", "max_tool_calls", "above", "requests", "usage", "tool_calls", "t0", "budgets")

    def __init__(self, limits: UsageLimits | None, max_tool_calls: int, above: Ledger | None = None) -> None:
        self.limits = limits if limits is not None and limits.budgets else None
        self.max_tool_calls = max_tool_calls
        self.above = above
        self.requests = 0
        self.usage = Usage()
        self.tool_calls = 0
        self.t0 = perf_counter()
        #: Whether this run or a caller has budgets besides the tool-call limit (else no checks).
        self.budgets: bool = self.limits is not None or (above is not None and above.budgets)

    def _chain(self) -> Iterator[tuple[int, Ledger]]:
        ledger: Ledger | None = self
        k = 0
        while ledger is not None:
            yield k, ledger
            ledger, k = ledger.above, k + 1

    # (while loops, not _chain: these run at every step of every run)
    def add_request(self) -> None:
        ledger: Ledger | None = self
        while ledger is not None:
            ledger.requests += 1
            ledger = ledger.above

    def add_usage(self, usage: Usage) -> None:
        ledger: Ledger | None = self
        while ledger is not None:
            ledger.usage += usage
            ledger = ledger.above

    def add_tool_call(self) -> None:
        ledger: Ledger | None = self
        while ledger is not None:
            ledger.tool_calls += 1
            ledger = ledger.above

    def calls_left(self) -> int:
        """The tool calls this run may still make: the fewest any run in the chain has left."""
        if self.above is None:
            return self.max_tool_calls - self.tool_calls
        return min(ledger.max_tool_calls - ledger.tool_calls for _, ledger in self._chain())

    def reached(self) -> tuple[str, float | None, float | None] | None:
        """The first budget used up in the chain: (limit, its value, what was used), else None."""
        now = perf_counter()
        for k, ledger in self._chain():
            if ledger.limits is None:
                continue
            u = ledger.usage
            priced = u.cost is not None or not u.total_tokens
            # k: one request left per caller in between for its own answer
            hit = reached(ledger.limits, ledger.requests + k, u, u.cost, priced, now - ledger.t0)
            if hit is not None:
                return (hit, *used(hit, ledger.limits, ledger.requests, u, u.cost, now - ledger.t0))
        return None

    def spent(self) -> bool:
        """Whether no model request is left to this run (its own or a caller's ``requests``)."""
        return any(
            ledger.limits is not None
            and ledger.limits.requests is not None
            and ledger.requests + k >= ledger.limits.requests
            for k, ledger in self._chain()
        )
