"""Conversation messages, tool calls and images, and their JSON form.

Messages are frozen dataclasses tagged by ``role``, so consumers can ``match`` on them:

>>> from agentnb.messages.types import UserMessage, message_from_dict
>>> m = UserMessage("hi")
>>> message_from_dict(m.to_dict()) == m
True
"""

from __future__ import annotations

import base64
import io
import json
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from agentnb.messages.fastinit import fast_init

JSON: TypeAlias = Any


@dataclass(frozen=True, slots=True)
class Image:
    """An image attached to a message: raw bytes and a MIME type.

    >>> img = Image(b"PNG bytes", "image/png")
    >>> img.data_url[:30]
    'data:image/png;base64,UE5HIGJ5'
    >>> Image.from_dict(img.to_dict()) == img
    True
    """

    data: bytes = field(repr=False)
    mime: str = "image/png"

    @classmethod
    def coerce(cls, image: Any, mime: str = "image/png") -> Image:
        """Accept an :class:`Image`, raw bytes, or anything with a PIL-style ``save()``."""
        if isinstance(image, Image):
            return image
        if isinstance(image, (bytes, bytearray, memoryview)):
            return cls(bytes(image), mime)
        if hasattr(image, "save"):
            buf = io.BytesIO()
            fmt = mime.split("/", 1)[1].upper()
            image.save(buf, format="JPEG" if fmt == "JPG" else fmt)
            return cls(buf.getvalue(), mime)
        raise TypeError(f"cannot attach {type(image).__name__} as an image; pass bytes or a PIL image")

    @property
    def b64(self) -> str:
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        return f"data:{self.mime};base64,{self.b64}"

    def to_dict(self) -> dict[str, str]:
        return {"mime": self.mime, "data": self.b64}

    @classmethod
    def from_dict(cls, d: dict[str, str]) -> Image:
        return cls(base64.b64decode(typed(d, "data", str)), typed(d, "mime", str))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for.

    ``arguments`` is ``None`` when the model's arguments were not valid JSON; ``raw_arguments``
    then keeps the text and ``parse_error`` says what was wrong, so the loop can tell the model.

    >>> c = ToolCall("call_1", "add", {"a": 2, "b": 3})
    >>> c.to_dict()
    {'id': 'call_1', 'name': 'add', 'arguments': {'a': 2, 'b': 3}}
    >>> ToolCall.from_dict(c.to_dict()) == c
    True
    """

    id: str
    name: str
    arguments: dict[str, JSON] | None
    raw_arguments: str | None = None
    parse_error: str | None = None

    def to_dict(self) -> dict[str, JSON]:
        d: dict[str, JSON] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.raw_arguments is not None:
            d["raw_arguments"] = self.raw_arguments
        if self.parse_error is not None:
            d["parse_error"] = self.parse_error
        return d

    @classmethod
    def from_dict(cls, d: dict[str, JSON]) -> ToolCall:
        return cls(
            typed(d, "id", str),
            typed(d, "name", str),
            typed(d, "arguments", (dict, type(None)), None),
            typed(d, "raw_arguments", (str, type(None)), None),
            typed(d, "parse_error", (str, type(None)), None),
        )


@dataclass(frozen=True, slots=True)
class SystemMessage:
    """Instructions for the model, first in a conversation (``Agent(system=...)`` adds one).

    >>> SystemMessage("Be brief.").to_dict()
    {'role': 'system', 'content': 'Be brief.'}
    """

    content: str
    role: Literal["system"] = "system"

    def to_dict(self) -> dict[str, JSON]:
        return {"role": "system", "content": self.content}


@dataclass(frozen=True, slots=True)
class UserMessage:
    """What the user says, optionally with images (tool images come back as one of these).

    >>> UserMessage("What is 2 + 3?").to_dict()
    {'role': 'user', 'content': 'What is 2 + 3?'}
    >>> UserMessage("look", (Image(b"png"),)).role
    'user'
    """

    content: str
    images: tuple[Image, ...] = ()
    role: Literal["user"] = "user"

    def to_dict(self) -> dict[str, JSON]:
        d: dict[str, JSON] = {"role": "user", "content": self.content}
        if self.images:
            d["images"] = [i.to_dict() for i in self.images]
        return d


@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """A model's turn: text, tool calls, or both.

    ``reasoning`` holds the provider's opaque reasoning items (OpenAI Responses ``reasoning``
    items, Anthropic ``thinking`` blocks) as JSON, sent back to the same API on later steps and
    kept in saved transcripts; other providers ignore them.

    >>> m = AssistantMessage(None, (ToolCall("call_1", "add", {"a": 1, "b": 2}),))
    >>> m.to_dict()["tool_calls"][0]["name"]
    'add'
    >>> AssistantMessage("It is 3.").content
    'It is 3.'
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = "assistant"
    reasoning: tuple[dict[str, JSON], ...] = field(default=(), repr=False)  # opaque: never shown

    def to_dict(self) -> dict[str, JSON]:
        d: dict[str, JSON] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            d["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.reasoning:
            d["reasoning"] = [dict(r) for r in self.reasoning]
        return d


@dataclass(frozen=True, slots=True)
class ToolMessage:
    """The result of one tool call, as the model will read it.

    >>> ToolMessage("call_1", "add", "3").to_dict()
    {'role': 'tool', 'tool_call_id': 'call_1', 'name': 'add', 'content': '3'}
    >>> ToolMessage("call_2", "add", "Error: ...", is_error=True).is_error
    True
    """

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    role: Literal["tool"] = "tool"

    def to_dict(self) -> dict[str, JSON]:
        d: dict[str, JSON] = {
            "role": "tool",
            "tool_call_id": self.tool_call_id,
            "name": self.name,
            "content": self.content,
        }
        if self.is_error:
            d["is_error"] = True
        return d


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts and their price; they add up across model calls.

    ``cost`` is the price in US dollars (:mod:`agentnb.control.cost`), ``None`` when unknown: a sum
    with an unknown part is unknown, never a wrong number (a usage with no tokens adds nothing).

    >>> total = Usage(10, 2) + Usage(5, 1)
    >>> total, total.total_tokens
    (Usage(input_tokens=15, output_tokens=3), 18)
    >>> Usage(10, 2, cost=0.5) + Usage(5, 1, cost=0.25), Usage(10, 2, cost=0.5) + Usage(5, 1)
    (Usage(input_tokens=15, output_tokens=3, cost=0.75), Usage(input_tokens=15, output_tokens=3))
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def __add__(self, other: Usage) -> Usage:
        a, b = self.cost, other.cost
        if a is None and not (self.input_tokens or self.output_tokens):
            cost = b
        elif b is None and not (other.input_tokens or other.output_tokens):
            cost = a
        else:
            cost = None if a is None or b is None else a + b
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens, cost)

    def __repr__(self) -> str:
        cost = f", cost={self.cost!r}" if self.cost is not None else ""
        return f"Usage(input_tokens={self.input_tokens}, output_tokens={self.output_tokens}{cost})"

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cost is not None:
            d["cost"] = self.cost
        return d


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage


