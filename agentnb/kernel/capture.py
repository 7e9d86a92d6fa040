"""Capturing what one thread prints, and only that thread: the kernel's stdout stays the kernel's.

While code runs, ``sys.stdout`` and ``sys.stderr`` are :class:`Router` objects: a write from a
thread that is capturing goes to its :class:`Buffer` (bounded: the rest is counted, not kept),
any other write to the stream that was there before. A thread that could not be stopped (blocked
in a C call past its timeout) keeps its buffer, so whatever it prints later is discarded, never
written into a later cell's output. The routers are removed when the last capture ends (if
nobody replaced them meanwhile).

>>> import threading
>>> with capturing(threading.get_ident(), 10) as (out, err):
...     print("hello, world and more")
>>> out.text(), out.cut
('hello, wor', 12)
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

_lock = threading.Lock()
_active: dict[int, tuple[Buffer, Buffer]] = {}
_installed: tuple[Router, Router] | None = None


class Buffer:
    """Text written by one thread to one stream, kept up to ``limit`` characters."""

    __slots__ = ("parts", "size", "limit", "cut")

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.limit = limit
        self.cut = 0

    def write(self, text: str) -> int:
        room = self.limit - self.size
        if room >= len(text):
            self.parts.append(text)
            self.size += len(text)
        else:
            if room > 0:
                self.parts.append(text[:room])
                self.size = self.limit
            self.cut += len(text) - max(room, 0)
        return len(text)

    def text(self) -> str:
        return "".join(self.parts)


class Router:
    """A stand-in for ``sys.stdout`` / ``sys.stderr`` that routes each write by thread."""

    def __init__(self, inner: TextIO, index: int) -> None:
        self.inner = inner
        self.index = index

    def write(self, text: str) -> int:
        buffers = _active.get(threading.get_ident())
        if buffers is None:
            return self.inner.write(text)
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        return buffers[self.index].write(text)

    def flush(self) -> None:
        if threading.get_ident() not in _active:
            self.inner.flush()

    def isatty(self) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, ...: the real stream's
        return getattr(self.inner, name)


@contextlib.contextmanager
def capturing(ident: int, limit: int) -> Iterator[tuple[Buffer, Buffer]]:
    """While the block runs, thread ``ident``'s stdout and stderr go to two buffers."""
    buffers = (Buffer(limit), Buffer(limit))
    start(ident, buffers)
    try:
        yield buffers
    finally:
        end(ident)


def start(ident: int, buffers: tuple[Buffer, Buffer]) -> None:
    """Route thread ``ident``'s output to ``buffers`` (installing the routers if needed)."""
    global _installed
    with _lock:
        _active[ident] = buffers
        if _installed is None or sys.stdout is not _installed[0] or sys.stderr is not _installed[1]:
            _installed = (Router(sys.stdout, 0), Router(sys.stderr, 1))
            sys.stdout, sys.stderr = _installed


def end(ident: int) -> None:
    """Stop routing thread ``ident``; the last capture puts the real streams back."""
    global _installed
    with _lock:
        _active.pop(ident, None)
        if _active or _installed is None:
            return
        out, err = _installed
        if sys.stdout is out:
            sys.stdout = out.inner
        if sys.stderr is err:
            sys.stderr = err.inner
        _installed = None


def captured_threads() -> int:
    """How many threads are capturing now (a thread that could not be stopped still is)."""
    return len(_active)
