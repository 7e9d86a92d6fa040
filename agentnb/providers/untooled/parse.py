"""Finding tool calls in a text model's reply.

Accepted, in order: a reply that *is* JSON (``{...}`` or an array of calls), calls written one
after another (``{...}\\n{...}``; JSON after them that is not a call, such as the result a small
model expects, is dropped), a fenced code block holding a call, and a call after a short
preamble ("Sure, here it is: {...}"). JSON may also be written as a Python dict (single
quotes, ``True``/``None``), with trailing commas, or cut off before its closing brackets.
Prose that merely contains braces is left alone: after a preamble, only an object shaped like a
call (``name`` plus ``arguments``) counts.

A reply that starts like a call but cannot be read becomes a :class:`ToolCall` with
``arguments=None`` and a ``parse_error`` written for the model, never a silent drop.

>>> prose, calls = parse_reply('Sure: {"name": "add", "arguments": {"a": 1}}', ["add"])
>>> prose, calls[0].name, calls[0].arguments
('Sure:', 'add', {'a': 1})
>>> parse_reply("A set like {1, 2} has two elements.", ["add"])[1]
()
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from agentnb.messages import ToolCall
from agentnb.messages.jsonsafe import MAX_DEPTH, depth_error, too_deep

#: A call may follow at most this much prose ("Sure, I'll check: {...}").
MAX_PREAMBLE = 200
#: Code fences are looked for in this many characters of a reply, and JSON longer than this
#: is read strictly (no repairs), so a huge reply costs linear time with a small constant.
MAX_SCAN = 100_000
_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_NAME = re.compile(r"""["']name["']\s*:\s*["']([\w-]{1,64})["']""")
# No nested quantifiers over the same characters: linear time on long runs of spaces.
_JUNK = re.compile(r"[\s`]*(?:<\|\w+\|>[\s`]*)?")
_SPACE = re.compile(r"\s*")
#: Calls read one after another in a reply at most (more are left unread).
_MAX_SEQUENCE = 16
_ARG_KEYS = ("arguments", "parameters", "args", "params", "input")
_NAME_KEYS = ("name", "function", "tool", "tool_name", "function_name")
FORMAT_HINT = 'Write exactly one JSON object: {"name": "<function name>", "arguments": {...}}.'


def parse_reply(
    text: str,
    tool_names: Sequence[str],
    *,
    strict: bool = False,
    default_tool: str | None = None,
    new_id: Callable[[], str] | None = None,
) -> tuple[str | None, tuple[ToolCall, ...]]:
    """Split a reply into its prose and its tool calls.

    Args:
        text: the model's reply.
        tool_names: the tools on offer (a one-key object ``{"tool": {...}}`` is read as a call).
        strict: only a reply that starts with ``{`` or ``[`` can be a call (for constrained
            output, where the grammar guarantees that form).
        default_tool: the tool a bare arguments object belongs to (a forced named choice).
        new_id: makes call ids; default ``call_1``, ``call_2``, ...
    """
    ids = new_id or _counter()
    stripped = text.strip()
    if not stripped:
        return None, ()
    if stripped[0] in "{[":
        value, err = load_json(stripped)
        calls = _as_calls(value, tool_names, default_tool, ids) if err is None else None
        if calls:
            return None, calls
        if err is not None:  # a call, then more: calls written one after another, or on
            found = _call_sequence(stripped, tool_names, ids)
            if found is not None:
                return found
        if stripped[0] == "{" or _NAME.search(stripped):
            return None, (_broken(stripped, value, err, ids),)
    if strict:
        return stripped, ()
    for match in _FENCE.finditer(stripped, 0, MAX_SCAN):
        body = match.group(1).strip()
        if body and body[0] in "{[":
            value, err = load_json(body)
            calls = _as_calls(value, tool_names, default_tool, ids) if err is None else None
            if calls:
                return stripped[: match.start()].strip() or None, calls
            if _NAME.search(body):
                return stripped[: match.start()].strip() or None, (_broken(body, value, err, ids),)
    start = stripped.find("{")
    if 0 < start <= MAX_PREAMBLE:
        value, err = load_json(stripped[start:], prefix_only=True)
        if err is None and _call_shaped(value):
            calls = _as_calls(value, tool_names, None, ids)
            if calls:
                return stripped[:start].strip() or None, calls
    return stripped, ()


