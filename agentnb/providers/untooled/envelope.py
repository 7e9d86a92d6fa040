"""Constrained decoding on a server: UnTooled's reply as one JSON envelope.

A server can constrain a reply to a JSON Schema (``response_format`` with ``json_schema`` in
llama.cpp, vLLM, SGLang, LM Studio, Ollama >= 0.5 and OpenAI) but not to "plain text *or* a
JSON call", which is what the in-process grammar allows. So over a server the reply is always
one JSON object, and the schema's alternatives are:

* one per tool on offer: ``{"name": <that tool's name>, "arguments": <its parameters>}``,
  with the same bounds as the in-process grammar (:func:`~agentnb.providers.guidance.constraint.bound_schema`);
* under ``tool_choice="auto"`` also a text answer: ``{"answer": "<text>"}``, or, when the run
  asks for structured output (``output_type``), the output schema itself: the answer is the value.

A call then always parses and matches its tool's schema; an answer is unwrapped back into
plain text (:func:`unwrap`, or :class:`AnswerStream` while it streams), so the UnTooled layer
and the loop see exactly what they see from an unconstrained text model.

>>> from agentnb.tools import Tool
>>> t = Tool("echo", "Echo text.", {"type": "object", "properties": {"text": {"type": "string"}}})
>>> from agentnb.providers.base import OutputConstraint
>>> [sorted(s["properties"]) for s in envelope_schema(OutputConstraint((t,)))["anyOf"]]
[['arguments', 'name'], ['answer']]
>>> unwrap('{"answer": "It is 5."}')
'It is 5.'
>>> unwrap('{"name": "echo", "arguments": {"text": "hi"}}')
'{"name": "echo", "arguments": {"text": "hi"}}'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from agentnb.providers.base import OutputConstraint
from agentnb.providers.guidance.constraint import MAX_PARALLEL, call_schema

#: The key of the text alternative.
ANSWER_KEY = "answer"
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {ANSWER_KEY: {"type": "string", "minLength": 1}},
    "required": [ANSWER_KEY],
    "additionalProperties": False,
}
_OPEN = re.compile(r'\s*\{\s*"answer"\s*:\s*"')
_COMPACT_OPEN = '{"answer":"'
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def envelope_schema(constraint: OutputConstraint) -> dict[str, Any] | None:
    """The JSON Schema of a constrained reply, or None when nothing needs constraining."""
    tools = constraint.tools
    choice = constraint.tool_choice
    answer = constraint.output if constraint.output is not None else ANSWER_SCHEMA
    if not tools or choice == "none":
        return constraint.output  # a structured answer is the whole reply; plain text needs none
    if choice not in ("auto", "required"):
        tools = tuple(t for t in tools if t.name == choice) or tools
    one: list[dict[str, Any]] = [call_schema(t) for t in tools]
    alternatives: list[dict[str, Any]] = list(one)
    if constraint.parallel:
        alternatives.append({"type": "array", "items": {"anyOf": one}, "minItems": 1, "maxItems": MAX_PARALLEL})
    if choice == "auto":
        alternatives.append(answer)
    return alternatives[0] if len(alternatives) == 1 else {"anyOf": alternatives}


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as the OpenAI ``response_format`` parameter (``strict`` left out: not every
    server knows it, and OpenAI's strict mode refuses a top-level ``anyOf``)."""
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def unwrap(text: str) -> str:
    """The reply as UnTooled reads it: an answer envelope becomes its text, anything else stays.

    An answer cut off by the token limit gives the text written so far.
    """
    stream = AnswerStream()
    shown = stream.feed(text)
    return shown if stream.is_answer else text


def looks_constrained(text: str, names: Iterable[str], *, any_value: bool = False) -> bool:
    """Whether a reply can have come from the envelope schema over tools ``names``.

    A server that ignores ``response_format`` writes prose, JSON followed by more text, or a
    call to a name that is no tool. A reply cut off by the token limit is given the benefit of
    the doubt. With ``any_value`` (structured output) any whole JSON value may be the answer.

    >>> looks_constrained('{"name": "Paris", "arguments": {}}', ["get_weather"])
    False
    """
    body = text.strip()
    if not body:
        return True
    if body[0] not in "{[":
        return False
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        return not exc.msg.startswith("Extra data")
    if any_value:
        return True
    allowed = set(names)
    items = value if isinstance(value, list) else [value]
    return all(isinstance(v, dict) and (v.get("name") in allowed or set(v) == {ANSWER_KEY}) for v in items)


class AnswerStream:
    """Turns a streamed envelope into what UnTooled should see, piece by piece.

    While the reply may still be an answer envelope nothing is shown; once it is one, the
    answer's text is decoded as it arrives; anything else (a call) passes through as it is.
    """

    __slots__ = ("_raw", "_pos", "_mode")

    def __init__(self) -> None:
        self._raw = ""
        self._pos = 0
        self._mode = "open"  # open -> answer -> closed, or open -> raw

    @property
    def is_answer(self) -> bool:
        return self._mode in ("answer", "closed")

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply; return the text to show for it."""
        self._raw += piece
        if self._mode == "raw":
            return piece
        if self._mode == "open":
            m = _OPEN.match(self._raw)
            if m is None:
                compact = "".join(self._raw.split())
                if _COMPACT_OPEN.startswith(compact):
                    return ""  # may still become an answer
                self._mode = "raw"
                return self._raw
            self._mode = "answer"
            self._pos = m.end()
        if self._mode == "closed":
            return ""
        return self._decode()

    def _decode(self) -> str:
        s, i, out = self._raw, self._pos, []
        while i < len(s):
            ch = s[i]
            if ch == '"':
                self._mode = "closed"
                break
            if ch != "\\":
                out.append(ch)
                i += 1
                continue
            if i + 1 >= len(s):
                break  # the escape is not complete yet
            code = s[i + 1]
            if code != "u":
                out.append(_ESCAPES.get(code, code))
                i += 2
                continue
            char, used = _unicode_escape(s, i)
            if used == 0:
                break
            out.append(char)
            i += used
        self._pos = i
        return "".join(out)


def _unicode_escape(s: str, i: int) -> tuple[str, int]:
    """The character of ``\\uXXXX`` (a surrogate pair takes two) at ``s[i]``; (``""``, 0) if incomplete."""
    if i + 6 > len(s):
        return "", 0
    try:
        high = int(s[i + 2 : i + 6], 16)
    except ValueError:
        return "\ufffd", 6
    if 0xD800 <= high < 0xDC00:
        if i + 12 > len(s):
            return "", 0
        if s[i + 6 : i + 8] == "\\u":
            try:
                low = int(s[i + 8 : i + 12], 16)
            except ValueError:
                low = 0
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), 12
        return "\ufffd", 6
    return chr(high), 6
