"""What the guidance asks of a model: the interface both sources of log-probabilities implement.

The guidance (:mod:`.rank`: which tool fits the request; :mod:`.choose`: call or answer) needs
two measurements of a model, and nothing else:

* **the log-probabilities of these continuations**: ``log P(text | head)`` for several heads
  (each tool's description, and "no tool"), with the number of tokens ``text`` took
  (:meth:`LogprobSource.scores`);
* **the next-token distribution** after the conversation, or after the conversation and one
  more user turn (:meth:`LogprobSource.next_token`), read as the share of its mass on starting
  a JSON call and as the log-odds of "yes" against "no" (:class:`NextToken`);

and, for the steps that cost time, whether one would take the step past its budget
(:meth:`LogprobSource.too_costly`). Two sources implement it:

* the in-process model (:class:`agentnb.providers.hf.source.InProcessSource`): one batched
  forward pass for the scores, the logits of the prefix cache for the next token, which it
  reads over the whole vocabulary with the call grammar's masks; nothing is ever too costly;
* a server's logprobs (:class:`agentnb.providers.openai.source.ServerSource`): echoed prompts
  on ``/v1/completions`` for the scores, a one-token request with the top alternatives for the
  next token (:class:`Alternatives`: only their texts are known), each request timed and
  weighed against the step's budget (:mod:`agentnb.providers.openai.cost`).

A source that cannot measure (no endpoint, no logprobs) raises :class:`UnavailableError`; the
guidance then goes on without that measurement.

The in-process source measures synchronously; the guidance is written once, as coroutines,
and :func:`drive` runs it to the end where nothing is ever awaited for real (a worker thread).

>>> import asyncio
>>> class Fake:  # a source with fixed answers
...     via = "fake"
...     can_score = True
...     async def scores(self, heads, text):
...         return [Scored({"Function: add": -4.0, "none": -9.0}.get(h, -12.0), 4) for h in heads]
...     async def next_token(self, follow_up=None):
...         return Alternatives({'{"': -2.0, "The": -0.2} if follow_up is None else {"Yes": -0.1, "No": -2.5})
...     async def too_costly(self, step, *, heads=(), text="", asks=0):
...         return None
>>> source: LogprobSource = Fake()
>>> [s.logprob for s in drive(source.scores(["Function: add", "Function: mul"], "6 plus 7"))]
[-4.0, -12.0]
>>> round(drive(source.next_token()).call_share(), 3), round(drive(source.next_token("yes?")).yes_no(), 2)
(0.142, 2.4)
"""

from __future__ import annotations

import math
from collections.abc import Coroutine, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


class Scored(NamedTuple):
    """``log P(text | head)``, summed over ``text``'s tokens, and how many tokens that is."""

    logprob: float
    tokens: int


@runtime_checkable
class NextToken(Protocol):
    """The next token's distribution, as the guidance reads it."""

    def call_share(self) -> float:
        """The share of the probability on tokens that start a JSON call (against prose)."""
        ...

    def yes_no(self) -> float:
        """The log-odds of "yes" against "no" (every spelling summed)."""
        ...


@runtime_checkable
class LogprobSource(Protocol):
    """A model's log-probabilities, for the conversation of one request."""

    #: How the measurements were made, added to the reasons the guidance gives ("server
    #: logprobs"); empty for the in-process model.
    via: str

    @property
    def can_score(self) -> bool:
        """Whether :meth:`scores` may work (False once the source found it cannot)."""
        ...

    async def scores(self, heads: Sequence[str], text: str) -> Sequence[Scored]:
        """``log P(text | head)`` for each of ``heads``, in order. Raises :class:`UnavailableError`."""
        ...

    async def next_token(self, follow_up: str | None = None) -> NextToken:
        """The next token's distribution after the conversation (and one more user turn
        ``follow_up``, when given). Raises :class:`UnavailableError`."""
        ...

    async def too_costly(self, step: str, *, heads: Sequence[str] = (), text: str = "", asks: int = 0) -> Any:
        """The :class:`~agentnb.events.GuidanceSkipped` event when scoring ``text`` under
        ``heads`` and ``asks`` next-token requests would take ``step`` past its budget, else
        None. Raises :class:`UnavailableError` when pricing the step fails."""
        ...


class UnavailableError(Exception):
    """The source cannot give this measurement; ``event`` says so in the trace, where one should."""

    def __init__(self, reason: str, event: Any = None) -> None:
        super().__init__(reason)
        self.event = event


class Alternatives:
    """A next-token distribution known by its likeliest alternatives' texts (a server's top-k).

    A call starts with ``{``; prose may not start with ``{``, ``[`` or whitespace (the call
    grammar's rule), so those are left out of the prose's share. No call token among the
    alternatives counts as the least of them (an upper bound).

    >>> Alternatives({'{"': -1.0, "The": -0.5, " ": -2.0}).call_share()
    0.3775...
    >>> Alternatives({"Yes": -0.2, "No": -2.0, "yes": -3.0}).yes_no()
    1.8...
    """

    def __init__(self, top: dict[str, float]) -> None:
        self.top = top

    def call_share(self) -> float:
        alternatives = self.top
        values = [v for v in alternatives.values() if isinstance(v, int | float) and math.isfinite(v)]
        if not values:
            return 0.0
        call = sum(math.exp(v) for t, v in alternatives.items() if t.startswith("{"))
        text = sum(math.exp(v) for t, v in alternatives.items() if t and t[0] not in "{[" and not t[0].isspace())
        if call == 0.0:
            call = math.exp(min(values))  # not among them: at most the least of them
        return call / (call + text)

    def yes_no(self) -> float:
        def mass(word: str) -> float:
            return sum(math.exp(v) for t, v in self.top.items() if t.strip().lower() == word)

        return math.log(mass("yes") + 1e-9) - math.log(mass("no") + 1e-9)


def drive(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (the guidance over a synchronous source) to its end.

    >>> async def two():
    ...     return 2
    >>> drive(two())
    2
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("the guidance waited on something: drive() runs only synchronous sources")