def _call_sequence(
    text: str, names: Sequence[str], ids: Callable[[], str]
) -> tuple[str | None, tuple[ToolCall, ...]] | None:
    """Calls written one JSON value after another (``{call}\\n{call}``), with what follows them.

    A JSON value after the calls that is not one (a small model writing on, e.g. the result it
    expects) is dropped; prose after them is kept. None unless the reply starts with a call, and
    when a call after them cannot be read (that is reported, not dropped).
    """
    if too_deep(text):
        return None
    decoder = json.JSONDecoder(strict=False)
    calls: list[ToolCall] = []
    pos = 0
    while pos < len(text) and text[pos] in "{[" and len(calls) < _MAX_SEQUENCE:
        try:
            value, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            if calls and _NAME.search(text, pos, pos + MAX_PREAMBLE):  # a call cut off or broken
                return None
            break
        if _call_shaped(value):
            calls.extend(_as_calls(value, names, None, ids) or ())
        elif not calls:  # the reply does not start with a call
            return None
        pos = _SPACE.match(text, end).end()  # type: ignore[union-attr] # r"\s*" always matches
    if not calls or any(c.arguments is None for c in calls):
        return None
    rest = text[pos:].strip()
    return (None if not rest or _only_junk(rest) or rest[0] in "{[" else rest), tuple(calls)


def load_json(text: str, *, prefix_only: bool = False) -> tuple[Any, str | None]:
    """Read one JSON value from the start of ``text``, forgiving what small models get wrong.

    Returns ``(value, None)`` or ``(None, error)``. With ``prefix_only`` text after the value is
    ignored; otherwise only whitespace may follow.
    """
    if too_deep(text):
        return None, depth_error()
    # strict=False: a raw newline or tab inside a string is read as that character (JSON wants
    # it escaped; llama-cpp-python's grammar lets a model write it raw).
    decoder = json.JSONDecoder(strict=False)
    first_error = None
    for candidate in _repairs(text) if len(text) <= MAX_SCAN else (text,):
        try:
            value, end = decoder.raw_decode(candidate)
        except json.JSONDecodeError as exc:
            first_error = first_error or f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        except (ValueError, RecursionError) as exc:  # e.g. an integer of 5000 digits
            first_error = first_error or str(exc)
        else:
            if prefix_only or not candidate[end:].strip() or _only_junk(candidate[end:]):
                return value, None
            first_error = first_error or f"unexpected text after the JSON value: {candidate[end:].strip()[:40]!r}"
            continue
        if len(candidate) > MAX_SCAN:
            continue
        segment = _balanced(candidate)
        if segment is not None:
            try:
                value = _as_json(ast.literal_eval(_pythonic(segment)))
            except _NotJSONError as exc:
                first_error = first_error or str(exc)
                continue
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # "{[]}": a set of lists
                pass
            else:
                rest = candidate[len(segment) :]
                if isinstance(value, (dict, list)) and (prefix_only or not rest.strip() or _only_junk(rest)):
                    return value, None
    return None, first_error or "not a JSON value"


class _NotJSONError(ValueError):
    pass


