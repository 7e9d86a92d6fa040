"""A cassette's lines: one recorded model call each, as JSON, with every secret taken out
(:mod:`agentnb.tracing.redact`: every string, dict keys and names included).

The file is JSON Lines. The first line says what it is (``{"agentnb_cassette": 1, ...}``);
each further line is one call: the canonical request (:mod:`agentnb.timetravel.canonical`),
the reply, and the streamed pieces when the provider streamed. A call's key is the hash of its
redacted canonical request, computed when the file is read, so a hand-edited request is found
by what it now says. Lines are read strictly (:mod:`agentnb.messages.jsonfile`) and field by
field; a line is written whole, in one call under a lock, so only a killed writer leaves a torn
(not JSON) last line: :func:`is_torn` knows one, :func:`cut_torn_tail` removes it before the
next recording appends.

>>> from agentnb.providers.base import Completion
>>> line = entry_line({"messages": [{"role": "user", "content": "hi"}]}, Completion("Hello"), (), "Echo")
>>> read_entry(line, "calls.jsonl", 2).completion.text
'Hello'
>>> read_entry('{"request": {"messages": []}, "reply": {"usage": {"input_tokens": "9"}}}', "calls.jsonl", 7)
Traceback (most recent call last):
...
agentnb.timetravel.entries.CassetteError: calls.jsonl, line 7: not a cassette entry: reply.usage: input_tokens: expected int, not str '9'
>>> read_entry('{"request": {"messages": [1e999]}, "reply": {}}', "calls.jsonl", 8)
Traceback (most recent call last):
...
agentnb.timetravel.entries.CassetteError: calls.jsonl, line 8: not a cassette entry: request.messages[0]: 1e999 is too large for a float
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import ToolCall, Usage, jsonfile
from agentnb.messages.codec import decoder_for, read_usage
from agentnb.messages.jsonfile import under
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
        text = jsonfile.dumps(d, ensure_ascii=False, separators=(",", ":"), default=str)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a model: written escaped
        return (jsonfile.dumps(d, ensure_ascii=True, separators=(",", ":"), default=str) + "\n").encode("ascii")


def read_entry(text: str, path: str, line: int) -> Entry:
    """Line number ``line`` of the cassette at ``path``; a :class:`CassetteError` names the line
    and the field (read strictly: :func:`agentnb.messages.jsonfile.loads`)."""
    try:
        d = jsonfile.loads(text)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise CassetteError(f"{path}, line {line}: not JSON ({exc}); the line may be torn or hand-edited") from None
        raise CassetteError(f"{path}, line {line}: not a cassette entry: {exc}") from None
    try:
        return _entry(d, line)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        reason = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise CassetteError(f"{path}, line {line}: not a cassette entry: {reason}") from None


def _entry(d: Any, line: int) -> Entry:
    if not isinstance(d, dict):
        raise ValueError(f"a cassette entry is a JSON object, not {type(d).__name__}")
    request, reply = _field(d, "request", _OBJECT, need=True), _field(d, "reply", _OBJECT, need=True)
    _field(request, "messages", _LIST, "request.", need=True)
    _field(d, "provider", _OPT_STR)
    tool_calls = tuple(_field(reply, "tool_calls", _each(_call), "reply.") or ())
    usage = _field(reply, "usage", lambda v: read_usage(v) if v is not None else Usage(), "reply.")
    completion = Completion(
        _field(reply, "text", _OPT_STR, "reply."),
        tool_calls,
        Usage(usage.input_tokens, usage.output_tokens, 0.0),  # a replay is free
        _field(reply, "finish_reason", _OPT_STR, "reply."),
        tuple(_field(reply, "events", _each(_event), "reply.") or ()),
        tuple(_field(reply, "reasoning", _REASONING, "reply.") or ()),
        _field(reply, "model", _OPT_STR, "reply."),
    )
    chunks = tuple(_field(d, "chunks", _each(_chunk)) or ())
    key, rkey = keys(request)
    return Entry(request, completion, chunks, key, rkey, line)


_OBJECT = decoder_for(dict)
_LIST = decoder_for(list)
_OPT_STR = decoder_for(str | None)
_REASONING = decoder_for(list[dict[str, Any]] | None)


def _field(d: dict[str, Any], name: str, read: Any, prefix: str = "", need: bool = False) -> Any:
    """``d[name]`` read by ``read`` (an absent field is read as ``None``, unless ``need``)."""
    if need and name not in d:
        raise ValueError(f"missing field {prefix + name!r}")
    try:
        return read(d.get(name))
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        reason = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(under(prefix + name, reason)) from None


def _each(read: Any) -> Any:
    """A list (or null) of items, each read by ``read``; an error names the item."""

    def items(v: Any) -> list[Any] | None:
        if v is None:
            return None
        if not isinstance(v, list):
            raise ValueError(f"expected a list, not {type(v).__name__}")
        out = []
        for i, item in enumerate(v):
            try:
                out.append(read(item))
            except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
                reason = f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
                raise ValueError(under(f"[{i}]", reason)) from None
        return out

    return items


def _call(c: Any) -> ToolCall:
    if not isinstance(c, dict):
        raise ValueError(f"a tool call is a JSON object, not {type(c).__name__}")
    return ToolCall.from_dict({**c, "id": c.get("id") or ""})  # an id is optional here


def _event(e: Any) -> Any:
    from agentnb.events import event_from_dict

    if not isinstance(e, dict):
        raise ValueError(f"an event is a JSON object, not {type(e).__name__}")
    return event_from_dict(e)


def _chunk(c: Any) -> Chunk:
    if isinstance(c, list) and len(c) == 2 and c[0] == "text" and isinstance(c[1], str):
        return TextChunk(c[1])
    if isinstance(c, list) and len(c) == 5 and c[0] == "call":
        index, cid, name, arguments = c[1:]
        if (
            isinstance(index, int)
            and not isinstance(index, bool)
            and all(v is None or isinstance(v, str) for v in (cid, name))
            and isinstance(arguments, str)
        ):
            return ToolCallChunk(index, cid, name, arguments)
    raise ValueError(f"a chunk is ['text', str] or ['call', index, id, name, arguments], not {c!r:.80}")


def is_cassette_header(text: str) -> bool:
    """Whether the first line of a file says it is a cassette (of any format)."""
    try:
        d = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(d, dict) and HEADER_KEY in d


def check_header(text: str, path: str) -> None:
    """A :class:`CassetteError` unless ``text`` (line 1) is a header of a format this agentnb reads.

    >>> check_header('{"agentnb_cassette": 2}', "calls.jsonl")
    Traceback (most recent call last):
    ...
    agentnb.timetravel.entries.CassetteError: calls.jsonl, line 1: cassette format 2 is not supported (this agentnb reads 1)
    """
    if not is_cassette_header(text):
        raise CassetteError(f"{path}, line 1: not an agentnb cassette (no {{'{HEADER_KEY}': 1}} header)")
    found = json.loads(text)[HEADER_KEY]
    if type(found) is not int or found != CASSETTE_FORMAT:
        raise CassetteError(
            f"{path}, line 1: cassette format {found!r:.40} is not supported (this agentnb reads {CASSETTE_FORMAT})"
        )


def cut_torn_tail(fd: int, path: str) -> None:
    """Before appending (under the lock): a last line with no newline is ended, if it is a whole
    entry, or cut off, if a writer was killed mid-line (nobody writes while the lock is held)."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = size
    while start > 0:  # back to the last newline, a block at a time
        block = os.pread(fd, min(start, 1 << 16), max(0, start - (1 << 16)))
        at = block.rfind(b"\n")
        if at >= 0:
            start = start - len(block) + at + 1
            break
        start -= len(block)
    if is_torn(os.pread(fd, size - start, start)):
        if start == 0:  # not even the header line is whole: the file starts again
            os.ftruncate(fd, 0)
            return
        os.ftruncate(fd, start)
        warnings.warn(f"cassette {path}: cut off its torn last line ({size - start} bytes) before recording",
                      stacklevel=2)  # fmt: skip
        return
    os.write(fd, b"\n")  # a whole line (hand-written without its newline): kept, and read as it is


def is_torn(line: bytes) -> bool:
    """Whether a last line is not JSON (cut mid-line, maybe mid-character), so a killed writer's."""
    try:
        jsonfile.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return True
    except ValueError:  # JSON, but refused: not torn; reading it says what is wrong
        return False
    return False
