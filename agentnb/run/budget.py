"""Token budgets held before a request is sent, and any overrun said after the run.

Usage is only known after a request, so a check of what was *used* lets one request go past a
token budget. Before each model request the loop therefore estimates the request's input tokens
(:meth:`~agentnb.providers.base.Provider.estimate_input_tokens`: exact for an in-process model,
which counts with its own tokenizer; otherwise about three characters a token, scaled by what the
run's earlier requests really used) and what the run's answer will need after it: the same
conversation without tools, what a step adds to it and a reply, both measured on the run so far
(:class:`Gauge`). Then it:

* sends the request with its tools when a tool step and that answer both fit, its reply bounded
  (the provider's ``reply_limit_setting``, such as ``max_tokens``) so that it leaves the answer's
  part;
* sends it **without tools** (the model must answer now: ``LimitReached``) when only the answer
  fits, its reply bounded to what is left;
* does not send it when it would not fit: the run ends with ``stop_reason="limit"`` and a text
  written by agentnb (:func:`~agentnb.run.endings.limit_text`).

An estimate can still fall short (a provider that ignores the reply bound, a tokenizer denser
than guessed, a tool result longer than a step's so far), and ``cost`` and ``seconds`` are checked
only before each request. Whatever a run went past is never silent: :func:`overrun` lists it on
``RunFinished.overrun`` and ``RunResult.overrun``, and the printer and the trace header say it.

>>> from agentnb.control.limits import Ledger, UsageLimits
>>> ledger = Ledger(UsageLimits(total_tokens=200), 10)
>>> hold(ledger, 40, answer=20).verdict, hold(ledger, 40, answer=20).reply_cap  # a step, then the answer
('send', 108)
>>> hold(ledger, 120, answer=60).verdict   # fits, but the answer after a tool step would not
'last'
>>> hold(ledger, 60).reply_cap   # without tools (the answer): its reply may take what is left
140
>>> hold(ledger, 426).verdict   # would not fit: never sent
'refuse'
>>> overrun(UsageLimits(total_tokens=200), Usage(400, 26), 1.0)
(('total_tokens', 200, 426),)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentnb.messages import Usage
from agentnb.providers.base import chars_estimate

if TYPE_CHECKING:
    from agentnb.control.limits import Ledger, UsageLimits
    from agentnb.providers.base import Provider, Request

#: Tokens a reply needs at least: a request that leaves less than this is not sent.
MIN_REPLY = 16

_TOKEN_LIMITS = ("input_tokens", "output_tokens", "total_tokens")


class Gauge:
    """Estimates a run's next request in tokens, corrected by what its requests really used, and
    learns from the run what its answer will need: the largest reply so far (``reply``) and the
    most a step has added to the conversation (``grow``).

    >>> from agentnb.messages import UserMessage
    >>> from agentnb.providers.base import Request
    >>> from agentnb.testing import ScriptedProvider
    >>> g = Gauge(ScriptedProvider(["hi"]))
    >>> g.estimate(Request([UserMessage("x" * 30)]))
    16
    >>> g.learn(Usage(32, 2)); g.estimate(Request([UserMessage("x" * 60)]))  # really twice as many
    52
    """

    __slots__ = ("provider", "scale", "last", "reply", "grow", "_answered")

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.scale = 1.0  # measured input tokens / estimated, from the last request
        self.last = 0
        #: The largest reply of the run so far (a call or an answer), at least MIN_REPLY.
        self.reply = MIN_REPLY
        #: The most one step added to the conversation (0: no step yet).
        self.grow = 0
        self._answered: int | None = None  # the last answer-now estimate

    def count(self, request: Request) -> int:
        """``request``'s input tokens as the provider counts them, else from its characters."""
        counted: int | None = None
        try:
            counted = self.provider.estimate_input_tokens(request)
        except Exception:  # an estimate must never fail a run: fall back to characters
            counted = None
        return counted if counted is not None else chars_estimate(request.messages, request.tools)

    def estimate(self, request: Request) -> int:
        self.last = self.count(request)
        return math.ceil(self.last * self.scale)

    def answer(self, request: Request) -> int:
        """The input of ``request`` without tools: the request that asks for the answer now. Each
        call measures what the conversation grew by since the last (``grow``)."""
        bare = request if not request.tools else dataclasses.replace(request, tools=(), tool_choice="none")
        now = math.ceil(self.count(bare) * self.scale)
        if self._answered is not None:
            self.grow = max(self.grow, now - self._answered)
        self._answered = now
        return now

    def learn(self, usage: Usage) -> None:
        """What the request last estimated really used (its input tokens, when reported)."""
        if usage.input_tokens and self.last:
            self.scale = max(0.5, usage.input_tokens / self.last)
        self.reply = max(self.reply, usage.output_tokens)


@dataclass(frozen=True, slots=True)
class Hold:
    """What a token budget says about the next request: ``send``, ``last`` (without tools) or
    ``refuse``; the budget that decides (``limit``, its ``value``, what was ``used``) and how
    many tokens its reply may take (``reply_cap``, None: unbounded)."""

    verdict: str = "send"
    limit: str | None = None
    value: float | None = None
    used: float | None = None
    reply_cap: int | None = None


