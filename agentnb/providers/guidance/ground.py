"""Grounding prose in tool results: the answer after a tool ran favours the result's own words.

A small model asked to answer from a tool's result often writes something else: SmolLM2-135M
answered "The answer is: 2000-01-01" when the weekday tool had returned ``Saturday``, and 2737
when the calculator had returned 3367. :class:`ResultBias` extends the copy bias that keeps call
arguments on the request (:mod:`agentnb.providers.guidance.steer`) to the tool messages, for the prose
written after them:

* **starting**: until a content word or number of a result (``Saturday``, ``3367``,
  ``26.0976``, ``mi``) has been written, tokens that start one get a bonus;
* **going on**: while the answer is copying a span of a result ("26.09" of "26.0976 mi"),
  tokens that continue the span get the full bonus, so numbers are not cut or changed.

>>> content_words("42 km = 26.0976 mi")
['42', 'km', '26.0976', 'mi']
>>> content_words('{"temp": 21.5, "sky": "clear"}')
['temp', '21.5', 'sky', 'clear']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentnb.providers.guidance.steer import START_SHARE, TokenTable, spans

#: Words and numbers of a result an answer should carry: numbers (with decimals, signs, dates),
#: and words of two letters or more.
_CONTENT = re.compile(r"-?\d[\d.,:/-]*\d|\d|[^\W\d_][\w'-]*[\w]")
#: At most this many content words per result are favoured (a long result is a document, not a value).
MAX_CONTENT_WORDS = 12
#: Function words not worth favouring.
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "in",
        "on",
        "at",
        "is",
        "are",
        "was",
        "were",
        "and",
        "or",
        "for",
        "with",
        "by",
        "from",
        "as",
        "it",
        "this",
        "that",
        "be",
    ]
)


def content_words(text: str) -> list[str]:
    """The words and numbers of ``text`` an answer may copy, in order, without repeats."""
    out: list[str] = []
    for m in _CONTENT.finditer(text):
        word = m.group().rstrip(".,")
        if word and word.lower() not in _STOP and word not in out:
            out.append(word)
    return out


class ResultBias:
    """Logit bonuses that keep prose on the words of ``results`` (the tool messages' contents).

    >>> class Tok:
    ...     def batch_decode(self, ids):
    ...         return [["The", " Sat", "urday", " 2000", "Sat"][i[0]] for i in ids]
    >>> bias = ResultBias(["Saturday"], TokenTable(Tok(), 5), 4.0)
    >>> bias.bonus("The answer is")   # start a content word: half the strength
    {1: 2.0}
    >>> bias.bonus("It is Sat")        # go on within the span: the full strength
    {2: 4.0}
    >>> bias.bonus("It is Saturday.")  # every content word written: nothing more
    {}
    """

    def __init__(self, results: Sequence[str], table: TokenTable, strength: float) -> None:
        self.results = [r for r in results if r.strip()]
        self.table = table
        self.strength = strength
        words: list[str] = []
        for r in self.results:
            words += content_words(r)[:MAX_CONTENT_WORDS]
        self.words = list(dict.fromkeys(words))

    def bonus(self, written: str) -> dict[int, float]:
        """The tokens to favour after the prose ``written`` so far, each with its logit bonus."""
        out: dict[int, float] = {}
        copying = self._copying(written)
        if copying:
            rests = [rest for r in self.results for rest in spans(r, copying, numeric=False)]
            going = [rest for rest in rests if rest]
            within = self.table.continuing([r for r in going if not r[0].isspace()], "prose")
            nxt = self.table.continuing([r for r in going if r[0].isspace()], "prose")
            out.update(dict.fromkeys(nxt - within, self.strength * START_SHARE))
            out.update(dict.fromkeys(within, self.strength))
            if within:
                return out
        missing = [w for w in self.words if w not in written]
        if missing:
            last = written[-1:]
            # after a word a new one needs a space; after a space none; after '"' or ':' either
            heads = [""] if not last or last.isspace() else [" "] if last.isalnum() else ["", " "]
            starts = self.table.continuing([h + w for w in missing for h in heads], "prose")
            for token in starts:
                out.setdefault(token, self.strength * START_SHARE)
        return out

    def _copying(self, written: str) -> str:
        """The longest end of ``written``, from a word start, that a result goes on from."""
        tail = written[-60:]
        for i in range(len(tail)):
            if (i == 0 and len(written) > 60) or (i > 0 and tail[i - 1].isalnum()) or not tail[i].isalnum():
                continue
            piece = tail[i:]
            if any(spans(r, piece, numeric=False) for r in self.results):
                return piece
        return ""
