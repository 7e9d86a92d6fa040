"""Arrays that repeat themselves: close a list once its items start coming back.

A small model writing an array argument often falls into a loop after the items the request
gives: ``["chickpeas", "spinach", "chicken", "chicken", "chicken", ...]`` until the token cap.
Once the item just written is one the array already holds more often than the request writes
it, the array's closing tokens get a bonus and a further ``,`` a penalty, so the call ends
there instead of at the cap. Items the request itself repeats (``[1, 1, 2, 3, 5]`` of "the
sequence 1, 1, 2, 3, 5") are allowed as often as it writes them. The grammar still decides
what is allowed; this only shifts the model's preference.

>>> class Tok:
...     def batch_decode(self, ids):
...         return [["]", "]}", ",", ", ", "x"][i[0]] for i in ids]
>>> from agentnb.providers.guidance.steer import TokenTable
>>> items = RepeatedItems("Vegan recipes with chickpeas and spinach", TokenTable(Tok(), 5), 4.0)
>>> items.bonus('{"name": "f", "arguments": {"xs": ["chickpeas", "spinach", "chicken"')
{}
>>> items.bonus('{"name": "f", "arguments": {"xs": ["chickpeas", "spinach", "chicken", "chicken"')
{0: 8.0, 1: 8.0, 2: -4.0, 3: -4.0}
>>> RepeatedItems("the sequence 1, 1, 2", TokenTable(Tok(), 5), 4.0).bonus('{"xs": [1, 1')
{}
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentnb.providers.guidance.partial_json import scan
from agentnb.providers.guidance.steer import TokenTable


def completed_items(written: str) -> list[Any] | None:
    """The items of the innermost open array at the end of ``written``, when its last one is complete.

    None inside a string, outside an array, between items (after ``,``) or when the text
    does not read as JSON.

    >>> completed_items('{"a": [1, 2')
    [1, 2]
    >>> completed_items('{"a": ["x", "y"') , completed_items('{"a": ["x", "y') , completed_items('{"a": [1, ')
    (['x', 'y'], None, None)
    """
    state = scan(written)
    if state.in_string or not state.stack or state.stack[-1] != "[" or state.start is None:
        return None
    body = written[state.start :].rstrip()
    if not body or body.endswith(","):
        return None
    try:
        items = json.loads("[" + body + "]")
    except ValueError:
        return None  # a number still being written ("1.") or a nested value still open
    return items if isinstance(items, list) else None


def times_written(source: str, item: Any) -> int:
    """How often ``source`` writes ``item`` as a word of its own (at least once counts for any item).

    >>> times_written("1, 1, 2, 3", 1), times_written("chickpeas and spinach", "spinach"), times_written("", "x")
    (2, 1, 1)
    """
    if isinstance(item, (dict, list)) or item is None:
        return 1
    text = json.dumps(item) if isinstance(item, bool) else str(item)
    if not text:
        return 1
    count = len(re.findall(r"(?<!\w)" + re.escape(text) + r"(?!\w)", source, flags=re.IGNORECASE))
    return max(1, count)


class RepeatedItems:
    """Bonuses that close an array once its last item repeats one the request does not repeat."""

    def __init__(self, source: str, table: TokenTable, strength: float) -> None:
        self.source = source
        self.strength = strength
        self._closers = table.ending("]")
        self._goes_on = table.ending(",")
        # Tokens like '",' and '"]' close a string item and say what comes next in one go.
        self._string_closers = table.ending('"]')
        self._string_goes_on = table.ending('",')

    def bonus(self, written: str) -> dict[int, float]:
        state = scan(written)
        if state.in_string and state.stack and state.stack[-1] == "[" and state.start is not None:
            # Inside a string item: would closing it here repeat an earlier item?
            before = completed_items(written[: written.rfind('"')].rstrip().rstrip(","))
            item = written[written.rfind('"') + 1 :]
            if before and item and before.count(item) >= times_written(self.source, item):
                return {
                    **dict.fromkeys(self._string_closers, 2 * self.strength),
                    **dict.fromkeys(self._string_goes_on, -self.strength),
                }
            return {}
        items = completed_items(written)
        if not items or len(items) < 2:
            return {}
        last = items[-1]
        if items.count(last) <= times_written(self.source, last):
            return {}
        return {
            **dict.fromkeys(self._closers, 2 * self.strength),
            **dict.fromkeys(self._goes_on, -self.strength),
        }
