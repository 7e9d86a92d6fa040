"""Steering a constrained call as it is decoded: finish it within budget, copy values from the request.

The grammar (:mod:`agentnb.providers.guidance.constraint`) decides which tokens may come next; this
module nudges the choice among them. Two things, both only while a JSON call is written:

* **Closing**: a call still open when the token budget is spent gets a few more tokens, and
  where the grammar allows one, each must be a token that closes the innermost open string,
  array or object. A call that ran long (a string that never ends, an array that repeats) is
  finished and valid instead of being cut off half-written.
* **Copying** (:class:`CopyBias`): argument values are usually spans of the user's request
  ("Brooklyn", ``10, 12, 23``). While a value is written, tokens that continue such a span get a
  logit bonus, and where the span ends (the request goes on with punctuation, or stops) tokens
  that close the value get it. Small models drift off spans they start copying ("Bloemburg"
  for "Brooklyn") and run on past the end of lists; this keeps them on the text.

>>> value_so_far('{"name": "f", "arguments": {"city": "Bro')
('Bro', 'string')
>>> value_so_far('{"name": "f", "arguments": {"xs": [10, 12')
('10, 12', 'list')
>>> value_so_far('{"name": "f", "arguments": {"ci') is None
True
>>> spans("Any cheap thai places in Brooklyn?", "Bro", numeric=False)
['oklyn?']
>>> spans("Compute (12+7)*3", "", numeric=False)
['Compute (12+7)*3', '(12+7)*3', '12+7)*3', '7)*3', '3']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentnb.providers.guidance.partial_json import Scan, scan, value_so_far

__all__ = [
    "CLOSERS",
    "LEAK_PENALTY",
    "MAX_TOKEN_CHARS",
    "START_SHARE",
    "CopyBias",
    "Scan",
    "TokenTable",
    "numeric_forms",
    "request_text",
    "scan",
    "spans",
    "value_so_far",
]

#: Characters a closing token is made of.
CLOSERS = frozenset('"]}')
#: The share of the copy bias given to the weaker hints: starting a value on any word of the
#: request, and going on into a span's next word.
START_SHARE = 0.5
#: Longest token text looked up when continuing a span.
MAX_TOKEN_CHARS = 24
#: Characters of the call's own syntax and of the prompt's format line
#: (``{"<parameter>": <value>, ...}}``): a string value that starts with one the request does
#: not contain is that text leaking into the value (``"}} 12345678"``), never a copy.
_SYNTAX = frozenset("{}[]<>")
#: Punctuation that, in the same token as a value's opening quote, closes rather than opens it.
_AFTER_QUOTE = frozenset(",:;.)!?")
#: The logit penalty on such a start (a ban in all but name: the model's own preference for
#: the format it was shown can be strong).
LEAK_PENALTY = 100.0
#: What ends the value being written, by where it stands (numbers end by themselves).
_VALUE_CLOSERS = {"string": ('"',), "list": ("]",), "list-string": ('"]',)}
#: Characters of the tokens that may end a value: '"', '",', '"]}'...
_PUNCTUATION = frozenset('"]}, ')
#: Characters a copied span may go on with; any other (or the end) ends it: "Brooklyn?".
#: Operators go on too, so an expression is copied whole: "x^2", "3x+2", "(a+b)*c"; so do "@" and
#: "_", so an address or a name is: "jane.doe@corp.io", "alice_smith".
_GOES_ON = frozenset(" ,.-/:^*+=()%@_")
#: Characters a copied value may start with when a word follows them: "(12+7)*3", "-40",
#: "$2,500", "'quoted'", "./data.csv", "#general", "@alice", "~/notes".
_OPENED = re.compile(r"[(\-+$'/.#@~\[]+\w")
#: Words that usually start a new phrase: a string value that reaches one may well end there
#: ("from San Francisco | to Boston | on 2025-06-12"), so closing gets a (weak) bonus and going
#: on gets none; the model's own preference decides.
_PHRASE_WORDS = frozenset(
    [
        "to",
        "from",
        "on",
        "at",
        "for",
        "with",
        "by",
        "under",
        "over",
        "between",
        "before",
        "after",
        "until",
        "via",
        "during",
    ]
)


def _goes_on(rest: str, where: str = "string") -> bool:
    """Whether a span continues into ``rest``: a word, a space, "," or "-"..., or "'" in "don't".

    A list of numbers goes on only with more numbers: "3, 88 from biggest" ends after 88.
    """
    if not rest:
        return False
    if where == "list":
        return _MORE_NUMBERS.match(rest) is not None
    if rest[0] == "%":  # "15%" is one string value; the number 15 ends there
        return where != "number"
    return rest[0].isalnum() or rest[0] in _GOES_ON or (rest[0] == "'" and rest[1:2].isalpha())


#: What may follow a number in a list of numbers that goes on: digits, or separators then a
#: digit, also through a range's words: "1, 2 and 3", "from x=1 to x=3", "between 0 and 4".
_MORE_NUMBERS = re.compile(r"[\d.]|[,;\s]*(?:(?:and|to|or|through|until)\s+)?(?:[a-z]\w{0,2}\s*=\s*)?-?\d")


def _new_phrase(rest: str, where: str) -> bool:
    """Whether a string value's span goes on into a phrase word (" to Boston on ...")."""
    words = rest.split(None, 1)
    return where in ("string", "list-string") and rest[:1] == " " and bool(words) and words[0].lower() in _PHRASE_WORDS