def hold(ledger: Ledger, estimate: int, answer: int | None = None, reply: int = MIN_REPLY, grow: int = 0) -> Hold:
    """Whether a request of ``estimate`` input tokens fits every token budget in ``ledger``'s chain.

    ``answer`` is the input of the same request without tools (None: it offers none, so it asks for
    the answer). A request with tools is sent when, after it, what the run's answer needs is still
    left: the conversation without tools, what this step adds to it (``grow``, else a reply's
    worth) and a reply (``reply``); its own reply is bounded so that it cannot take that. Else it
    is the ``last``, without tools, if that fits; else it is refused.
    """
    worst = Hold()
    rank = {"send": 0, "last": 1, "refuse": 2}
    cap: int | None = None
    later = (answer if answer is not None else estimate) + max(grow, reply)  # the answer's input after a step
    for k, led in ledger._chain():  # k: callers in between, each needs one request for its answer
        limits = led.limits
        if limits is None:
            continue
        u = led.usage
        for name in _TOKEN_LIMITS:
            value = getattr(limits, name)
            if value is None:
                continue
            room, used, need, keep, own = _needs(name, value, u, estimate, later, reply)
            room -= k * keep  # each caller's answer, about the size of this run's
            if answer is None:  # this request is the answer: nothing to keep after it
                keep = 0
            verdict = "send" if need + keep <= room else ("refuse" if answer is None else "last")
            if verdict == "send" and own is not None:
                left = room - keep - own
                cap = left if cap is None else min(cap, left)
            if rank[verdict] > rank[worst.verdict]:
                worst = Hold(verdict, name, value, used)
    return Hold(worst.verdict, worst.limit, worst.value, worst.used, cap if worst.verdict == "send" else None)


def _needs(
    name: str, value: int, u: Usage, estimate: int, later: int, reply: int
) -> tuple[int, int, int, int, int | None]:
    """For one token budget: (room left, used, what this request needs, what the answer after it
    needs, what the request's own input takes of the room before its reply; None: no reply bound)."""
    if name == "input_tokens":
        return value - u.input_tokens, u.input_tokens, estimate, later, None
    if name == "output_tokens":
        return value - u.output_tokens, u.output_tokens, MIN_REPLY, reply, 0
    return value - u.total_tokens, u.total_tokens, estimate + MIN_REPLY, later + reply, estimate


def holds_tokens(ledger: Ledger) -> bool:
    """Whether any run in ``ledger``'s chain has a token budget (then requests are estimated)."""
    return any(
        led.limits is not None and any(getattr(led.limits, n) is not None for n in _TOKEN_LIMITS)
        for _, led in ledger._chain()
    )


def out_of_tokens(output: str, messages: Sequence[Any], held: Hold, estimate: int) -> tuple[str, Any]:
    """``(output, by)`` of a run whose next request would not fit a token budget: the text the
    model already wrote, else :func:`~agentnb.run.endings.limit_text` saying why nothing was sent."""
    if output.strip():
        return output, "model"
    from agentnb.run.endings import limit_text

    used = f"{held.used:g} of {held.value:g} used; the next request needs about {estimate} input tokens"
    return limit_text(messages, str(held.limit), used, "so that request was not sent"), "agentnb"


def capped(settings: dict[str, Any], provider: Provider, cap: int | None) -> dict[str, Any]:
    """``settings`` with the reply bounded to ``cap`` tokens, where the provider has such a setting."""
    key = getattr(provider, "reply_limit_setting", None)
    if cap is None or key is None:
        return settings
    mine = settings.get(key)
    if isinstance(mine, int) and not isinstance(mine, bool) and mine <= cap:
        return settings
    return {**settings, key: max(1, cap)}


def overrun(limits: UsageLimits | None, usage: Usage, seconds: float) -> tuple[tuple[str, float, float], ...]:
    """Each budget of ``limits`` a run went past: ``(limit, its value, what was used)``.

    >>> from agentnb.control.limits import UsageLimits
    >>> overrun(UsageLimits(output_tokens=10, seconds=5.0), Usage(3, 12), 2.0)
    (('output_tokens', 10, 12),)
    """
    if limits is None:
        return ()
    used = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "cost": usage.cost,
        "seconds": round(seconds, 3),
    }
    out = []
    for name, amount in used.items():
        value = getattr(limits, name)
        if value is not None and amount is not None and amount > value:
            out.append((name, value, amount))
    return tuple(out)


def without_tools_text(limit: str | None) -> str:
    """What a run's answer written without its tools says of the budget that took them ("" for None).

    >>> without_tools_text("total_tokens")
    'answered without tools: its total_tokens budget left no room for a tool step'
    """
    if limit is None:
        return ""
    why = "left no room for a tool step" if limit.endswith("_tokens") else "was reached"
    return f"answered without tools: its {limit} budget {why}"


def overrun_text(over: Sequence[tuple[str, float, float]]) -> str:
    """What a run went past, each budget with what was used, its value and the excess; "" for none.

    >>> overrun_text([("total_tokens", 200, 426), ("seconds", 5.0, 6.25)])
    'went past its budget: total_tokens 426 of 200 (+226); seconds 6.25 of 5 (+1.25)'
    """
    if not over:
        return ""
    parts = []
    for name, value, amount in over:
        extra = amount - value
        more = f"{extra:.6g}" if isinstance(extra, float) else str(extra)
        parts.append(f"{name} {amount:.6g} of {value:.6g} (+{more})")
    return "went past its budget: " + "; ".join(parts)
