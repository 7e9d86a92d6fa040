"""What an evaluation log's line holds, checked field by field when it is read back.

A line is ``{"row": {...}, "transcript": {...} or null}``. A row is an evaluation's row (one
case × agent × repeat, :func:`agentnb.evaluation.run.make_row`) or an improvement's proposal
(``"improve": "proposal"``). Each field is read by its declared type, with the decoders that
read transcripts (:mod:`agentnb.messages.codec`), so a wrong type is an error naming the field,
never a value that ``summary()`` or a view trips on later. Fields are optional (older logs
lack some; readers use ``row.get``) except ``key``; fields not listed are kept as written.

>>> check_line({"row": {"key": "1|a|0", "passed": True, "scores": {"ok": 0.5}}, "transcript": None})[0]
{'key': '1|a|0', 'passed': True, 'scores': {'ok': 0.5}}
>>> check_line({"row": {"key": "1|a|0", "scores": {"ok": "yes"}}})
Traceback (most recent call last):
...
ValueError: row.scores['ok']: expected bool or int or float or null, not str 'yes'
"""

from __future__ import annotations

from typing import Any, Literal

from agentnb.messages.codec import Decoder, decoder_for
from agentnb.messages.jsonfile import under

Score = bool | int | float | None

#: An evaluation's row: each field's type.
EVALUATION_ROW: dict[str, Any] = {
    "key": str,
    "index": int,
    "case": str,
    "agent": str,
    "repeat": int,
    "input": Any,
    "output": str | None,
    "value": Any,
    "expected": Any,
    "scores": dict[str, Score],
    "scorer_errors": dict[str, str],
    "passed": bool,
    "stop_reason": Literal["answer", "direct_output", "limit", "cancelled", "error", "invalid_output", "timeout"],
    "tool_calls": int,
    "tools": list[str],
    "model_calls": int,
    "input_tokens": int,
    "output_tokens": int,
    "latency": float | None,
    "queue_wait": float | None,
    "error": str | None,
    "run_id": str,
    "metadata": dict[str, Any],
    "lost": bool,
}
#: An improvement's proposal (what the reflector answered at one step), logged beside the runs.
PROPOSAL_ROW: dict[str, Any] = {
    "key": str,
    "improve": Literal["proposal"],
    "step": int,
    "parent": str,
    "component": str,
    "cases": list[str],
    "prompt": str,
    "reply": str,
    "text": str | None,
    "reason": str | None,
}
_READERS: dict[str, dict[str, Decoder]] = {
    kind: {name: decoder_for(hint) for name, hint in fields.items()}
    for kind, fields in (("evaluation", EVALUATION_ROW), ("proposal", PROPOSAL_ROW))
}


def check_line(item: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The row and transcript of one log line (parsed JSON); a ``ValueError`` names the field."""
    if not isinstance(item, dict):
        raise ValueError(f"a log line is a JSON object, not {type(item).__name__}")
    row, transcript = item.get("row"), item.get("transcript")
    if not isinstance(row, dict):
        raise ValueError(f"row: expected a JSON object, not {type(row).__name__}")
    if transcript is not None and not isinstance(transcript, dict):
        raise ValueError(f"transcript: expected a JSON object or null, not {type(transcript).__name__}")
    if "key" not in row:
        raise ValueError("row: missing field 'key'")
    readers = _READERS["proposal" if "improve" in row else "evaluation"]
    for name, value in row.items():
        read = readers.get(name)
        if read is not None:
            try:
                read(value)
            except ValueError as exc:
                raise ValueError(under(f"row.{name}", str(exc))) from None
    return row, transcript