def _word_start(text: str, i: int) -> bool:
    """Whether a word or number starts at ``text[i]`` (not "40" inside "86.40")."""
    before = text[max(0, i - 2) : i]
    return not before[-1:].isalnum() and not (before[-1:] == "." and before[:1].isdigit())


#: Which tokens stay inside a value being written (others would end it), by where it stands.
_STAYS_INSIDE = {
    "string": lambda text: '"' not in text,
    "number": lambda text: all(ch in "0123456789.-+eE" for ch in text),
}

#: Thousands separators inside numbers ("2,500"), dropped where a number is being written.
_GROUPED = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
#: Numbers with a scale: "213 million", "1.4 billion", "2.5k", "1.2M", "$30k".
_SCALED = re.compile(r"(\d+(?:\.\d+)?)(?:\s*(thousand|million|billion|trillion)\b|(k|K|M|bn|B)\b)")
_SCALES = {"thousand": 1e3, "k": 1e3, "K": 1e3, "million": 1e6, "M": 1e6, "billion": 1e9, "bn": 1e9, "B": 1e9}
_SCALES["trillion"] = 1e12


def numeric_forms(source: str) -> list[str]:
    """``source`` as a number may be copied from it: without thousands separators, and with
    scale words written out as digits.

    >>> numeric_forms("a loan of $2,500")
    ['a loan of $2500']
    >>> numeric_forms("213 million people, 1.2M dollars, 2.5k steps")
    ['213 million people, 1.2M dollars, 2.5k steps', '213000000 people, 1200000 dollars, 2500 steps']
    """
    plain = _GROUPED.sub("", source)
    scaled = _SCALED.sub(_expand, plain)
    return [plain] if scaled == plain else [plain, scaled]


def _expand(m: re.Match[str]) -> str:
    value = float(m.group(1)) * _SCALES[m.group(2) or m.group(3)]
    return str(int(value)) if value.is_integer() else repr(value)


