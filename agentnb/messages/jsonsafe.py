"""Reading untrusted JSON (a model's tool arguments) within bounds.

A model can send arguments nested thousands of levels deep; Python's parsers would raise
``RecursionError`` (or worse, later code would). :func:`too_deep` finds such text in linear
time without recursing, so callers can tell the model what is wrong instead of crashing.

>>> too_deep('{"a": [1, 2]}')
False
>>> too_deep("[" * 500 + "]" * 500)
True
>>> nesting_depth('{"a": "[[[[", "b": [[1]]}')
3
"""

from __future__ import annotations

import re

#: Deepest nesting of arrays/objects accepted in a model's arguments.
MAX_DEPTH = 64

# Strings (double- or single-quoted: the UnTooled parser also reads Python literals) are
# skipped as a whole; brackets inside them do not count. Unrolled loops: linear time.
_TOKEN = re.compile(r""""[^"\\]*(?:\\.[^"\\]*)*"|'[^'\\\n]*(?:\\.[^'\\\n]*)*'|[\[\]{}]""", re.S)


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting in ``text``, outside strings."""
    depth = best = 0
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > best:
                best = depth
        elif token in "]}":
            depth = max(0, depth - 1)
    return best


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """True when ``text`` nests arrays/objects more than ``limit`` levels deep."""
    if text.count("[") + text.count("{") <= limit:  # cheap: too few brackets to be too deep
        return False
    return nesting_depth(text) > limit


def depth_error(limit: int = MAX_DEPTH) -> str:
    """The message a model reads when its JSON is nested too deeply."""
    return f"the JSON is nested more than {limit} levels deep; send flatter arguments"
