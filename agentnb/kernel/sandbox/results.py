"""What a code step showed, shaped like a cell's output: streams, value, images, an error, names.

Built from the kernel's iopub messages (:class:`Collector`), read by the model as text
(:meth:`CodeResult.text`) and kept on the ``ToolFinished`` event as data
(:meth:`CodeResult.data`). Kernel text is untrusted: ANSI codes are removed, every stream is
capped with a visible note, and HTML is never used (a DataFrame's text comes from agentnb's
rich-result path inside the sandbox, or from ``text/plain``).

>>> c = Collector()
>>> c.add({"msg_type": "stream", "content": {"name": "stdout", "text": "\\x1b[31mhi\\x1b[0m\\n"}})
>>> c.add({"msg_type": "execute_result", "content": {"data": {"text/plain": "2"}}})
>>> print(c.result(changed=["x"]).text())
hi
Out: 2
Names created or changed: x
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from agentnb.messages import Image

#: Characters kept of each of stdout and stderr.
MAX_STREAM = 10_000
#: Characters kept of a value's text.
MAX_VALUE = 10_000
#: Lines kept of a traceback (its last ones: where it failed).
MAX_TRACEBACK_LINES = 30
#: Images kept from one step.
MAX_IMAGES = 4
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


def plain(text: str) -> str:
    """``text`` without ANSI escape codes (colours, cursor moves, titles).

    >>> plain("\\x1b[0;31mZeroDivisionError\\x1b[0m")
    'ZeroDivisionError'
    """
    return _ANSI.sub("", text)


@dataclass(frozen=True)
class CodeError:
    """An exception raised by the code: its type's name, message and the end of its traceback."""

    ename: str
    evalue: str
    traceback: str


@dataclass(frozen=True)
class CodeResult:
    """What a code step showed, as a cell shows it."""

    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    images: tuple[Image, ...] = ()
    error: CodeError | None = None
    changed: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    def text(self) -> str:
        """The result as the model reads it."""
        parts = list(self.notes)
        if self.stdout:
            parts.append(self.stdout.rstrip("\n"))
        if self.stderr:
            parts.append("stderr:\n" + self.stderr.rstrip("\n"))
        if self.value is not None:
            parts.append(("Out:\n" if "\n" in self.value else "Out: ") + self.value)
        if self.images:
            parts.append(f"({len(self.images)} image(s) attached: shown to you after this result)")
        if self.error is not None:
            parts.append(f"Error: {self.error.ename}: {self.error.evalue}")
            if self.error.traceback:
                parts.append(self.error.traceback)
        if self.changed:
            parts.append("Names created or changed: " + ", ".join(self.changed))
        return "\n".join(parts) if parts else "(no output)"

    def data(self) -> dict[str, Any]:
        """The result as JSON data (the ``ToolFinished`` event's ``structured``)."""
        error = None if self.error is None else {"ename": self.error.ename, "evalue": self.error.evalue}
        return {"stdout": self.stdout, "stderr": self.stderr, "value": self.value, "error": error,
                "changed": list(self.changed), "images": len(self.images)}  # fmt: skip


class Collector:
    """Gathers one execution's iopub messages into a :class:`CodeResult`."""

    def __init__(self) -> None:
        self.streams: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.sizes = {"stdout": 0, "stderr": 0}
        self.value: str | None = None
        self.images: list[Image] = []
        self.error: CodeError | None = None
        self.dropped_images = 0

    def add(self, msg: dict[str, Any]) -> None:
        """Take one iopub message (of this execution)."""
        kind, content = msg.get("msg_type"), msg.get("content") or {}
        if kind == "stream":
            self._stream(str(content.get("name")), str(content.get("text", "")))
        elif kind in ("execute_result", "display_data"):
            data = content.get("data") or {}
            self._image(data)
            if kind == "execute_result" and "text/plain" in data:
                self.value = _cut(plain(str(data["text/plain"])), MAX_VALUE, "value")
        elif kind == "error":
            self.error = error_of(content)
        elif kind == "clear_output":
            self.streams = {"stdout": [], "stderr": []}
            self.sizes = {"stdout": 0, "stderr": 0}

    def _stream(self, name: str, text: str) -> None:
        name = name if name in self.sizes else "stdout"
        room = MAX_STREAM - self.sizes[name]
        if room > 0:
            self.streams[name].append(text[:room])
        self.sizes[name] += len(text)

    def _image(self, data: dict[str, Any]) -> None:
        for mime in ("image/png", "image/jpeg"):
            if mime in data:
                if len(self.images) >= MAX_IMAGES:
                    self.dropped_images += 1
                    return
                try:
                    self.images.append(Image(base64.b64decode(str(data[mime]), validate=False), mime))
                except (binascii.Error, ValueError):
                    pass
                return

    def stream_text(self, name: str) -> str:
        text = plain("".join(self.streams[name]))
        extra = self.sizes[name] - MAX_STREAM
        return text + (f"\n… ({name} cut: {extra:,} more characters not shown)" if extra > 0 else "")

    def result(self, changed: list[str] | tuple[str, ...] = (), notes: list[str] | tuple[str, ...] = (),
               value: str | None = None) -> CodeResult:  # fmt: skip
        """The result; ``value`` (the sandbox's rich text of the value) replaces ``text/plain``."""
        notes = list(notes)
        if self.dropped_images:
            notes.append(f"({self.dropped_images} more image(s) not attached: at most {MAX_IMAGES})")
        shown = _cut(plain(value), MAX_VALUE, "value") if value is not None and self.value is not None else self.value
        return CodeResult(self.stream_text("stdout"), self.stream_text("stderr"), shown, tuple(self.images),
                          self.error, tuple(changed), tuple(notes))  # fmt: skip


def error_of(content: dict[str, Any]) -> CodeError:
    """A :class:`CodeError` from an ``error`` message or an error reply: ANSI out, traceback cut."""
    lines = plain("\n".join(str(t) for t in content.get("traceback") or ())).splitlines()
    cut = len(lines) - MAX_TRACEBACK_LINES
    if cut > 0:
        lines = [f"(traceback cut: its first {cut} lines not shown)", *lines[cut:]]
    ename = plain(str(content.get("ename", "Error")))[:200]
    return CodeError(ename, _cut(plain(str(content.get("evalue", ""))), 2000, "message"), "\n".join(lines))


def _cut(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({what} cut: {len(text) - limit:,} more characters not shown)"