def message_from_dict(d: dict[str, JSON]) -> Message:
    """Rebuild a message from :meth:`to_dict` output; plain OpenAI chat dicts work too (content
    parts, ``image_url`` data URLs, ``function`` tool calls, the ``developer`` role).

    >>> message_from_dict({"role": "user", "content": [{"type": "text", "text": "hi"}]})
    UserMessage(content='hi', images=(), role='user')
    >>> call = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1}'}}
    >>> message_from_dict({"role": "assistant", "content": None, "tool_calls": [call]}).tool_calls[0].arguments
    {'a': 1}
    """
    role = d.get("role")
    if role not in ("system", "developer", "user", "assistant", "tool"):
        raise ValueError(f"unknown message role {role!r} (system, user, assistant or tool)")
    if role != "assistant" and "content" not in d and not d.get("images"):
        raise ValueError(f"a {role} message needs 'content'")
    text, images = _content(d.get("content"))
    if role in ("system", "developer"):
        return SystemMessage(text)
    if role == "user":
        return UserMessage(text, images + _objects(d, "images", Image.from_dict))
    if role == "assistant":
        calls = _objects(d, "tool_calls", _call_from_dict)
        reasoning = typed(d, "reasoning", list, [])
        if not all(isinstance(r, dict) for r in reasoning):
            raise ValueError("'reasoning' must be a list of JSON objects")
        return AssistantMessage(d.get("content") and text, calls, reasoning=tuple(reasoning))
    if "tool_call_id" not in d:
        raise ValueError("a tool message needs 'tool_call_id' (the id of the call it answers)")
    return ToolMessage(
        typed(d, "tool_call_id", str), typed(d, "name", str, ""), text, typed(d, "is_error", bool, False)
    )


