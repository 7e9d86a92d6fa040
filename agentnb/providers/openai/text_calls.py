"""Tool calls a server left in the reply's text, on the native route.

A server that passes ``tools`` to the model but does not parse its calls (SGLang without
``--tool-call-parser``, a model whose call format the server's parser misses, a small model
that writes its call as JSON) returns the call as text: ``<tool_call>{...}</tool_call>``
(Hermes, Qwen), ``<|python_tag|>{...}`` (Llama 3.1), ``[TOOL_CALLS][...]`` or
``[TOOL_CALLS]name[ARGS]{...}`` (Mistral), or a bare JSON object. :func:`calls_in_text`
reads those as calls, so the loop runs them; prose stays prose. Only calls to offered tools
count, and outside explicit tags the whole reply must be the call.

>>> prose, calls = calls_in_text('Let me check. <tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>', ["add"])
>>> prose, [(c.name, c.arguments) for c in calls]
('Let me check.', [('add', {'a': 2})])
>>> calls_in_text('{"name": "add", "parameters": {"a": 2}}', ["add"])[1][0].arguments
{'a': 2}
>>> calls_in_text('{"name": "launch", "arguments": {}}', ["add"]) is None  # not on offer
True
>>> calls_in_text("Use {x} in a format string.", ["add"]) is None
True
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from agentnb.events import CallsFromText
from agentnb.messages import ToolCall
from agentnb.providers.base import Completion
from agentnb.providers.untooled.parse import parse_reply

#: Markers a model's own call format starts with.
OPENERS = ("<tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "<function_call>", "<functioncall>")
_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.S)
_MISTRAL = re.compile(r"\[TOOL_CALLS\]\s*([\w.-]{1,64})\s*\[ARGS\]\s*(\{.*\})\s*\Z", re.S)
_LANGUAGE = re.compile(r"[\w-]*[ \t]*")


def calls_in_text(
    text: str, offered: Sequence[str], new_id: Callable[[], str] | None = None
) -> tuple[str | None, tuple[ToolCall, ...]] | None:
    """The prose and the calls of a reply whose calls are written as text; None for prose."""
    ids = new_id or _counter()
    stripped = text.strip()
    if not stripped or not offered:
        return None
    if "<tool_call>" in stripped:
        calls: list[ToolCall] = []
        for body in _TAGGED.findall(stripped):
            found = _read(body, offered, ids)
            if found is None:
                return None
            calls += found
        prose = _TAGGED.sub("", stripped).strip() or None
        return (prose, tuple(calls)) if calls else None
    mistral = _MISTRAL.match(stripped)
    if mistral is not None:
        found = _read(f'{{"name": "{mistral.group(1)}", "arguments": {mistral.group(2)}}}', offered, ids)
        return (None, found) if found else None
    for opener in OPENERS[1:]:
        if stripped.startswith(opener):
            stripped = stripped[len(opener) :].strip()
            break
    stripped = _unfenced(stripped)
    found = _read(stripped, offered, ids)
    return (None, found) if found else None


def _unfenced(text: str) -> str:
    """The body of a reply that is one fenced block (```json ... ```), else the reply.

    String operations, not one regex: a pattern with a language tag and a lazy body took
    quadratic time on a long unclosed fence (measured: 155 s on 100k characters).
    """
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return text
    inner = text[3:-3]
    newline = inner.find("\n")
    if newline >= 0 and _LANGUAGE.fullmatch(inner[:newline]):
        inner = inner[newline + 1 :]
    return inner.strip()


def _read(body: str, offered: Sequence[str], ids: Callable[[], str]) -> tuple[ToolCall, ...] | None:
    """The calls ``body`` consists of, when every one names an offered tool and reads whole."""
    body = body.strip()
    if not body or body[0] not in "{[":
        return None
    _, calls = parse_reply(body, offered, strict=True, new_id=ids)
    if calls and all(c.name in offered and c.arguments is not None for c in calls):
        return calls
    return None


def could_open(text: str) -> bool:
    """Whether a reply starting with ``text`` (stripped) may still turn out to be a call.

    >>> could_open("<tool"), could_open('{"name"'), could_open("Hello")
    (True, True, False)
    """
    body = text.lstrip()
    if body[:1] in ("{", "[", "`"):
        return True
    return any(o.startswith(body[: len(o)]) for o in OPENERS)


class CallGate:
    """Lets a native reply's prose stream through, holding back what may be a call in text:
    a reply that opens like one is held whole; prose is held from a ``<tool_call>`` tag on.

    >>> gate = CallGate()
    >>> gate.feed("It is "), gate.feed("5."), gate.rest()
    ('It is ', '5.', '')
    >>> gate = CallGate()
    >>> gate.feed("<tool_"), gate.feed('call>{"name": "add"'), gate.rest()
    ('', '', '<tool_call>{"name": "add"')
    """

    def __init__(self) -> None:
        self.buffer = ""
        self.sent = 0
        self.holding = False
        self.started = False

    def feed(self, piece: str) -> str:
        self.buffer += piece
        if self.holding:
            return ""
        if not self.started:
            body = self.buffer.lstrip()
            if not body:
                return ""
            if could_open(body):
                if any(body.startswith(o) for o in OPENERS) or body[0] in "{[`":
                    self.holding = True
                return ""  # a marker may be starting: wait for more
            self.started = True
        tag = self.buffer.find("<tool_call>", self.sent)
        if tag >= 0:
            self.holding = True
            end = tag
        else:
            end = len(self.buffer) - _partial_tag(self.buffer)
        out = self.buffer[self.sent : end]
        self.sent = max(self.sent, end)
        return out

    def rest(self) -> str:
        """What was held back, once the reply turned out to be prose."""
        out = self.buffer[self.sent :]
        self.sent = len(self.buffer)
        return out


def _partial_tag(text: str) -> int:
    """How many trailing characters of ``text`` may be the start of ``<tool_call>``."""
    for n in range(min(len(text), len("<tool_call>") - 1), 0, -1):
        if "<tool_call>".startswith(text[-n:]):
            return n
    return 0


def offered(kwargs: dict[str, Any], request: Any) -> list[str]:
    """The tools a native request offered (none when it sent no ``tools`` or chose "none",
    and none for a structured answer, whose JSON is the answer, never a call)."""
    if "tools" not in kwargs or request.tool_choice == "none" or request.output is not None:
        return []
    return [t.name for t in request.tools]


def find(text: str | None, names: Sequence[str]) -> tuple[str | None, tuple[ToolCall, ...]] | None:
    """:func:`calls_in_text` with call ids unique across a conversation."""
    if not text or not names:
        return None
    return calls_in_text(text, names, lambda: f"call_{uuid.uuid4().hex[:16]}")


def with_calls(completion: Completion, found: tuple[str | None, tuple[ToolCall, ...]], provider: str) -> Completion:
    """``completion`` with the calls read from its text, and the event that says so."""
    prose, calls = found
    note = CallsFromText(
        0, provider, tuple(c.name for c in calls), "the server sent them as text, not as tool_calls; read as calls"
    )
    return dataclasses.replace(
        completion, text=prose, tool_calls=calls, finish_reason="tool_calls", events=(*completion.events, note)
    )


def _counter() -> Callable[[], str]:
    numbers = itertools.count(1)
    return lambda: f"text_call_{next(numbers)}"
