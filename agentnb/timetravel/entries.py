"""A cassette's lines: one recorded model call each, as JSON, with every secret taken out
(:mod:`agentnb.tracing.redact`: every string, dict keys and names included).

The file is JSON Lines. The first line says what it is (``{"agentnb_cassette": 1, ...}``);
each further line is one call: the canonical request (:mod:`agentnb.timetravel.canonical`),
the reply, and the streamed pieces when the provider streamed. A call's key is the hash of its
redacted canonical request, computed when the file is read, so a hand-edited request is found
by what it now says.

>>> from agentnb.providers.base import Completion
>>> line = entry_line({"messages": [{"role": "user", "content": "hi"}]}, Completion("Hello"), (), "Echo")
>>> read_entry(line, "calls.jsonl", 2).completion.text
'Hello'
>>> read_entry('{"request": 1, "reply": {}}', "calls.jsonl", 7)
Traceback (most recent call last):
...
agentnb.timetravel.entries.CassetteError: calls.jsonl, line 7: not a cassette entry: 'request' must be a JSON object
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import ToolCall, Usage
from agentnb.providers.base import Chunk, Completion, TextChunk, ToolCallChunk
from agentnb.timetravel.canonical import request_key
from agentnb.tracing.pieces import hide_split_in_chunks
from agentnb.tracing.redact import Redactor
from agentnb.tracing.redact import scrub as redact_all

#: The format of the file, on its first line.
CASSETTE_FORMAT = 1
#: What the first line holds (and how :func:`is_cassette_header` knows one).
HEADER_KEY = "agentnb_cassette"


class CassetteError(UserError, ValueError):
    """A cassette file that cannot be read (corrupt, hand-edited badly, another format); the
    message names the file and the line.

    >>> import os, tempfile
    >>> from agentnb import cassette
    >>> path = os.path.join(tempfile.mkdtemp(), "calls.jsonl")
    >>> with open(path, "w") as f:
    ...     _ = f.write('{"agentnb_cassette": 1}\\n{"request": \\n')
    >>> cassette(path).__enter__()
    Traceback (most recent call last):
    ...
    agentnb.timetravel.entries.CassetteError: ...calls.jsonl, line 2: not JSON (...); the line may be torn or hand-edited
    """


@dataclass(frozen=True, slots=True)
class Entry:
    """One recorded call: its request (canonical, redacted), reply and streamed pieces."""

    request: dict[str, Any]
    completion: Completion
    chunks: tuple[Chunk, ...]
    key: str
    rkey: str  # the key without the model: for a replay that has no provider to name one
    line: int = 0


def header_line() -> bytes:
    from agentnb.version import __version__

    return (json.dumps({HEADER_KEY: CASSETTE_FORMAT, "agentnb": __version__}) + "\n").encode("ascii")


def keys(request: dict[str, Any]) -> tuple[str, str]:
    """The key of a canonical request, and its key without the model."""
    key = request_key(request)
    return key, (key if request.get("model") is None else request_key({**request, "model": None}))


def scrub(value: Any, redact: Callable[[str], str] | None) -> Any:
    """``value`` with every string redacted, dict keys included (``redact`` None: what any
    :class:`~agentnb.tracing.redact.Redactor` hides; see :mod:`agentnb.tracing.redact`)."""
    return redact_all(value, redact if redact is not None else Redactor().redact)


def entry_line(
    request: dict[str, Any],
    completion: Completion,
    chunks: tuple[Chunk, ...],
    provider: str,
    redact: Callable[[str], str] | None = None,
) -> bytes:
    """One call as one line of JSON (ending in a newline), every string in it redacted: the
    request (a redacted one is left as it is), the reply's texts, names, arguments (their names
    too), raw arguments, notes and streamed pieces."""
    reply: dict[str, Any] = {
        "text": completion.text,
        "tool_calls": [c.to_dict() for c in completion.tool_calls],
        "usage": {"input_tokens": completion.usage.input_tokens, "output_tokens": completion.usage.output_tokens},
        "finish_reason": completion.finish_reason,
        "model": completion.model,
    }
    if completion.reasoning:
        reply["reasoning"] = [dict(r) for r in completion.reasoning]
    if completion.events:
        reply["events"] = [e.to_dict() for e in completion.events]
    d: dict[str, Any] = {"provider": provider, "request": request, "reply": reply}
    if chunks:
        d["chunks"] = [
            ["text", c.text] if isinstance(c, TextChunk) else ["call", c.index, c.id, c.name, c.arguments]
            for c in chunks
        ]
    redact = redact if redact is not None else Redactor().redact
    d = redact_all(d, redact)
    hide_split_in_chunks(d.get("chunks") or [], redact)
    try:
        text = json.dumps(d, ensure_ascii=False, separators=(",", ":"), default=str)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a model: written escaped
        return (json.dumps(d, ensure_ascii=True, separators=(",", ":"), default=str) + "\n").encode("ascii")


def read_entry(text: str, path: str, line: int) -> Entry:
    """Line number ``line`` of the cassette at ``path``; a :class:`CassetteError` names the line."""
    try:
        d = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CassetteError(f"{path}, line {line}: not JSON ({exc}); the line may be torn or hand-edited") from None
    try:
        return _entry(d, line)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        reason = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise CassetteError(f"{path}, line {line}: not a cassette entry: {reason}") from None


def _entry(d: Any, line: int) -> Entry:
    if not isinstance(d, dict):
        raise ValueError(f"a cassette entry is a JSON object, not {type(d).__name__}")
    request, reply = d["request"], d["reply"]
    if not isinstance(request, dict):
        raise ValueError("'request' must be a JSON object")
    if not isinstance(request.get("messages"), list):
        raise ValueError("'request.messages' must be a list")
    if not isinstance(reply, dict):
        raise ValueError("'reply' must be a JSON object")
    text = reply.get("text")
    if text is not None and not isinstance(text, str):
        raise ValueError("'reply.text' must be a string or null")
    calls = reply.get("tool_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise ValueError("'reply.tool_calls' must be a list of objects")
    tool_calls = tuple(_call(c) for c in calls)
    usage = reply.get("usage") or {}
    if not isinstance(usage, dict):
        raise ValueError("'reply.usage' must be a JSON object")
    events = tuple(_event(e) for e in reply.get("events") or ())
    reasoning = tuple(dict(r) for r in reply.get("reasoning") or ())
    completion = Completion(
        text,
        tool_calls,
        Usage(int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0)), 0.0),  # a replay is free
        _opt_str(reply.get("finish_reason"), "finish_reason"),
        events,
        reasoning,
        _opt_str(reply.get("model"), "model"),
    )
    chunks = tuple(_chunk(c) for c in d.get("chunks") or ())
    key, rkey = keys(request)
    return Entry(request, completion, chunks, key, rkey, line)


def _call(c: dict[str, Any]) -> ToolCall:
    name, args = c["name"], c.get("arguments")
    if not isinstance(name, str) or (args is not None and not isinstance(args, dict)):
        raise ValueError("a tool call needs a string 'name' and object 'arguments'")
    return ToolCall(str(c.get("id") or ""), name, args, c.get("raw_arguments"), c.get("parse_error"))


def _event(e: Any) -> Any:
    from agentnb.events import event_from_dict

    return event_from_dict(e)


def _chunk(c: Any) -> Chunk:
    if not isinstance(c, list) or not c or c[0] not in ("text", "call"):
        raise ValueError("a chunk is ['text', str] or ['call', index, id, name, arguments]")
    if c[0] == "text":
        if not isinstance(c[1], str):
            raise ValueError("a text chunk holds a string")
        return TextChunk(c[1])
    index, cid, name, arguments = c[1], c[2], c[3], c[4]
    if not isinstance(index, int) or not isinstance(arguments, str):
        raise ValueError("a call chunk is ['call', index, id, name, arguments]")
    return ToolCallChunk(index, cid, name, arguments)


def _opt_str(v: Any, name: str) -> str | None:
    if v is not None and not isinstance(v, str):
        raise ValueError(f"'reply.{name}' must be a string or null")
    return v


def is_cassette_header(text: str) -> bool:
    """Whether the first line of a file says it is a cassette."""
    try:
        d = json.loads(text)
    except ValueError:
        return False
    return isinstance(d, dict) and HEADER_KEY in d
