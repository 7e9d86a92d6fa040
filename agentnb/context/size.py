"""The size of a request in tokens, against the model's window: the numbers the gauge shows.

A request is counted **exactly** where a tokenizer is at hand for the very prompt the model will
read (the in-process model: :class:`~agentnb.providers.hf.TransformersProvider`, directly or
under the UnTooled layer), else **estimated** from its characters (three a token,
:data:`~agentnb.providers.base.CHARS_PER_TOKEN`) and scaled by a :class:`Corrector` that learns,
reply by reply, how many input tokens the server really reported for what was estimated.

>>> from agentnb.messages import UserMessage
>>> from agentnb.providers.base import Request
>>> from agentnb.testing import ScriptedProvider
>>> count_request(ScriptedProvider([]), Request([UserMessage("x" * 30)]))  # (30 + 16) / 3
(16, False)
>>> size = RequestSize(9_800, False, 32_768)
>>> str(size), size.level
('context ~9.8k / 32.8k (30%)', 'ok')
>>> str(RequestSize(9_800, True, None)), RequestSize(9_800, True, None).level is None
('context 9.8k, window unknown', True)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentnb.messages.fastinit import fast_init
from agentnb.providers.base import CHARS_PER_TOKEN, Provider

if TYPE_CHECKING:
    from agentnb.providers.base import Request

#: From this share of the window the gauge is amber, and from :data:`RED` red (as jupyter-ai's).
AMBER = 0.7
RED = 0.9
#: The bounds of the correction a reply's reported usage may make to an estimate: a server
#: that reports 0, or a number far from the request's size, cannot poison the estimates after it.
MIN_SCALE = 0.25
MAX_SCALE = 4.0
#: How many wrappers (``inner``) are looked through for a provider that counts exactly.
_DEPTH = 8


def short(tokens: int) -> str:
    """A token count as the gauge writes it.

    >>> short(812), short(9_800), short(32_768), short(128_000), short(1_048_576)
    ('812', '9.8k', '32.8k', '128k', '1.05M')
    """
    if tokens < 1000:
        return str(tokens)
    if tokens < 1_000_000:
        k = tokens / 1000
        return f"{k:.1f}k".replace(".0k", "k") if k < 100 else f"{k:.0f}k"
    return f"{tokens / 1_000_000:.3g}M"


def level(tokens: int, window: int | None) -> str | None:
    """``"ok"``, ``"amber"`` (from 70% of the window) or ``"red"`` (from 90%); None when the
    window is unknown: never a made-up share.

    >>> level(6_900, 10_000), level(7_000, 10_000), level(9_000, 10_000), level(5, None)
    ('ok', 'amber', 'red', None)
    """
    if not window:
        return None
    share = tokens / window
    return "red" if share >= RED else "amber" if share >= AMBER else "ok"


@dataclass(frozen=True, slots=True)
class RequestSize:
    """One request's size: ``tokens`` (``exact``: counted by the model's tokenizer, else
    estimated) and the model's ``window`` (None: unknown)."""

    tokens: int
    exact: bool
    window: int | None

    @property
    def fraction(self) -> float | None:
        """The share of the window the request takes (None: the window is unknown)."""
        return self.tokens / self.window if self.window else None

    @property
    def level(self) -> str | None:
        """``"ok"``, ``"amber"`` or ``"red"`` (:func:`level`); None when the window is unknown."""
        return level(self.tokens, self.window)

    def __str__(self) -> str:
        return gauge_text(self.tokens, self.window, self.exact)


fast_init(RequestSize)  # one is made per request: the cheaper construction


def gauge_text(tokens: int, window: int | None, exact: bool = True) -> str:
    """``context 9.8k / 32.8k (30%)``; ``~`` marks an estimate; an unknown window is said.

    >>> gauge_text(512, 2_048), gauge_text(512, None, exact=False)
    ('context 512 / 2k (25%)', 'context ~512, window unknown')
    """
    size = ("" if exact else "~") + short(tokens)
    if not window:
        return f"context {size}, window unknown"
    return f"context {size} / {short(window)} ({100 * tokens / window:.0f}%)"


class Corrector:
    """Scales character estimates by what the server reported: the input tokens of each reply
    (``usage.input_tokens``) over the estimate of the request it answered. The ratio is clamped
    to [:data:`MIN_SCALE`, :data:`MAX_SCALE`]; a reply without usage, or with 0, changes nothing.

    >>> c = Corrector()
    >>> c.learn(100, 150), c.scale, c.apply(200)
    (True, 1.5, 300)
    >>> c.learn(100, 0), c.learn(100, None), c.scale   # no usage: nothing learnt
    (False, False, 1.5)
    >>> c.learn(100, 10**12), c.scale                   # absurd: clamped
    (True, 4.0)
    """

    __slots__ = ("scale", "learnt")

    def __init__(self) -> None:
        self.scale = 1.0
        #: How many replies' usage the scale was learnt from.
        self.learnt = 0

    def apply(self, estimate: int) -> int:
        """``estimate`` scaled by what the replies so far reported."""
        return estimate if self.scale == 1.0 else math.ceil(estimate * self.scale)

    def learn(self, estimate: int, reported: int | None) -> bool:
        """Learn from a reply that reported ``reported`` input tokens for a request estimated at
        ``estimate`` (unscaled); False when there was nothing to learn from."""
        if not estimate or not isinstance(reported, int) or isinstance(reported, bool) or reported <= 0:
            return False
        self.scale = min(MAX_SCALE, max(MIN_SCALE, reported / estimate))
        self.learnt += 1
        return True


