"""Transcripts on disk: an atomic write, and a read that says what is wrong.

A transcript is the JSON form of a :class:`~agentnb.run.result.RunResult` (``version`` 2: event
values carry no type tags, see :mod:`agentnb.messages.codec`; version 1 files still load).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "run.json")
>>> write_atomic(path, {"version": 99})
>>> read_transcript(path)
Traceback (most recent call last):
...
agentnb.errors.TranscriptError: ...run.json: transcript version 99 is not supported (this agentnb reads 1 to 2)
"""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime
from typing import Any

from agentnb.errors import TranscriptError
from agentnb.events import event_from_dict
from agentnb.messages import jsonfile
from agentnb.messages.codec import finite, read_usage, untag_v1
from agentnb.messages.types import message_from_dict, typed
from agentnb.run.labels import Label

TRANSCRIPT_VERSION = 2
_READABLE = (1, TRANSCRIPT_VERSION)
_STOP_REASONS = ("answer", "direct_output", "limit", "cancelled", "error", "invalid_output")


def write_atomic(path: str | os.PathLike[str], data: Any) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file and a rename.

    The JSON is built in memory first; a failure at any point leaves an existing file as it
    was. Text that UTF-8 cannot hold (a lone surrogate from a model) is written escaped.
    """
    raw = transcript_bytes(data)
    target = os.fspath(path)
    folder, name = os.path.split(target)
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:  # name the file the caller asked for, not our temporary one
        raise type(exc)(exc.errno, exc.strerror, target) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def transcript_bytes(data: Any) -> bytes:
    r"""``data`` as UTF-8 JSON; text UTF-8 cannot hold (a lone surrogate) is written escaped.

    >>> transcript_bytes({"text": "x\ud800"})
    b'{\n "text": "x\\ud800"\n}'
    """
    try:
        return jsonfile.dumps(data, ensure_ascii=False, indent=1, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return jsonfile.dumps(data, ensure_ascii=True, indent=1, default=str).encode("ascii")


def read_transcript(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The :class:`~agentnb.run.result.RunResult` fields stored in the transcript at ``path``."""
    where = os.fspath(path)
    data = read_json(where)
    try:
        return transcript_fields(data)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise TranscriptError(f"{where}: {_reason(exc)}") from None


def read_json(path: str | os.PathLike[str]) -> Any:
    """The JSON in a file, read strictly (:func:`agentnb.messages.jsonfile.loads`); a file that
    is not JSON, or holds a number JSON has not or nests too deeply, raises
    :class:`TranscriptError` saying why and where."""
    where = os.fspath(path)
    with open(where, "rb") as f:
        raw = f.read()
    try:
        return jsonfile.loads(raw)
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{where}: not a transcript: the file is not UTF-8 text ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise TranscriptError(f"{where}: not a transcript: invalid JSON ({exc})") from None
    except ValueError as exc:
        raise TranscriptError(f"{where}: {exc}") from None


def transcript_fields(data: Any) -> dict[str, Any]:
    """Check and decode transcript JSON into ``RunResult`` keyword arguments.

    Raises ``ValueError`` with where the problem is (``messages[3]: ...``).
    """
    if not isinstance(data, dict):
        raise ValueError(f"a transcript is a JSON object, not {type(data).__name__}")
    version = data.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or not _READABLE[0] <= version <= _READABLE[1]:
        raise ValueError(f"transcript version {version!r} is not supported (this agentnb reads 1 to {_READABLE[1]})")
    for key, kind in (("output", str), ("messages", list), ("events", list), ("stop_reason", str)):
        if key not in data:
            raise ValueError(f"the transcript has no {key!r}")
        if not isinstance(data[key], kind):
            raise ValueError(f"{key!r} must be {kind.__name__}, not {type(data[key]).__name__}")
    if data["stop_reason"] not in _STOP_REASONS:
        raise ValueError(f"unknown stop_reason {data['stop_reason']!r}")
    usage = data.get("usage") or {}
    tool_calls = typed(data, "tool_calls", int, 0)
    duration = typed(data, "duration", (int, float, type(None)), 0.0)
    if duration is not None and not finite(duration):
        raise ValueError(f"'duration' must be a finite number of seconds, not {duration!r}")
    return {
        "output": data["output"],
        "messages": tuple(each_at("messages", data["messages"], message_from_dict)),
        "events": tuple(each_at("events", data["events"], lambda e: event_from_dict(e, version))),
        "usage": _at("usage", lambda: read_usage(untag_v1(usage) if version < 2 else usage)),
        "stop_reason": data["stop_reason"],
        "tool_calls": tool_calls,
        "duration": float(duration or 0.0),
        "error": typed(data, "error", (str, type(None)), None),
        "partial_output": typed(data, "partial_output", (str, type(None)), None) or "",
        "value": data.get("value"),  # JSON data; RunResult.load(path, output_type=T) rebuilds T
        "labels": tuple(each_at("labels", _labels_of(data), Label.from_dict)),
    }


def _labels_of(data: dict[str, Any]) -> list[Any]:
    labels = data.get("labels")  # a transcript saved before labels has none
    if labels is None:
        return []
    if not isinstance(labels, list):
        raise ValueError(f"'labels' must be list, not {type(labels).__name__}")
    return labels


def merge_labels(path: str | os.PathLike[str], run_id: str | None, labels: list[dict[str, Any]]) -> list[Any]:
    """Add ``labels`` (JSON data, already redacted) to the transcript at ``path`` and rewrite it
    atomically (:func:`write_atomic`); returns every label the file holds then, oldest first.

    Labels the file has already (written by another copy of the run) are kept: none is lost.
    A file that is not a transcript, or holds another run, raises :class:`TranscriptError` and is
    left as it was.
    """
    where = os.fspath(path)
    data = read_json(where)
    events = data.get("events") if isinstance(data, dict) else None
    if not isinstance(events, list):
        raise TranscriptError(f"{where}: not a transcript (no events)")
    first = events[0] if events and isinstance(events[0], dict) else {}
    if run_id is not None and first.get("run_id") not in (None, run_id):
        raise TranscriptError(f"{where}: holds another run ({first.get('run_id')!r}), not {run_id!r}")
    try:
        kept = [label.to_dict() for label in each_at("labels", _labels_of(data), Label.from_dict)]
    except ValueError as exc:
        raise TranscriptError(f"{where}: {_reason(exc)}") from None
    merged = kept + [label for label in labels if label not in kept]
    merged.sort(key=lambda label: datetime.fromisoformat(label["at"]))  # stable: ties keep their order
    data["labels"] = merged
    write_atomic(where, data)
    return merged


def each_at(key: str, items: list[Any], read: Any) -> list[Any]:
    """``read`` applied to each object of ``items``; an error names the item (``messages[3]: ...``)."""
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"{key}[{i}] must be a JSON object, not {type(item).__name__}")
        out.append(_at(f"{key}[{i}]", lambda item=item: read(item)))
    return out


def _at(where: str, make: Any) -> Any:
    try:
        return make()
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"{where}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}" if exc.args else "a field is missing"
    return str(exc) or type(exc).__name__