class TokenTable:
    """The decoded text of every token of a tokenizer, indexed for steering (built once, ~0.2 s).

    >>> class Tok:
    ...     def batch_decode(self, ids):
    ...         return [["a", '"', '"]', "ab"][i[0]] for i in ids]
    >>> table = TokenTable(Tok(), 4)
    >>> table.closing, table.continuing(["abc"]), table.ending('"')
    ([1, 2], {0, 3}, [1, 2])
    """

    def __init__(self, tokenizer: Any, vocab_size: int) -> None:
        texts = tokenizer.batch_decode([[i] for i in range(vocab_size)])
        #: The text of each token on its own.
        self.texts: list[str] = list(texts)
        self.closing = [i for i, t in enumerate(texts) if t and set(t) <= CLOSERS]
        #: Tokens made only of JSON punctuation ('"', ",", "]", "}", " "): how values end.
        self._punctuation = [(i, t) for i, t in enumerate(texts) if t and set(t) <= _PUNCTUATION]
        self._by_text: dict[str, list[int]] = {}
        self._closing_masks: dict[str, Any] = {}
        self._leading: dict[str, list[int]] = {}
        #: Tokens that are a number, spaces aside: " 12", "7" (see loops.RepeatGuard).
        self.numeric = frozenset(i for i, t in enumerate(texts) if t.strip().isdigit())
        #: Tokens that only open a value: '"', '["', "[" (neutral for copying: a copy can follow).
        self.openers = [i for i, t in enumerate(texts) if t in ('"', '["', "[")]
        for i, text in enumerate(texts):
            key = text.replace('"', "")  # a token like '", ' continues a list of strings
            if key and "\ufffd" not in key and len(key) <= MAX_TOKEN_CHARS:
                self._by_text.setdefault(key, []).append(i)

    def leading(self, chars: frozenset[str], opener: str = "") -> list[int]:
        """Tokens whose text, spaces aside, starts with ``opener`` and then one of ``chars``."""
        key = opener + "".join(sorted(chars))
        found = self._leading.get(key)
        if found is None:
            found = [
                i
                for i, t in enumerate(self.texts)
                if (r := t.lstrip()).startswith(opener)
                and r[len(opener) : len(opener) + 1] in chars
                and r[len(opener) :]
            ]
            self._leading[key] = found
        return found

    def closing_mask(self, first: str) -> Any:
        """A numpy bool array over the vocabulary: True for closing tokens that start with ``first``."""
        mask = self._closing_masks.get(first)
        if mask is None:
            import numpy as np

            mask = np.zeros(len(self.texts), dtype=bool)
            mask[[i for i in self.closing if self.texts[i].startswith(first)]] = True
            self._closing_masks[first] = mask
        return mask

    def ending(self, prefix: str) -> list[int]:
        """Punctuation tokens that start with ``prefix``: ``'"'`` gives '"', '",', '"}'..."""
        return [i for i, t in self._punctuation if t.startswith(prefix)]

    def continuing(self, continuations: Sequence[str], where: str = "start") -> set[int]:
        """Tokens whose text (quotes aside) starts one of ``continuations``.

        ``where`` (see :func:`value_so_far`) keeps only tokens that stay inside the value: no
        quote inside a string, only digits and the like inside a number.
        """
        out: set[int] = set()
        for rest in continuations:
            for n in range(1, min(len(rest), MAX_TOKEN_CHARS) + 1):
                out.update(self._by_text.get(rest[:n], ()))
        keep = _STAYS_INSIDE.get(where)
        return {i for i in out if keep(self.texts[i])} if keep else out


def spans(source: str, value: str, *, numeric: bool) -> list[str]:
    """How ``source`` goes on after each place ``value`` starts at a word boundary in it.

    An empty ``value`` starts anywhere a word does, or an opening bracket, sign or quote before
    one ("(12+7)*3", "-40", "$30"). For numbers, ``source`` is read in each of
    its :func:`numeric_forms`, so "$2,500" continues as "2500" and "2.5k" as "2500".
    """
    out = []
    for text in numeric_forms(source) if numeric else [source]:
        start = text.find(value) if value else 0
        while 0 <= start < len(text):
            if _word_start(text, start) and (value or text[start].isalnum() or _OPENED.match(text, start)):
                out.append(text[start + len(value) :])
            start = text.find(value, start + 1) if value else start + 1
    return list(dict.fromkeys(out))


