"""Text that loops: a string value that repeats a run the request does not hold is closed, and
prose that has begun to repeat itself is stopped (:class:`RepeatGuard`).

A small model that leaves the request's words while writing a string value can fall into a
loop, ``"1998_1999_1999_1999_..."``, until the token cap: 13.7 s for one call on the embedded
model. Once the value ends with the same run written three times over (a run of at least two
different characters, nine in all: "1000000000" is no loop) and the request does not hold that text, the tokens that close the
string get a bonus, as :class:`~agentnb.providers.guidance.lists.RepeatedItems` does for an
array whose items come back. The value keeps what was written; the call ends there instead of
at the cap. The grammar still decides what is allowed; this only shifts the model's preference.

>>> looping_run("1998_1999_1999_1999", "who won the 1998 world cup")
'_1999'
>>> looping_run("ha ha ha ha", "laugh: ha ha ha ha"), looping_run("1000000000", "")
(None, None)
>>> class Tok:
...     def batch_decode(self, ids):
...         return [['"', '",', "x", '"}'][i[0]] for i in ids]
>>> from agentnb.providers.guidance.steer import TokenTable
>>> LoopingStrings("cup", TokenTable(Tok(), 4), 4.0).bonus('{"q": "ab_19_19_19')
{0: 8.0, 1: 8.0, 3: 8.0}
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from agentnb.providers.guidance.partial_json import value_so_far
from agentnb.providers.guidance.steer import TokenTable

#: A loop is a run written this many times in a row at the value's end...
TIMES = 3
#: ...of at least this many characters in all, the run at least two long and at most this long.
MIN_CHARS = 9
MAX_RUN = 40


def looping_run(value: str, source: str) -> str | None:
    """The run ``value`` ends with :data:`TIMES` times over, unless ``source`` holds it so (a copy)."""
    folded = " ".join(source.split()).lower()
    for size in range(2, min(MAX_RUN, len(value) // TIMES) + 1):
        run = value[-size:]
        tail = run * TIMES
        if (
            len(set(run)) > 1
            and len(tail) >= MIN_CHARS
            and value.endswith(tail)
            and " ".join(tail.split()).lower() not in folded
        ):
            return run
    return None


class LoopingStrings:
    """Bonuses that close a string value once it loops (see :func:`looping_run`)."""

    def __init__(self, source: str, table: TokenTable, strength: float) -> None:
        self.source = source
        self.strength = strength
        self._closers = table.ending('"')

    def bonus(self, written: str) -> dict[int, float]:
        state = value_so_far(written)
        if state is None or state[1] not in ("string", "list-string") or len(state[0]) < MIN_CHARS:
            return {}
        if looping_run(state[0], self.source) is None:
            return {}
        return dict.fromkeys(self._closers, 2 * self.strength)


#: Numbers written in words, for whether a request asks for numbers (see :class:`RepeatGuard`).
_NUMBERS = re.compile(r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten|twenty|hundred|count|number)", re.I)


class RepeatGuard:
    """Notices prose that has begun to loop, in two ways:

    * the same ``size``-token run for the ``times``-th time: small models often repeat a
      sentence until ``max_new_tokens`` runs out; stopping when a 16-token run comes back saves
      most of that time and loses nothing the reader wanted (prose rarely repeats 16 tokens word
      for word; SmolLM2's joke did, from its second sentence on);
    * a run of numbers and punctuation that keeps its shape while the numbers change ("1. 2. 3.
      4. ..."): a small model asked to open a file counted to 250 in 27 s. Numbers only count as
      the same when ``numeric`` (the tokens that are a number, :attr:`TokenTable.numeric`) is given. When the request or the results
      hold numbers (``numbers_asked``, see :func:`asks_numbers`), a list of them may be the
      answer, and the run must come back ``numbers_times`` times (about a hundred tokens);
      otherwise ``counting_times`` (a few dozen).

    >>> guard = RepeatGuard(size=2, times=3)
    >>> [guard.looping(t) for t in [1, 2, 1, 2, 1, 2]]
    [False, False, False, False, False, True]
    >>> counting = RepeatGuard(size=4, numeric=range(6), counting_times=3)  # tokens 0-5: " 1" to " 6"
    >>> [counting.looping(t) for t in [0, 6, 1, 6, 2, 6, 3, 6]]
    [False, False, False, False, False, False, False, True]
    """

    def __init__(
        self,
        size: int = 16,
        times: int = 2,
        *,
        numeric: Collection[int] = (),
        numbers_asked: bool = False,
        counting_times: int = 8,
        numbers_times: int = 48,
    ) -> None:
        self.size = size
        self.times = times
        self._tokens: list[int] = []
        self._seen: dict[tuple[int, ...], int] = {}
        self._numeric = numeric
        self._shapes: list[int] = []
        self._shape_seen: dict[tuple[int, ...], int] = {}
        self._shape_times = numbers_times if numbers_asked else counting_times

    def looping(self, token: int) -> bool:
        self._tokens.append(token)
        self._shapes.append(-1 if token in self._numeric else token)
        if len(self._tokens) < self.size:
            return False
        run = tuple(self._tokens[-self.size :])
        self._seen[run] = self._seen.get(run, 0) + 1
        if self._seen[run] >= self.times:
            return True
        shape = tuple(self._shapes[-self.size :])
        if shape == run or -1 not in shape:  # no number in it: the exact count above decides
            return False
        self._shape_seen[shape] = self._shape_seen.get(shape, 0) + 1
        return self._shape_seen[shape] >= self._shape_times


def asks_numbers(source: str, results: Sequence[str] = ()) -> bool:
    """Whether a list of numbers may be the answer: the request or a tool result holds a number.

    >>> asks_numbers("open config/app_settings.yaml"), asks_numbers("count to twenty")
    (False, True)
    """
    return any(_NUMBERS.search(text) for text in (source, *results))
