"""What the guidance costs on this server, measured, and whether a guidance step is worth it.

The guidance on a text-only server (picking the tool from echoed prompt log-probabilities,
the call-or-answer decision, steering a call token by token) is a handful of extra requests
per step. Their price depends on the server: vLLM on a GPU answers them in milliseconds;
llama-cpp-python sorts the whole vocabulary in Python for every token that carries
log-probabilities, so against it, with one tool, SmolLM2-135M's first step took 37-60 s with
every step on (3.0 s without the ranking, 0.5 s without any guidance).

So every request the guidance makes is timed here (seconds per echoed prompt token, per
streamed token with alternatives, per prompt token of a one-token request: the server reads
the whole prompt with its logits), the plain reply requests too, and
before a guidance step runs its cost is estimated from those figures (the price of an echoed
token is first read from a two-token echo, before the ranking's probe; that of a one-token
request from one with a two-token prompt, before the first real one). A step whose estimate would take
the step past its budget is skipped, and a :class:`~agentnb.events.GuidanceSkipped` event says
which step, the estimate and the figures it came from. The budget per step
(``OpenAIProvider(guidance_budget=...)``):

* ``"auto"`` (the default): the guidance may add as much time as the plain request it helps
  took last on this provider, and at least :data:`FLOOR` seconds (so it never dominates a
  step, yet a fast server keeps all of it);
* a number: that many seconds per step;
* ``None``: no limit (every step runs, whatever it costs).

Pricing requests are small, and a price read from one overestimates a long request (its fixed
cost is spread over few tokens): on a slow server the guidance is skipped rather than let run
past the budget. The budget also holds *while* the guidance runs: every guidance request of a
step (the measuring ones, the template's, each round of a steered call) runs under what is left
of it (:meth:`GuidanceCost.within`), and one still running when the budget is spent is cut off;
the guidance of that step ends there, a ``GuidanceSkipped`` event says so, and the step goes on
without it (the plain request, or the narrowing done so far). The time it took prices its kind
for the next steps.

>>> cost = GuidanceCost("auto")
>>> cost.observe("echo", tokens=100, seconds=2.0)     # 20 ms per echoed token
>>> cost.estimate(echo=300)
6.0
>>> cost.begin_step()
>>> cost.skip("tool ranking", 6.0, "2 scoring requests of ~150 tokens").reason
'2 scoring requests of ~150 tokens: ~6.0 s (measured here: 20 ms per echoed token); the budget is 5.0 s per step'
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from agentnb.errors import UserError
from agentnb.events import GuidanceSkipped

#: Seconds the guidance may always add to a step under ``"auto"``.
FLOOR = 5.0
#: Characters per token until the server has counted some of our text.
CHARS_PER_TOKEN = 3.5

T = TypeVar("T")
#: What prices an echoed token, or a prompt token of a one-token request, on a server, before
#: anything longer is sent.
PRICE = "1, 2"


class GuidanceTimeError(Exception):
    """The step's guidance budget ran out before or during a guidance request; ``event`` (a
    :class:`~agentnb.events.GuidanceSkipped`) says where. The step goes on without the guidance."""

    def __init__(self, event: GuidanceSkipped) -> None:
        super().__init__(event.reason)
        self.event = event


def check_budget(budget: Any) -> float | str | None:
    """``budget`` as given, or a :class:`~agentnb.errors.UserError` saying what is allowed."""
    if budget is None or budget == "auto":
        return budget  # type: ignore[no-any-return]
    if isinstance(budget, int | float) and not isinstance(budget, bool) and budget >= 0:
        return float(budget)
    raise UserError(f"guidance_budget must be 'auto', a number of seconds >= 0 or None, not {budget!r}")


@dataclass
class _Rate:
    seconds: float = 0.0
    tokens: int = 0

    def per_token(self) -> float | None:
        return self.seconds / self.tokens if self.tokens else None


class GuidanceCost:
    """Per provider: the measured prices of guidance requests, and this step's spending."""

    def __init__(self, budget: Any = "auto") -> None:
        self.budget = check_budget(budget)
        self._rates = {"echo": _Rate(), "stream": _Rate(), "ask": _Rate()}
        self._chars = _Rate()  # characters per token of our text, as the server counts it
        self.plain: float | None = None  # seconds of the last plain reply request
        self.spent = 0.0
        self.names = ""
        self._timed = 0
        self._carried = 0.0  # seconds the step spent before it came here (see carry)
        self._started = time.perf_counter()
        self._plain_before: float | None = self.plain

    # -- measuring ------------------------------------------------------------------------

    def observe(self, kind: str, *, tokens: int, seconds: float, chars: int = 0) -> None:
        """One request's price: ``kind`` is ``"echo"`` (``tokens`` echoed with log-probabilities),
        ``"stream"`` (``tokens`` streamed with alternatives), ``"ask"`` (a one-token request of
        ``tokens`` prompt tokens)
        or ``"plain"`` (a reply)."""
        if kind == "plain":
            self.plain = seconds
            return
        self.spent += seconds
        rate = self._rates[kind]
        # the latest figures weigh most (a shared machine's load changes): halve the history
        rate.seconds, rate.tokens = rate.seconds / 2 + seconds, rate.tokens // 2 + max(1, tokens)
        if chars and tokens:
            self._chars.seconds, self._chars.tokens = self._chars.seconds + chars, self._chars.tokens + tokens

    @contextmanager
    def timing(self, kind: str, tokens: Any = None) -> Iterator[dict[str, int]]:
        """Time the block; it fills ``tokens`` (and ``chars``) in the dict it is given. A block
        cut off (the budget ran out) or failed is timed too: what it took prices its kind."""
        counts: dict[str, int] = {"tokens": 1, "chars": 0}
        start = time.perf_counter()
        self._timed += 1  # (a request inside is counted here, not again by within)
        try:
            yield counts
        finally:
            self._timed -= 1
            self.observe(kind, tokens=counts["tokens"], seconds=time.perf_counter() - start, chars=counts["chars"])

    async def within(self, what: str, work: Awaitable[T]) -> T:
        """Await one guidance request (``what`` it is for) under what is left of the step's
        budget; :class:`GuidanceTimeError` when nothing is left or the request is cut off.
        Its time counts against the budget (once, whether or not it is also timed by kind)."""
        limit = self.limit()
        timed, start = self._timed > 0, time.perf_counter()
        try:
            if limit is None:
                return await work
            left = limit - self.spent
            if left <= 0.0:
                if hasattr(work, "close"):
                    work.close()  # a coroutine never started: no "never awaited" warning
                raise GuidanceTimeError(self._ran_out(what, limit, 0.0))
            try:
                return await asyncio.wait_for(work, left)
            except asyncio.TimeoutError:
                if time.perf_counter() - start < left * 0.99:  # the request's own timeout, not ours
                    raise
                raise GuidanceTimeError(self._ran_out(what, limit, time.perf_counter() - start)) from None
        finally:
            if not timed:  # a request no timing block counts (the chat template's probes)
                self.spent += time.perf_counter() - start

    def _ran_out(self, what: str, limit: float, took: float) -> GuidanceSkipped:
        spent = self.spent + took
        how = f"cut off after {took:.1f} s" if took else "not sent"
        reason = (
            f"{how}: the step had used {spent:.1f} s of its guidance budget of {limit:.1f} s per step; "
            "the step went on without the rest of its guidance"
        )
        return GuidanceSkipped(0, self.names, what, reason, round(spent, 2), round(limit, 2))

    def tokens_in(self, text: str) -> int:
        """About how many tokens the server counts in ``text``."""
        per = self._chars.per_token() or CHARS_PER_TOKEN
        return max(1, round(len(text) / per))

    def known(self, kind: str) -> bool:
        return self._rates[kind].tokens > 0

    def estimate(self, *, echo: int = 0, stream: int = 0, ask: int = 0) -> float | None:
        """Seconds for ``echo`` echoed tokens, ``stream`` streamed ones and one-token requests of
        ``ask`` prompt tokens in all; None while a price it needs is unknown."""
        total = 0.0
        for kind, count in (("echo", echo), ("stream", stream), ("ask", ask)):
            rate = self._rates[kind].per_token()
            if count and rate is None:
                return None
            total += (rate or 0.0) * count
        return total

    # -- deciding ---------------------------------------------------------------------------

    def begin_step(self) -> None:
        """A step starts: its budget is whole, less what :meth:`carry` says it spent already."""
        self.spent, self._carried = self._carried, 0.0
        self._started = time.perf_counter()
        self._plain_before = self.plain

    def carry(self, seconds: float) -> None:
        """The step spent ``seconds`` before its guidance runs (the requests that found the server
        ignores tools): they count against the budget the next :meth:`begin_step` starts with."""
        self._carried += seconds

    def hand_over(self) -> None:
        """The step begun last goes on through another request (its native try was refused, or
        its reply written without the tools is dropped): the time it took so far counts against
        that request's budget, and a dropped reply does not set the budget (:attr:`plain`).

        >>> cost = GuidanceCost("auto")
        >>> cost.begin_step()
        >>> cost.observe("plain", tokens=300, seconds=21.0)  # 21 s of prose the server wrote without the tools
        >>> cost.hand_over(); cost.begin_step()
        >>> cost.plain is None, cost.limit(), cost.spent > 0
        (True, 5.0, True)
        """
        self.plain = self._plain_before
        self.carry(self.spent + time.perf_counter() - self._started)

    def limit(self) -> float | None:
        if self.budget is None or isinstance(self.budget, float):
            return self.budget
        return max(FLOOR, self.plain or 0.0)

    def skip(self, step: str, estimate: float | None, what: str) -> GuidanceSkipped | None:
        """The event that skips ``step`` (``what`` it would ask, ``estimate`` seconds), or None
        when it fits this step's budget (or its price is not known yet)."""
        limit = self.limit()
        if limit is None or estimate is None or self.spent + estimate <= limit:
            return None
        names = {
            "echo": "per echoed token",
            "stream": "per streamed token",
            "ask": "per prompt token of a one-token request",
        }
        rates = [f"{r * 1000:.0f} ms {names[k]}" for k, v in self._rates.items() if (r := v.per_token()) is not None]
        measured = f" (measured here: {', '.join(rates)})" if rates else ""
        spent = f"; {self.spent:.1f} s spent this step" if self.spent >= 0.05 else ""
        reason = f"{what}: ~{estimate:.1f} s{measured}{spent}; the budget is {limit:.1f} s per step"
        return GuidanceSkipped(0, self.names, step, reason, round(estimate, 2), round(limit, 2))


def cost_of(provider: Any) -> GuidanceCost:
    """The provider's :class:`GuidanceCost` (one without a budget for a stand-in provider)."""
    found = getattr(provider, "_cost", None)
    return found if isinstance(found, GuidanceCost) else GuidanceCost(None)
