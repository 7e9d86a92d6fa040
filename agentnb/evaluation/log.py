"""The evaluation log: one JSON line per finished case (its row and whole transcript), flushed,
with every secret redacted.

The log is the record everything else reads: resume skips the keys already in it, and a row's
trace is reloaded from it by byte offset, so memory holds rows, not transcripts. A torn last
line (a process killed mid-write) is skipped with a warning; the next append starts a fresh line.
Every other line is read strictly (:mod:`agentnb.messages.jsonfile`) and checked field by field
(:mod:`agentnb.evaluation.rows`): a wrong one is a :class:`~agentnb.errors.TranscriptError`
naming the file, the line and the field.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
>>> with EvalLog(path) as log:
...     at = log.append({"key": "a", "output": "hi"}, {"output": "hi"})
>>> [row["key"] for row, _ in read_log(path)]
['a']
>>> load_transcript_at(path, at)
{'output': 'hi'}
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator
from typing import Any

from agentnb.errors import TranscriptError
from agentnb.evaluation.rows import check_line
from agentnb.messages import jsonfile
from agentnb.tracing.pieces import scrub_transcript
from agentnb.tracing.redact import Redactor, scrub


class EvalLog:
    """Appends lines to ``path``; each line is written and flushed (and fsync'd) at once."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = os.fspath(path)
        self.fsync = fsync
        self._file = open(self.path, "ab")  # noqa: SIM115 - held open for the evaluation
        if self._file.tell() > 0 and not _ends_with_newline(self.path):
            self._file.write(b"\n")  # a torn last line stays on its own line, skipped on read

    def append(self, row: dict[str, Any], transcript: dict[str, Any] | None) -> int:
        """Write one finished case, every secret in it redacted (:mod:`agentnb.tracing.redact`);
        returns the line's byte offset."""
        redact = Redactor().redact
        item = {"row": scrub(row, redact), "transcript": scrub_transcript(transcript, redact)}
        line = jsonfile.dumps(item, ensure_ascii=False, default=_fallback)
        offset = self._file.tell()
        self._file.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        return offset

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> EvalLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_with_newline(path: str) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def check_log_path(path: str | os.PathLike[str]) -> None:
    """A log path that cannot be a file here is a UserError before any case runs.

    >>> check_log_path("/")
    Traceback (most recent call last):
    agentnb.errors.UserError: log='/' is a folder: give a file path such as 'runs.jsonl'
    """
    from agentnb.errors import UserError

    text = os.fspath(path)
    if os.path.isdir(text):
        raise UserError(f"log={text!r} is a folder: give a file path such as 'runs.jsonl'")
    folder = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(folder):
        raise UserError(f"log={text!r}: the folder {folder!r} does not exist")


def read_log(path: str | os.PathLike[str]) -> Iterator[tuple[dict[str, Any], int]]:
    """(row, byte offset) for every line; a line that is not JSON (torn) is skipped with a warning,
    a line that is JSON but not a log line raises :class:`~agentnb.errors.TranscriptError`."""
    path = os.fspath(path)
    if not os.path.exists(path):
        return
    with open(path, "rb") as f:
        offset = 0
        for n, raw in enumerate(f, 1):
            at, offset = offset, offset + len(raw)
            if not raw.strip():
                continue
            try:
                row, _ = check_line(jsonfile.loads(raw))
            except (json.JSONDecodeError, UnicodeDecodeError):
                where = "its last line" if not raw.endswith(b"\n") else f"line {n}"
                warnings.warn(f"evaluation log {path}: {where} is torn or not JSON; skipped", stacklevel=2)
                continue
            except ValueError as exc:
                raise TranscriptError(f"evaluation log {path}, line {n}: {exc}") from None
            yield row, at


def _fallback(obj: Any) -> Any:
    """JSON for what json cannot write: pydantic models, dataclasses, else the repr."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if hasattr(obj, "__dataclass_fields__") and not isinstance(obj, type):
        import dataclasses

        return dataclasses.asdict(obj)
    return repr(obj)


def load_transcript_at(path: str | os.PathLike[str], offset: int) -> dict[str, Any] | None:
    """The transcript stored on the line at ``offset``."""
    with open(path, "rb") as f:
        f.seek(offset)
        raw = f.readline()
    try:
        _, transcript = check_line(jsonfile.loads(raw))
    except ValueError as exc:  # the file changed since it was read: say where
        raise TranscriptError(f"evaluation log {os.fspath(path)}, line {line_at(path, offset)}: {exc}") from None
    return transcript


def line_at(path: str | os.PathLike[str], offset: int) -> int:
    """The number of the line that starts at byte ``offset`` (for an error message)."""
    with open(path, "rb") as f:
        return f.read(offset).count(b"\n") + 1