class CopyBias:
    """Logit bonuses that keep argument values on spans of ``source`` (the user's request)."""

    def __init__(self, source: str, table: TokenTable, strength: float) -> None:
        self.source = source
        self.table = table
        self.strength = strength
        self._starts: set[int] | None = None  # the same at every value start: computed once

    def bonus(self, written: str) -> dict[int, float]:
        """The tokens to favour after ``written``, each with its logit bonus.

        Going on within a word of the span, or closing the value where the span ends, gets the
        full ``strength``; starting a value, or going on into the span's next word, half of it
        (:data:`START_SHARE`): those are weaker hints, and a value that swallows the rest of
        the sentence ("JFK to LAX on ...") is worse than one that stops a word early.
        """
        state = value_so_far(written)
        if state is None:
            return {}
        value, where = state
        weak = self.strength * START_SHARE
        if not value:
            if self._starts is None:
                self._starts = self.table.continuing(spans(self.source, "", numeric=False)) | set(self.table.openers)
            out = dict.fromkeys(self._starts, weak)
            leaks = frozenset(_SYNTAX - set(self.source))
            if leaks:  # a string value (or its opening quote) followed by the call's own syntax
                opener = "" if where in ("string", "list-string") else '"'
                out.update(dict.fromkeys(self.table.leading(leaks, opener), -LEAK_PENALTY))
            if where not in ("string", "list-string"):
                # One token that opens the value and goes on with punctuation ('",' '".' '");')
                # is the model closing a value it never wrote; the quote alone stays open to it.
                out.update(dict.fromkeys(self.table.leading(_AFTER_QUOTE, '"'), -LEAK_PENALTY))
            return out
        if where == "list" and not spans(self.source, value, numeric=True):
            # Not a run of the request's numbers ("1, 3" of "from x=1 to x=3"): follow the
            # item being written on its own; a new item may start on any number of the request.
            value = value.rsplit(",", 1)[-1].strip()
            if not value:
                return dict.fromkeys(self.table.continuing(spans(self.source, "", numeric=True), where), weak)
        within, next_word = self.favoured(value, where)
        closing = self._phrase_end(value, where)
        out = {
            **dict.fromkeys(closing, weak),
            **dict.fromkeys(next_word, weak),
            **dict.fromkeys(within, self.strength),
        }
        scaled = self._scaled(value) if where in ("number", "list") else None
        if scaled is not None:
            # "213" of "213 million" is not finished (ending it would drop the scale), and
            # "213000000" is: closing is penalised, then favoured
            sign = -1.0 if scaled else 1.0
            for token in (*self.table.ending(","), *self.table.ending("}"), *self.table.ending("]")):
                out[token] = out.get(token, 0.0) + sign * self.strength
        return out

    def _scaled(self, value: str) -> bool | None:
        """For a number the request writes with a scale word: whether ``value`` goes on (True)
        or is the whole number (False); None when it is no such number."""
        forms = numeric_forms(self.source)
        if len(forms) < 2 or not value:
            return None
        item = value.rsplit(",", 1)[-1].strip()
        plain = set(spans(forms[0], item, numeric=False))
        rests = [r for r in spans(forms[1], item, numeric=False) if r not in plain]
        if not rests:
            return None
        return any(r[:1].isdigit() for r in rests)

    def _phrase_end(self, value: str, where: str) -> set[int]:
        """Closing tokens, where the request's next word starts a new phrase (see :data:`_PHRASE_WORDS`)."""
        if where not in ("string", "list-string") or not value:
            return set()
        for rest in spans(self.source, value, numeric=False):
            words = rest.split(None, 1)
            if rest[:1] == " " and words and words[0].lower() in _PHRASE_WORDS:
                return {t for closer in _VALUE_CLOSERS[where] for t in self.table.ending(closer)}
        return set()

    def favoured(self, value: str, where: str) -> tuple[set[int], set[int]]:
        """Tokens that continue ``value`` along a span of the source, or close it where the span ends.

        Returns ``(within, next_word)``: those that go on within a word (or close the value),
        and those that go on into the next word.
        """
        rests = spans(self.source, value, numeric=where in ("number", "list"))
        ended = [r for r in rests if value and not _goes_on(r, where)]
        going = [r for r in rests if r and r not in ended and not _new_phrase(r, where)]
        breaks = " ," if where in ("string", "number") else " "
        within = self.table.continuing([r for r in going if r[0] not in breaks], where)
        next_word = self.table.continuing([r for r in going if r[0] in breaks], where)
        if ended:
            for closer in _VALUE_CLOSERS.get(where, ()):
                within.update(self.table.ending(closer))
        return within, next_word - within


def request_text(pick: Any, messages: Sequence[Any]) -> str:
    """What argument values may copy: the user's own request (the UnTooled hint's ``query``,
    without the reply-format hints the layer appends to the message), else the last user
    message's text.

    >>> request_text({"query": "What is 37*91?"}, [])
    'What is 37*91?'
    """
    query = pick.get("query") if isinstance(pick, dict) else None
    if isinstance(query, str) and query:
        return query
    for m in reversed(messages):
        if getattr(m, "role", None) == "user" and isinstance(getattr(m, "content", None), str):
            return str(m.content)
    return ""
