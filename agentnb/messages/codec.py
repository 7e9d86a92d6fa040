"""The JSON form of event fields, decoded by each field's declared type.

A transcript must round-trip whatever a model sends: argument keys such as ``__image__`` or
``__usage__`` are data, never type tags. So values are encoded plainly (an :class:`Image` as
its ``to_dict()``, a tuple as a list) and decoded by the *field's annotation*: a field typed
``Image`` is read as an image, a field typed ``dict[str, Any]`` is left as the model wrote it.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Shown:
...     image: Image
...     arguments: dict
>>> fields = decoders(Shown)
>>> fields["image"]({"mime": "image/png", "data": "aGk="}).data
b'hi'
>>> fields["arguments"]({"__image__": {"mime": "x", "data": ""}})
{'__image__': {'mime': 'x', 'data': ''}}
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from agentnb.messages.types import Image, ToolCall, Usage

Decoder = Callable[[Any], Any]


def _checked(kind: type) -> Decoder:
    """A scalar field read from a file (untrusted): the declared type or a clear error."""
    kinds: tuple[type, ...] = (int, float) if kind is float else (kind,)

    def read(value: Any) -> Any:
        if not isinstance(value, kinds) or (kind is not bool and isinstance(value, bool)):
            raise ValueError(f"expected {kind.__name__}, not {type(value).__name__} {value!r:.60}")
        return value

    return read


_KNOWN: dict[Any, Decoder] = {
    Image: Image.from_dict,
    ToolCall: ToolCall.from_dict,
    Usage: lambda d: Usage(**{k: _checked(int)(v) for k, v in d.items()}),
}
_cache: dict[type, dict[str, Decoder]] = {}


def encode(value: Any) -> Any:
    """A field value as JSON data (no type tags)."""
    if isinstance(value, tuple):
        return [encode(v) for v in value]
    if hasattr(value, "to_dict") and not isinstance(value, (dict, list, str)):
        return value.to_dict()
    return value


def _identity(value: Any) -> Any:
    return value


def decoder_for(hint: Any) -> Decoder:
    """How to read a JSON value back into a value of type ``hint``."""
    known = _KNOWN.get(hint)
    if known is not None:
        return known
    if hint in (int, float, str, bool):  # views put numbers into HTML unescaped: check them
        return _checked(hint)
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Literal:
        allowed = args

        def literal(value: Any) -> Any:
            if value not in allowed:
                raise ValueError(f"expected one of {', '.join(map(repr, allowed))}, not {value!r:.60}")
            return value

        return literal
    if origin is tuple:
        if not args or (len(args) == 2 and args[1] is Ellipsis):  # tuple[X, ...]: one type throughout
            inner = decoder_for(args[0]) if args else _identity
            return lambda v: tuple(inner(x) for x in v) if isinstance(v, list) else v
        each = [decoder_for(a) for a in args]  # tuple[str, float]: a type per position

        def fixed(v: Any) -> Any:
            if not isinstance(v, list):
                return v
            if len(v) != len(each):
                raise ValueError(f"expected {len(each)} items, not {len(v)}")
            return tuple(read(x) for read, x in zip(each, v, strict=True))

        return fixed
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            inner = decoder_for(options[0])
            return _identity if inner is _identity else (lambda v: None if v is None else inner(v))
        return _identity
    if isinstance(hint, type) and hasattr(hint, "from_dict") and not issubclass(hint, (dict, list, str)):
        reader = hint.from_dict  # type: ignore[attr-defined]
        return lambda v: reader(v) if isinstance(v, dict) else v
    return _identity


def decoders(cls: type) -> dict[str, Decoder]:
    """A decoder per field of the dataclass ``cls`` (from its type hints), cached."""
    found = _cache.get(cls)
    if found is None:
        module = sys.modules.get(cls.__module__)
        namespace = {**vars(typing), **(vars(module) if module else {})}
        hints = typing.get_type_hints(cls, globalns=namespace)
        found = {f.name: decoder_for(hints.get(f.name, Any)) for f in dataclasses.fields(cls)}
        _cache[cls] = found
    return found


def decode_v1(value: Any) -> Any:
    """Transcript version 1 tagged values (``{"__image__": ...}``); read for old files only."""
    if isinstance(value, dict):
        if "__image__" in value:
            return Image.from_dict(value["__image__"])
        if "__tool_call__" in value:
            return ToolCall.from_dict(value["__tool_call__"])
        if "__usage__" in value:
            return Usage(**value["__usage__"])
    if isinstance(value, list):
        return tuple(decode_v1(v) for v in value)
    return value
