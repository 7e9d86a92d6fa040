"""A server's "the request does not fit the context window" error, read: the tokens and the window.

Servers say it in their own words (each as the real server writes it):

* OpenAI and vLLM: ``This model's maximum context length is 8192 tokens. However, your messages
  resulted in 9120 tokens...`` (code ``context_length_exceeded``); vLLM: ``... However, you
  requested 9120 tokens (9000 in the messages, 120 in the completion)``; OpenAI's newer text:
  ``Input tokens exceed the configured limit of 272000 tokens``;
* llama.cpp's server (type ``exceed_context_size_error``): ``request (9120 tokens) exceeds the
  available context size (8192 tokens), try increasing it``; older builds ``the request exceeds
  the available context size, try increasing it`` (no numbers), newer ones ``request (9120
  tokens) exceeds context size (8192 tokens)``, and ``input (9120 tokens) is larger than the max
  context size (8192 tokens). skipping``;
* Anthropic: ``prompt is too long: 215000 tokens > 200000 maximum``; Gemini: ``The input token
  count (300000) exceeds the maximum number of tokens allowed (1048576)``.

:func:`overflow_of` reads a :class:`~agentnb.errors.ProviderError` (its text and ``detail``) and
returns an :class:`Overflow`, or None for any other error.

>>> from agentnb.errors import ProviderError
>>> said = "http://127.0.0.1:8080/v1 refused the request (400): This model's maximum context length is 8000 tokens. However, your messages resulted in 9120 tokens."
>>> overflow_of(ProviderError(said, status=400))
Overflow(tokens=9120, window=8000, text="This model's maximum context length is 8000 tokens. However, your messages resulted in 9120 tokens.")
>>> overflow_of(ProviderError("request (2100 tokens) exceeds the available context size (2048 tokens), try increasing it"))[:2]
(2100, 2048)
>>> overflow_of(ProviderError("the request exceeds the available context size, try increasing it"))[:2]
(None, None)
>>> overflow_of(ProviderError("rate limited", status=429)) is None
True
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from agentnb.errors import ContextOverflow

#: What marks an overflow error, in any of the servers' words (lower case).
_MARKS = (
    "context_length_exceeded",
    "maximum context length",
    "exceeds the available context size",
    "exceeds context size",
    "exceed_context_size_error",
    "larger than the max context size",
    "input tokens exceed the configured limit",
    "prompt is too long:",
    "exceeds the maximum number of tokens allowed",
)
#: ``(pattern, group of the tokens, group of the window)``: the numbers each server states.
_NUMBERS = (
    (re.compile(r"maximum context length is (\d+) tokens"), None, 1),
    (re.compile(r"(?:resulted in|you requested) (\d+) tokens"), 1, None),
    (re.compile(r"configured limit of (\d+) tokens"), None, 1),
    (re.compile(r"request \((\d+) tokens\) exceeds (?:the available )?context size \((\d+) tokens\)"), 1, 2),
    (re.compile(r"input \((\d+) tokens\) is larger than the max context size \((\d+) tokens\)"), 1, 2),
    (re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum"), 1, 2),
    (re.compile(r"input token count \((\d+)\) exceeds the maximum number of tokens allowed \((\d+)\)"), 1, 2),
    (re.compile(r'"n_prompt_tokens":\s*(\d+)'), 1, None),
    (re.compile(r'"n_ctx":\s*(\d+)'), None, 1),
)
#: Where a server's own words start in agentnb's error text (``... refused the request (400): ``).
_SAID = re.compile(r"\(\d{3}\):\s*")


class Overflow(NamedTuple):
    """An overflow error read: the request's ``tokens`` and the ``window`` (None: not said), and
    the server's words."""

    tokens: int | None
    window: int | None
    text: str


def overflow_of(error: BaseException) -> Overflow | None:
    """The overflow ``error`` reports, or None when it is another error."""
    whole = f"{error} {getattr(error, 'detail', '') or ''}"
    low = whole.lower()
    if not any(mark in low for mark in _MARKS):
        return None
    tokens = window = None
    for pattern, t, w in _NUMBERS:
        found = pattern.search(low)
        if found is None:
            continue
        if t is not None and tokens is None:
            tokens = int(found.group(t))
        if w is not None and window is None:
            window = int(found.group(w))
    said = str(error)
    cut = _SAID.search(said)
    return Overflow(tokens, window, (said[cut.end() :] if cut else said).strip()[:300])


def overflow_error(over: Overflow, window: int | None, why: str, error: Any = None) -> ContextOverflow:
    """The :class:`~agentnb.errors.ContextOverflow` to raise for ``over`` (the server's words kept)."""
    tail = f"{why}; the server said: {over.text}" if over.text else why
    failed = ContextOverflow(over.tokens, over.window or window, tail, status=getattr(error, "status", None))
    failed.detail = getattr(error, "detail", "") or ""
    return failed