def _as_json(value: Any, depth: int = 0) -> Any:
    """A Python literal as JSON data: tuples become lists; sets, bytes and the like are refused."""
    if depth > MAX_DEPTH:
        raise _NotJSONError(depth_error())
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [_as_json(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise _NotJSONError("object keys must be strings in JSON")
        return {k: _as_json(v, depth + 1) for k, v in value.items()}
    kind = "a set; write a list [...] instead" if isinstance(value, (set, frozenset)) else type(value).__name__
    raise _NotJSONError(f"the value {_short(repr(value))} is not JSON: it is {kind}")


def _short(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _repairs(text: str) -> Iterator[str]:
    yield text
    fixed = re.sub(r",\s*([}\]])", r"\1", text)  # trailing commas
    if fixed != text:
        yield fixed
    closed = _close_brackets(fixed)
    if closed is not None and closed != fixed:
        yield closed


def _only_junk(rest: str) -> bool:
    """Text after a call that we can ignore: closing fences or a stray end-of-turn marker."""
    return _JUNK.fullmatch(rest) is not None


def _scan(text: str) -> Iterator[tuple[int, str, list[str]]]:
    """Walk ``text`` outside strings, yielding (index, char, open-bracket stack)."""
    stack: list[str] = []
    quote = None
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
        yield i, ch, stack


def _balanced(text: str) -> str | None:
    """The bracketed value at the start of ``text``, if its brackets close."""
    for i, ch, stack in _scan(text):
        if ch in "}]" and not stack:
            return text[: i + 1]
    return None


def _close_brackets(text: str) -> str | None:
    """``text`` with the brackets a truncated reply left open closed, if it is only truncated."""
    stack: list[str] = []
    for _, _, stack in _scan(text):  # noqa: B007 - we want the final stack
        pass
    if not stack or _balanced(text) is not None:
        return None
    return text.rstrip().rstrip(",") + "".join("}" if b == "{" else "]" for b in reversed(stack))


def _pythonic(segment: str) -> str:
    """JSON literals as Python ones, outside strings (``true`` -> ``True``)."""
    out = []
    last = 0
    words = {"true": "True", "false": "False", "null": "None"}
    for i, ch, _ in _scan(segment):
        if ch.isalpha() and (i == 0 or not segment[i - 1].isalnum()):
            for word, py in words.items():
                if segment.startswith(word, i) and not segment[i + len(word) : i + len(word) + 1].isalnum():
                    out.append(segment[last:i] + py)
                    last = i + len(word)
    return "".join(out) + segment[last:]


def _call_shaped(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_call_shaped(v) for v in value)
    return isinstance(value, dict) and isinstance(value.get("name"), str) and any(k in value for k in _ARG_KEYS)


def _as_calls(
    value: Any, names: Sequence[str], default_tool: str | None, ids: Callable[[], str]
) -> tuple[ToolCall, ...] | None:
    items = value if isinstance(value, list) else [value]
    if not items:
        return None
    calls = [_as_call(v, names, default_tool, ids) for v in items]
    return tuple(c for c in calls if c is not None) if all(c is not None for c in calls) else None


def _as_call(value: Any, names: Sequence[str], default_tool: str | None, ids: Callable[[], str]) -> ToolCall | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # OpenAI style {"function": {"name", "arguments"}}
        value = value["function"]
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is None:
        if len(value) == 1 and next(iter(value)) in names and isinstance(next(iter(value.values())), dict):
            name, args = next(iter(value.items()))
            return ToolCall(ids(), name, args)
        if default_tool is not None:
            return ToolCall(ids(), default_tool, value)
        return None
    key = next((k for k in _ARG_KEYS if k in value), None)
    args = value.get(key, {}) if key else {}
    if isinstance(args, str):  # arguments given as a JSON string, as the OpenAI API does
        parsed, err = load_json(args) if args.strip() else ({}, None)
        if err is not None or not isinstance(parsed, dict):
            return ToolCall(ids(), name, None, args, f"the arguments of {name} must be a JSON object. {FORMAT_HINT}")
        args = parsed
    if not isinstance(args, dict):
        return ToolCall(
            ids(), name, None, json.dumps(args), f"the arguments of {name} must be a JSON object. {FORMAT_HINT}"
        )
    return ToolCall(ids(), name, args)


def _broken(raw: str, value: Any, err: str | None, ids: Callable[[], str]) -> ToolCall:
    """A reply that tried to be a call and failed, with an error the model can act on."""
    found = _NAME.search(raw)
    name = found.group(1) if found else ""
    if err is not None:
        problem = f"your reply looks like a function call but is not valid JSON ({err})."
    else:
        problem = 'your reply is JSON but not a function call: it needs a "name" and an "arguments" object.'
    return ToolCall(ids(), name, None, raw, f"{problem} {FORMAT_HINT}")


def _counter() -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"call_{next(numbers)}"
