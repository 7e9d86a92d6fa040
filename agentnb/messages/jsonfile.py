"""JSON that agentnb writes and reads back: strict, bounded, and errors that name the field.

Every file agentnb writes (transcripts, saved sessions, evaluation logs, cassettes) is read
back through :func:`loads`, which refuses what strict JSON has no place for and what would
break the code that reads it later: ``NaN`` and ``±Infinity`` (``1e999`` too), integers of more
than :data:`MAX_INT_DIGITS` digits, and nesting deeper than :data:`MAX_FILE_DEPTH`. The error
(:class:`ReadbackError`, a ``ValueError``) names the field, as the field-by-field checks do. A line
that is not JSON at all (a torn write) stays a :class:`json.JSONDecodeError`, so a reader can
tell the two apart. :func:`dumps` never writes ``NaN`` or ``Infinity``: JSON has no such numbers,
so a value that is one is written as ``null``.

>>> loads('{"row": {"latency": 0.5}}')
{'row': {'latency': 0.5}}
>>> loads('{"row": {"scores": {"ok": NaN}}}')
Traceback (most recent call last):
...
agentnb.messages.jsonfile.ReadbackError: row.scores.ok: NaN is not a JSON number
>>> loads("[" * 300 + "]" * 300)
Traceback (most recent call last):
...
agentnb.messages.jsonfile.ReadbackError: [0][0][0][0]...: nested more than 200 levels deep
>>> dumps({"cost": float("nan")})
'{"cost": null}'
"""

from __future__ import annotations

import json
import math
import re
import sys
from itertools import accumulate, repeat
from typing import Any

#: Deepest nesting of arrays and objects read back from a file (a model's arguments may nest
#: 64 levels, :data:`agentnb.messages.jsonsafe.MAX_DEPTH`; a file wraps them in a few more).
MAX_FILE_DEPTH = 200
#: Longest integer read back, in digits: Python's own limit for turning text into an int, so
#: whatever agentnb could write reads back.
MAX_INT_DIGITS = 4300

_NOT_BRACKETS = {c: None for c in range(128) if chr(c) not in "[]{}"}  # outside strings JSON is ASCII
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}:,]', re.S)


class ReadbackError(ValueError):
    """JSON that parses but is not read back: a number JSON does not have, an integer too long,
    nesting too deep. The message starts with the field (``row.scores.ok: NaN is ...``)."""


class _Number:
    """A number the parser met that is refused, kept in its place so its field can be named."""

    __slots__ = ("text", "why")

    def __init__(self, text: str, why: str) -> None:
        self.text = text
        self.why = why


