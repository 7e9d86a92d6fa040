"""Running the user's code a read may touch (a ``__repr__``, a property on a path) within bounds.

* :func:`within` runs a function with a deadline. Python code it runs is traced (``sys.settrace``,
  on this thread only, the earlier trace function put back after) and stopped when the deadline
  passes: a ``__repr__`` stuck in a loop ends in :class:`TooSlow`, and nothing keeps running.
  Code in C (a ``time.sleep``, a regex) cannot be stopped this way; it ends when it ends.
* :func:`clipped_repr` is ``repr`` bounded in time and length; a repr that raises says so.
* :func:`plain` shows control characters (ANSI codes, ``\\r``, bidi overrides) as escapes, so
  text read from the kernel reaches the model as the characters it holds.

>>> clipped_repr("x" * 100, 20)
"'xxxxxxxxxxxxxxxxxx…  [102 characters]"
>>> class Hangs:
...     def __repr__(self):
...         while True:
...             pass
>>> clipped_repr(Hangs(), 40, seconds=0.05)
'<Hangs: repr did not finish in 0.05 s>'
>>> plain("\\x1b[31mred\\x1b[0m\\n<b>")
'\\\\x1b[31mred\\\\x1b[0m\\n<b>'
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Seconds a user ``__repr__`` (or a property read on a path) may take before it is stopped.
REPR_SECONDS = 0.5

# C0 controls but \t and \n, DEL, C1 controls, bidi overrides and isolates.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class TooSlow(BaseException):  # not an Exception: `except Exception` in user code lets it through
    """Raised inside user code whose deadline passed."""


def within(fn: Callable[[], T], seconds: float) -> T:
    """``fn()``, its Python code stopped with :class:`TooSlow` once ``seconds`` have passed.

    >>> within(lambda: 1 + 1, 1.0)
    2
    """
    deadline = time.monotonic() + seconds

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise TooSlow
        return trace

    earlier = sys.gettrace()
    sys.settrace(trace)
    try:
        return fn()
    finally:
        sys.settrace(earlier)


def clipped_repr(value: Any, width: int, *, seconds: float = REPR_SECONDS) -> str:
    """``repr(value)`` in at most ``width`` characters (and ``seconds``), control characters escaped."""
    name = type(value).__name__
    try:
        text = within(lambda: repr(value), seconds)
        if not isinstance(text, str):
            return f"<{name}: repr returned {type(text).__name__}>"
    except TooSlow:
        return f"<{name}: repr did not finish in {seconds:g} s>"
    except Exception as exc:
        return f"<{name}: repr raised {type(exc).__name__}>"
    return clip(plain(text), width)


def clip(text: str, width: int) -> str:
    """``text`` cut to about ``width`` characters, saying how long it was.

    >>> clip("abc", 10), clip("a" * 50, 10)
    ('abc', 'aaaaaaaaa…  [50 characters]')
    """
    if len(text) <= width:
        return text
    return f"{text[: max(width - 1, 1)]}…  [{len(text):,} characters]"


def plain(text: str) -> str:
    """``text`` with control characters written as escapes (``\\x1b``), tabs and newlines kept."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
