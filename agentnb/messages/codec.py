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
import math
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

from agentnb.messages.types import Image, ToolCall, Usage

Decoder = Callable[[Any], Any]


def _checked(kind: type) -> Decoder:
    """A scalar field read from a file (untrusted): the declared type or a clear error. A float
    is finite (JSON has no NaN or Infinity; views and sums cannot use them)."""
    kinds: tuple[type, ...] = (int, float) if kind is float else (kind,)

    def read(value: Any) -> Any:
        if not isinstance(value, kinds) or (kind is not bool and isinstance(value, bool)):
            raise ValueError(f"expected {kind.__name__}, not {type(value).__name__} {value!r:.60}")
        if kind is float and isinstance(value, (int, float)) and not finite(value):
            raise ValueError(f"expected a finite number, not {value!r:.60}")
        return value

    return read


def finite(value: int | float) -> bool:
    """Whether a number is finite as a float (an int too long for a float is not).

    >>> finite(1.5), finite(float("inf")), finite(10**400)
    (True, False, False)
    """
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _items(inner: Decoder) -> Decoder:
    """A JSON list, each item read by ``inner``; an error names the item (``[3]: ...``)."""

    def read(value: Any) -> Any:
        if not isinstance(value, list):
            raise ValueError(f"expected a list, not {type(value).__name__} {value!r:.60}")
        return [_at(f"[{i}]", inner, v) for i, v in enumerate(value)]

    return read


def _values(inner: Decoder) -> Decoder:
    """A JSON object, each value read by ``inner``; an error names the key (``['exact']: ...``)."""

    def read(value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, not {type(value).__name__} {value!r:.60}")
        return {k: _at(f"[{k!r}]", inner, v) for k, v in value.items()}

    return read


def _at(where: str, read: Decoder, value: Any) -> Any:
    try:
        return read(value)
    except ValueError as exc:
        reason = str(exc)
        raise ValueError(where + reason if reason.startswith("[") else f"{where}: {reason}") from None


def _null(value: Any) -> None:
    if value is not None:
        raise ValueError("expected null")


def _one_of(options: list[Any]) -> Decoder:
    """A value of one of several scalar types (``bool | float | None``)."""
    reads = [_null if a is type(None) else _checked(a) for a in options]
    names = " or ".join("null" if a is type(None) else a.__name__ for a in options)

    def read(value: Any) -> Any:
        for each in reads:
            try:
                return each(value)
            except ValueError:
                pass
        raise ValueError(f"expected {names}, not {type(value).__name__} {value!r:.60}")

    return read


def read_usage(d: Any) -> Usage:
    """A :class:`Usage` from its JSON form: whole token counts and a cost in dollars (or none).

    >>> read_usage({"input_tokens": 10, "output_tokens": 2, "cost": 0.0})
    Usage(input_tokens=10, output_tokens=2, cost=0.0)
    >>> read_usage({"input_tokens": "<b>"})
    Traceback (most recent call last):
    ...
    ValueError: input_tokens: expected int, not str '<b>'
    """
    if not isinstance(d, dict):
        raise ValueError(f"usage must be a JSON object, not {type(d).__name__}")
    unknown = set(d) - set(_USAGE)
    if unknown:
        raise ValueError(f"usage has unknown fields {sorted(unknown)}")
    out = {}
    for key, value in d.items():
        try:
            out[key] = _USAGE[key](value)
        except ValueError as exc:
            raise ValueError(f"{key}: {exc}") from None
    return Usage(**out)


_USAGE: dict[str, Decoder] = {
    "input_tokens": _checked(int),
    "output_tokens": _checked(int),
    "cost": lambda v: None if v is None else _checked(float)(v),
}
_KNOWN: dict[Any, Decoder] = {
    Image: Image.from_dict,
    ToolCall: ToolCall.from_dict,
    Usage: read_usage,
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
    if origin is dict or hint is dict:  # model data: kept as written, but an object it must be
        inner = decoder_for(args[1]) if len(args) == 2 else _identity
        return _checked(dict) if inner is _identity else _values(inner)
    if origin is list or hint is list:
        inner = decoder_for(args[0]) if args else _identity
        return _checked(list) if inner is _identity else _items(inner)
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

            def each_item(v: Any) -> Any:
                if not isinstance(v, list):
                    raise ValueError(f"expected a list, not {type(v).__name__} {v!r:.60}")
                return tuple(inner(x) for x in v)

            return each_item
        each = [decoder_for(a) for a in args]  # tuple[str, float]: a type per position

        def fixed(v: Any) -> Any:
            if not isinstance(v, list):
                raise ValueError(f"expected a list, not {type(v).__name__} {v!r:.60}")
            if len(v) != len(each):
                raise ValueError(f"expected {len(each)} items, not {len(v)}")
            return tuple(read(x) for read, x in zip(each, v, strict=True))

        return fixed
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            inner = decoder_for(options[0])
            return _identity if inner is _identity else (lambda v: None if v is None else inner(v))
        if all(a in (int, float, str, bool, type(None)) for a in args):
            return _one_of(list(args))
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


_V1_TAGS = ("__image__", "__tool_call__", "__usage__")


def untag_v1(value: Any) -> Any:
    """A transcript version 1 value in version 2's plain form: ``{"__image__": {...}}`` becomes
    ``{...}``. The value is then read by its field's type like any other (old files are
    type-checked too; a field typed ``dict`` keeps what the model wrote).

    >>> untag_v1([{"__usage__": {"input_tokens": 1}}, "x"])
    [{'input_tokens': 1}, 'x']
    """
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if key in _V1_TAGS:
            return inner
    if isinstance(value, list):
        return [untag_v1(v) for v in value]
    return value