class CharCount:
    """:func:`~agentnb.providers.base.chars_estimate`, kept up to date as a conversation grows:
    a step counts only the messages added since the last (a conversation that changed before
    them, compacted, is counted again), and a set of tools once.

    >>> from agentnb.messages import UserMessage
    >>> from agentnb.providers.base import chars_estimate
    >>> msgs = [UserMessage("x" * 30)]
    >>> count = CharCount()
    >>> count.tokens(msgs), chars_estimate(msgs)
    (16, 16)
    >>> msgs.append(UserMessage("y" * 60)); count.tokens(msgs) == chars_estimate(msgs)
    True
    """

    __slots__ = ("_seen", "_chars", "_tools", "_tool_chars")

    def __init__(self) -> None:
        self._seen: list[Any] = []
        self._chars = 0
        self._tools: Sequence[Any] = ()
        self._tool_chars = 0

    def tokens(self, messages: Sequence[Any], tools: Sequence[Any] = ()) -> int:
        """About how many tokens ``messages`` and the ``tools``' schemas are."""
        items, n = _items(messages)
        seen = self._seen
        k = len(seen)
        if n < k or items[:k] != seen:  # not a continuation (identity compares first, in C)
            seen.clear()
            self._chars, k = 0, 0
        if n > k:
            new = items[k:n]
            self._chars += sum(message_chars(m) for m in new)
            seen.extend(new)
        if tools is not self._tools:
            self._tools, self._tool_chars = tools, sum(tool_chars(t) for t in tools)
        return math.ceil((self._chars + self._tool_chars) / CHARS_PER_TOKEN)


def _items(messages: Sequence[Any]) -> tuple[list[Any], int]:
    """The list under ``messages`` (a run's :class:`~agentnb.run.history.MessageView` is a prefix
    of one) and how many of its items are in it."""
    items = getattr(messages, "_items", None)
    if isinstance(items, list):
        return items, len(messages)
    as_list = messages if isinstance(messages, list) else list(messages)
    return as_list, len(as_list)


#: ``json.dumps(value, ensure_ascii=False, default=str)`` with one encoder made once (json.dumps
#: makes one per call when given options).
_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


def message_chars(m: Any) -> int:
    """The characters a message counts for in an estimate (as :func:`chars_estimate` counts, a
    call's arguments by their ``repr``: about as long as their JSON, at a fifth of the cost).

    >>> from agentnb.messages import AssistantMessage, ToolCall
    >>> message_chars(AssistantMessage(None, (ToolCall("c1", "add", {"a": 1, "b": None}),)))
    38
    """
    size = 16 + len(getattr(m, "content", None) or "")  # (16: the role and the turn's markers)
    for c in getattr(m, "tool_calls", ()) or ():
        size += len(c.name) + len(repr(c.arguments))
    return size


def tool_chars(t: Any) -> int:
    """The characters a tool's name, description and schema count for in an estimate."""
    return len(t.name) + len(t.description) + len(_json(t.parameters))


def exact_counter(provider: Any) -> Provider | None:
    """The provider whose :meth:`~agentnb.providers.base.Provider.estimate_input_tokens` counts
    ``provider``'s requests exactly (``counts_tokens``), looking through wrappers that pass the
    request on unchanged (a cassette, a retry; not a cassette that only replays: it never
    reaches the model, whose tokenizer then stays unloaded); None: requests are estimated.

    >>> from agentnb.testing import ScriptedProvider
    >>> exact_counter(ScriptedProvider([])) is None
    True
    """
    p = provider
    for _ in range(_DEPTH):
        if getattr(p, "counts_tokens", False):
            return p  # type: ignore[no-any-return]
        if not getattr(p, "counts_through", True):  # answers without the model (a replaying cassette)
            return None
        if type(p).estimate_input_tokens is not Provider.estimate_input_tokens:
            return None  # it estimates in its own way: not exact
        p = getattr(p, "inner", None)
        if not isinstance(p, Provider):
            return None
    return None


def count_request(provider: Any, request: Request, chars: CharCount | None = None) -> tuple[int, bool]:
    """``(tokens, exact)``: ``request``'s input tokens as ``provider``'s model counts them where
    it can (exact), else estimated from characters (``chars`` keeps a run's count between steps).
    An estimate is not yet corrected: a :class:`Corrector` does that."""
    counter = exact_counter(provider)
    if counter is not None:
        try:
            counted = counter.estimate_input_tokens(request)
        except Exception:  # a count must never fail a run: estimate instead
            counted = None
        if isinstance(counted, int):
            return counted, True
    chars = chars if chars is not None else CharCount()
    return chars.tokens(request.messages, request.tools), False