def _content(content: Any) -> tuple[str, tuple[Image, ...]]:
    """Text and images of a message's content: a string, or OpenAI content parts."""
    if content is None or isinstance(content, str):
        return content or "", ()
    if not isinstance(content, list):
        raise ValueError(f"message content must be text or a list of parts, not {type(content).__name__}")
    texts: list[str] = []
    images: list[Image] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "input_text", "output_text"):
            texts.append(str(part.get("text", "")))
        elif kind == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            head, _, data = str(url).partition(",")
            if not head.startswith("data:image/") or not head.endswith(";base64"):
                raise ValueError("an image part must be a base64 data: URL (agentnb downloads nothing)")
            images.append(Image(base64.b64decode(data), head[5:].removesuffix(";base64")))
        else:
            raise ValueError(f"unsupported content part {kind!r} (text and image_url parts are)")
    return "\n".join(texts), tuple(images)


def _objects(d: dict[str, Any], key: str, read: Any) -> tuple[Any, ...]:
    """``d[key]``, a list of JSON objects (or null), each read by ``read``; an error names the item."""
    items = typed(d, key, (list, type(None)), None) or ()
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"'{key}[{i}]' must be a JSON object, not {type(item).__name__}")
        try:
            out.append(read(item))
        except KeyError as exc:
            raise ValueError(f"'{key}[{i}]': missing field {exc.args[0]!r}") from None
        except ValueError as exc:
            raise ValueError(f"'{key}[{i}]': {exc}") from None
    return tuple(out)


def _call_from_dict(c: dict[str, Any]) -> ToolCall:
    if "function" not in c:  # agentnb's own shape
        return ToolCall.from_dict(c)
    f = typed(c, "function", dict)
    raw = f.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        return ToolCall(
            typed(c, "id", str, ""), typed(f, "name", str), None, raw, f"arguments are not valid JSON: {exc}"
        )
    return ToolCall(
        typed(c, "id", str, ""), typed(f, "name", str), arguments if isinstance(arguments, dict) else None, None
    )


_MISSING: Any = object()


def typed(d: dict[str, Any], key: str, kinds: type | tuple[type, ...], default: Any = _MISSING) -> Any:
    """``d[key]`` if it has one of the types ``kinds`` (a file or a server is untrusted), else a
    ``ValueError`` naming the field; ``default`` when the key is absent (required without one).

    >>> typed({"name": 3}, "name", str)
    Traceback (most recent call last):
    ...
    ValueError: 'name' must be str, not int
    """
    if key not in d:
        if default is _MISSING:
            raise KeyError(key)
        return default
    value = d[key]
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise ValueError(f"{key!r} must be {names}, not {type(value).__name__}")
    return value


def coerce_messages(value: str | Message | dict | list | tuple) -> list[Message]:
    """Turn a prompt string, a message, a dict, or a list of them into a message list."""
    if isinstance(value, str):
        return [UserMessage(value)]
    if isinstance(value, dict):
        return [message_from_dict(value)]
    if isinstance(value, (list, tuple)):
        out: list[Message] = []
        names: dict[str, str] = {}  # an OpenAI tool message has no name: its call's
        for item in value:
            for m in coerce_messages(item):
                if isinstance(m, AssistantMessage):
                    names.update((c.id, c.name) for c in m.tool_calls)
                elif isinstance(m, ToolMessage) and not m.name and m.tool_call_id in names:
                    m = ToolMessage(m.tool_call_id, names[m.tool_call_id], m.content, m.is_error)
                out.append(m)
        return out
    if isinstance(value, (SystemMessage, UserMessage, AssistantMessage, ToolMessage)):
        return [value]
    raise TypeError(f"expected a prompt string or messages, got {type(value).__name__}")


for _cls in (Image, ToolCall, SystemMessage, UserMessage, AssistantMessage, ToolMessage, Usage):
    fast_init(_cls)  # cheaper construction, same frozen dataclasses
