"""One run as one row of the store: the columns a table shows, and the whole transcript.

The transcript is :meth:`RunResult.to_dict <agentnb.RunResult.to_dict>` (every secret redacted,
as a saved transcript or a cassette is), as compact JSON compressed by zlib; it reads back into
an equal :class:`~agentnb.RunResult`. Labels are JSON objects with the fields of
``agentnb.Label`` (``good``, ``expected``, ``note``, ``at``); the row's ``good``, ``expected`` and
``note`` columns hold the latest one, ``labels`` all of them, oldest first.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> r = Agent(ScriptedProvider(["4"]), name="calc").run("2 + 2?")
>>> row = row_of(r, started=0.0)
>>> row["agent"], row["prompt"], row["answer"], row["stop_reason"], row["good"]
('calc', '2 + 2?', '4', 'answer', None)
>>> result_of_blob(transcript_blob(r)) == r
True
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable
from typing import Any

from agentnb.errors import TranscriptError, UserError
from agentnb.messages import jsonfile
from agentnb.run.labels import Label
from agentnb.run.result import RunResult
from agentnb.tracing.redact import Redactor

#: The fields of a label (``agentnb.Label``), as stored.
LABEL_FIELDS = ("good", "expected", "note", "at")


def row_of(result: RunResult, started: float, labels: Iterable[Any] = ()) -> dict[str, Any]:
    """The columns of ``result`` (all but the transcript), as the store keeps them: every text
    redacted as the transcript is (:meth:`RunResult.to_dict <agentnb.RunResult.to_dict>`)."""
    first = result.events[0] if result.events else None
    lineage = result.lineage
    kept = [label_dict(x) for x in (*getattr(result, "labels", ()), *labels)]
    kept = list({json.dumps(x, sort_keys=True): x for x in kept}.values())  # each label once
    last = kept[-1] if kept else {}
    good = last.get("good")
    row = {
        "id": result.run_id or os.urandom(6).hex(),
        "started": started,
        "agent": getattr(first, "agent_name", None),
        "model": getattr(first, "model", None) or getattr(first, "provider", None),
        "prompt": getattr(first, "prompt", None),
        "answer": result.output,
        "stop_reason": result.stop_reason,
        "tools": json.dumps(_tools(result)),
        "tool_calls": result.tool_calls,
        "cost": result.cost,
        "tokens": result.usage.total_tokens,
        "duration": result.duration,
        "good": None if good is None else int(bool(good)),
        "expected": last.get("expected"),
        "note": last.get("note"),
        "labels": json.dumps(kept, ensure_ascii=False),
        "parent": getattr(lineage, "parent", None),
        "conversation": getattr(first, "conversation_id", None),
    }
    redact = Redactor().redact  # as the transcript is: a provider's secrets, key-shaped strings
    return {name: redact(value) if isinstance(value, str) else value for name, value in row.items()}


def _tools(result: RunResult) -> list[str]:
    """The names of the tools the run called, each once, in the order first called."""
    names: dict[str, None] = {}
    for event in result.events:
        if event.kind == "tool_call":
            names[event.name] = None  # type: ignore[union-attr]
    return list(names)


def label_dict(label: Any) -> dict[str, Any]:
    """A label (``agentnb.Label`` or a dict of its fields) as the JSON object the store keeps.

    >>> label_dict({"good": False, "expected": "4", "at": "2026-12-07T10:00:00+00:00"})
    {'good': False, 'expected': '4', 'note': None, 'at': '2026-12-07T10:00:00+00:00'}
    >>> label_dict({"good": "no"})
    Traceback (most recent call last):
    ...
    agentnb.errors.UserError: good: expected True, False or None, not str 'no'
    """
    if isinstance(label, Label):
        return label.to_dict()
    if not isinstance(label, dict):
        raise UserError(f"a label is an agentnb.Label or a dict of {LABEL_FIELDS}, not {type(label).__name__}")
    unknown = sorted(str(name) for name in label if name not in LABEL_FIELDS)
    if unknown:
        raise UserError(f"a label has the fields {LABEL_FIELDS}, not {unknown}")
    given = {name: label[name] for name in LABEL_FIELDS if label.get(name) is not None}
    data = Label(**given).to_dict()  # checked as agentnb.Label checks it (UserError naming the field)
    redact = Redactor().redact  # kept redacted, as the run's texts are
    return {name: redact(value) if isinstance(value, str) and name != "at" else value for name, value in data.items()}


def transcript_blob(result: RunResult) -> bytes:
    """The run's transcript (secrets redacted) as zlib-compressed JSON."""
    text = jsonfile.dumps(result.to_dict(), ensure_ascii=False, separators=(",", ":"), default=str)
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 1)


def result_of_blob(blob: bytes, labels: str | None = None, where: str = "the store") -> RunResult:
    """The :class:`RunResult` a stored transcript holds (``labels``: the row's, JSON)."""
    try:
        data = jsonfile.loads(zlib.decompress(blob).decode("utf-8", "surrogatepass"))
    except (zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise TranscriptError(f"{where}: a stored transcript cannot be read: {exc}") from None
    if labels and labels != "[]" and isinstance(data, dict):
        data["labels"] = json.loads(labels)  # read by a RunResult that has labels
    try:
        return RunResult.from_dict(data)
    except TranscriptError as exc:
        raise TranscriptError(f"{where}: {exc}") from None
