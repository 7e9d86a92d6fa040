"""The context gauge of one run: each request measured against the window, and what a run's
requests came to (:class:`ContextReport`, ``RunResult.context``).

The loop makes one :class:`ContextGauge` per run, once the model's window is known (found once
per provider: :meth:`~agentnb.providers.base.Provider.context_window`; ``Agent(context_window=N)``
overrides it). Before each request :meth:`ContextGauge.measure` sizes it (exact, or estimated and
corrected, :mod:`agentnb.context.size`) and the ``model_request`` event carries the size; after
the reply, :meth:`ContextGauge.learn` feeds the reported usage to the corrector.

>>> from agentnb.messages import Usage, UserMessage
>>> from agentnb.providers.base import Request
>>> from agentnb.testing import ScriptedProvider
>>> g = ContextGauge(ScriptedProvider([]), 100)
>>> g.measure(Request([UserMessage("x" * 30)]))
RequestSize(tokens=16, exact=False, window=100)
>>> g.learn(Usage(32, 2)); g.measure(Request([UserMessage("x" * 30)])).tokens  # twice as many
32
>>> g.result_chars()   # a quarter of the window, in characters (three a token)
75
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentnb.context.size import CharCount, Corrector, RequestSize, count_request, exact_counter, gauge_text
from agentnb.providers.base import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from agentnb.messages import Usage
    from agentnb.providers.base import Request

#: The share of the window one tool result may take by default (``max_result_chars="auto"``).
RESULT_SHARE = 0.25


class ContextGauge:
    """Measures one run's requests against ``window`` (None: unknown) for ``provider``."""

    __slots__ = ("provider", "window", "counter", "chars", "corrector", "_estimate")

    def __init__(self, provider: Any, window: int | None) -> None:
        self.provider = provider
        self.window = window
        #: What counts requests with the model's own tokenizer (None: they are estimated).
        self.counter = exact_counter(provider)
        self.chars = CharCount()
        self.corrector = Corrector()
        self._estimate = 0  # the last request's estimate, before correction

    def measure(self, request: Request) -> RequestSize:
        """``request``'s size: exact where the model counts, else estimated and corrected."""
        if self.counter is not None:
            tokens, exact = count_request(self.counter, request, self.chars)
            if exact:
                self._estimate = 0
                return RequestSize(tokens, True, self.window)
        else:
            tokens = self.chars.tokens(request.messages, request.tools)
        self._estimate = tokens
        return RequestSize(self.corrector.apply(tokens), False, self.window)

    def learn(self, usage: Usage) -> None:
        """The input tokens the last request's reply reported (an estimate learns from them)."""
        if self._estimate:
            self.corrector.learn(self._estimate, usage.input_tokens)

    def result_chars(self, share: float = RESULT_SHARE) -> int | None:
        """How many characters one tool result may have: ``share`` of the window in tokens, at the
        estimator's three characters a token (None: the window is unknown). Found once per run,
        at its first request, so that a result is cut the same way at every step and in a replay."""
        if self.window is None:
            return None
        return max(1, math.floor(self.window * share * CHARS_PER_TOKEN))


@dataclass(frozen=True, slots=True)
class ContextReport:
    """What a run's requests came to: the ``window`` (None: unknown), the size of each request
    (``requests``, in tokens; None for one sent without a count) and the largest (``peak``).

    >>> from agentnb.events import ModelRequest
    >>> r = context_report([ModelRequest(0, 1, (), "auto", 900, 4096, True),
    ...                     ModelRequest(1, 3, (), "auto", 1400, 4096, True)])
    >>> r.peak, r.requests, r.window, str(r)
    (1400, (900, 1400), 4096, 'peak context 1.4k / 4.1k (34%) over 2 requests')
    """

    window: int | None
    requests: tuple[int | None, ...]
    peak: int | None
    exact: bool = False

    @property
    def fraction(self) -> float | None:
        """The peak's share of the window (None: unknown window or no count)."""
        return self.peak / self.window if self.peak is not None and self.window else None

    def __str__(self) -> str:
        if self.peak is None:
            return "context not measured"
        n = len(self.requests)
        return f"peak {gauge_text(self.peak, self.window, self.exact)} over {n} request{'s' * (n != 1)}"


def context_report(events: Iterable[Any]) -> ContextReport:
    """The :class:`ContextReport` of a run's events (its own ``model_request`` events)."""
    sizes: list[int | None] = []
    window: int | None = None
    exact = True
    for e in events:
        if e.kind == "model_request":
            sizes.append(e.context_tokens)
            window = e.context_window if e.context_window is not None else window
            exact = exact and e.context_exact
    known = [s for s in sizes if s is not None]
    peak = max(known) if known else None
    return ContextReport(window, tuple(sizes), peak, exact and bool(known))


def conversation_size(result: Any) -> RequestSize | None:
    """The size of the conversation a run left (a :class:`~agentnb.run.result.RunResult`): its last
    measured request and the reply to it (the reply's reported output tokens, else its answer's
    characters, three a token); None without a measured request (or without a run)."""
    if result is None:
        return None
    last = None
    reply = 0
    for e in result.events:
        if e.kind == "model_request" and e.context_tokens is not None:
            last, reply = e, 0
        elif e.kind == "model_response" and last is not None:
            reply = e.usage.output_tokens or math.ceil(len(e.text or "") / CHARS_PER_TOKEN)
    if last is None:
        return None
    return RequestSize(last.context_tokens + reply, last.context_exact and reply == 0, last.context_window)
