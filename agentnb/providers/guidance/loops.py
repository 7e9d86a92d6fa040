"""Strings that loop: close a string value once it repeats a run the request does not hold.

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