def loads(text: str | bytes) -> Any:
    """Strict JSON: as :func:`json.loads`, refusing non-finite numbers, huge integers and deep nesting.

    Raises :class:`json.JSONDecodeError` (or ``UnicodeDecodeError``) for text that is not JSON,
    :class:`ReadbackError` naming the field for JSON that is refused.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if _depth(text) > MAX_FILE_DEPTH:
        try:
            json.loads(text)  # a torn line is a torn line, however deep it got before the tear
        except json.JSONDecodeError:
            raise
        except (ValueError, RecursionError):
            pass
        raise ReadbackError(f"{_deep_path(text)}: nested more than {MAX_FILE_DEPTH} levels deep")
    try:
        return _FAST.decode(text)  # one decoder, built once; its hooks stop at a refused number
    except json.JSONDecodeError:
        raise
    except (_Stop, ValueError):  # ValueError: an integer past Python's own digit limit
        pass
    except RecursionError:  # text too broken for the depth scan to see its nesting
        raise ReadbackError(f"nested more than {MAX_FILE_DEPTH} levels deep") from None
    return _named(text)


class _Stop(Exception):  # noqa: N818 - a signal to read again, not an error
    """A refused number met on the fast path: read again, to name its field."""


def _fast_float(s: str) -> float:
    value = float(s)
    if not math.isfinite(value):
        raise _Stop
    return value


def _fast_int(s: str) -> int:
    if len(s) > MAX_INT_DIGITS:
        raise _Stop
    return int(s)


def _stop(s: str) -> Any:
    raise _Stop


_FAST = json.JSONDecoder(
    parse_constant=_stop,
    parse_float=_fast_float,
    # Python refuses integers longer than its own limit (a ValueError); else the hook bounds them.
    parse_int=None if 0 < sys.get_int_max_str_digits() <= MAX_INT_DIGITS else _fast_int,
)


def _named(text: str) -> Any:
    """``text`` read again, keeping each refused number in its place, to name its field."""
    refused: list[_Number] = []

    def refuse(s: str, why: str) -> _Number:
        refused.append(_Number(s if len(s) <= 24 else f"a number of {len(s)} digits", why))
        return refused[-1]

    def whole(s: str) -> Any:
        return int(s) if len(s) <= MAX_INT_DIGITS else refuse(s, f"longer than {MAX_INT_DIGITS} digits")

    def real(s: str) -> Any:
        value = float(s)
        return value if math.isfinite(value) else refuse(s, "too large for a float")

    data = json.loads(text, parse_constant=lambda s: refuse(s, "not a JSON number"), parse_float=real, parse_int=whole)
    if not refused:  # pragma: no cover - the fast path stopped for a reason the slow one finds
        return data
    path, bad = _find(data)
    raise ReadbackError(f"{path + ': ' if path else ''}{bad.text} is {bad.why}")


def _depth(text: str) -> int:
    """The deepest nesting in ``text``, outside strings; linear time, in C string methods."""
    if text.count("[") + text.count("{") <= MAX_FILE_DEPTH:  # cheap: too few brackets to be deep
        return 0
    if "\\" in text:  # escapes: an escaped backslash, then an escaped quote, is no string's end
        text = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(text.split('"')[::2]).translate(_NOT_BRACKETS)  # every other piece is a string
    return max(accumulate(map(_STEP.get, outside, repeat(0))), default=0)


def _deep_path(text: str) -> str:
    """Where ``text`` first nests too deeply, as a field path (the first few steps)."""
    stack: list[list[Any]] = []  # [bracket, key or index] per open container
    last = ""
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token[0] == '"':
            last = token
        elif token == ":" and stack:
            stack[-1][1] = _key(last)
        elif token == ",":
            if stack and stack[-1][0] == "[":
                stack[-1][1] += 1
        elif token in "[{":
            if len(stack) == MAX_FILE_DEPTH:
                return path_of([s[1] for s in stack[:4]]) + "..."
            stack.append([token, 0 if token == "[" else ""])
        elif stack:
            stack.pop()
    return "the value"


def _key(token: str) -> str:
    try:
        return str(json.loads(token))
    except ValueError:
        return token[1:-1]


def _find(data: Any) -> tuple[str, _Number]:
    """The path of the first refused number in ``data`` (no recursion: ``data`` is bounded, but
    deep)."""
    todo: list[tuple[list[Any], Any]] = [([], data)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, _Number):
            return path_of(path), value
        if isinstance(value, dict):
            todo.extend(([*path, k], v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            todo.extend(([*path, i], v) for i, v in reversed(list(enumerate(value))))
    raise AssertionError("a refused number was counted but not found")  # pragma: no cover


def path_of(steps: list[Any]) -> str:
    """A field path as agentnb's errors write it.

    >>> path_of(["row", "scores", "exact match", 0])
    "row.scores['exact match'][0]"
    """
    out = ""
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif step.isidentifier():
            out += f".{step}" if out else step
        else:
            out += f"[{step!r}]"
    return out


def under(field: str, reason: str) -> str:
    """``reason`` (an error from inside ``field``) prefixed by the field.

    >>> under("tools", "[2]: expected str, not int 5"), under("passed", "expected bool, not str 'x'")
    ('tools[2]: expected str, not int 5', "passed: expected bool, not str 'x'")
    """
    return field + reason if reason.startswith("[") else f"{field}: {reason}"


def dumps(data: Any, **options: Any) -> str:
    """:func:`json.dumps` that writes no ``NaN`` or ``Infinity`` (each is ``null``) and no integer
    longer than :data:`MAX_INT_DIGITS` digits (``null`` too); ``options`` are json.dumps's."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError as exc:  # rare: a non-finite float or a huge int somewhere; clean and write again
        default = options.pop("default", None)
        clean_default = None if default is None else (lambda o: _clean(default(o)))
        try:
            cleaned = _clean(data)
        except RecursionError:  # a circular value: json's own error says so
            raise exc from None
        return json.dumps(cleaned, allow_nan=False, default=clean_default, **options)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and value.bit_length() * 0.30103 > MAX_INT_DIGITS - 1:  # log10(2): digits
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value
