"""Python values and JSON: defaults a schema can show, types written as strings, converters.

A tool's arguments arrive as JSON; :func:`converter_for` builds the Python values its function
expects (dataclasses, enums, tuples, dates, paths). Defaults go into the schema as JSON
(:func:`json_default`), and a default its own schema refuses is a definition error
(:func:`refused_default`).

>>> import datetime
>>> converter_for(datetime.date)("2024-05-01")
datetime.date(2024, 5, 1)
>>> json_default(datetime.date(2024, 5, 1)), jsonable({1, 2})
('2024-05-01', False)
>>> refused_default({"type": "string", "default": 5})
"5 is not of type 'string'"
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, get_args, get_origin, get_type_hints

_NONE = type(None)


def none_passes(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``convert``, letting ``None`` through (the value of a ``None`` default)."""
    return lambda v: None if v is None else convert(v)


def uses_pydantic(tp: Any) -> bool:
    """Whether ``tp`` is a pydantic model, or ``Annotated`` with a pydantic ``Field``.

    Without ``pydantic`` imported no type can be one, so nothing is imported to find out.
    """
    pydantic = sys.modules.get("pydantic")
    if pydantic is None:
        return False
    if isinstance(tp, type) and issubclass(tp, pydantic.BaseModel):
        return True
    if get_origin(tp) is typing.Annotated:
        return any(isinstance(a, pydantic.fields.FieldInfo) for a in get_args(tp)[1:])
    return False


def jsonable(value: Any) -> bool:
    """Whether a Python default can go in a schema (enums as their values, paths and dates as text)."""
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    return value is None or isinstance(value, (str, int, float, bool)) or textual(type(value)) is not None


def json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    written = textual(type(value))
    if written is None:
        return value
    return value.isoformat() if written[1].get("format") in ("date-time", "date", "time") else str(value)


def refused_default(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` refuses its own ``default`` (``def f(name: str = 5)``); None when it has
    none or accepts it. A model that copies the default shown would be refused."""
    if "default" not in schema:
        return None
    import jsonschema  # only for parameters with a default, once per tool

    try:
        errors = jsonschema.Draft202012Validator(dict(schema)).iter_errors(schema["default"])
        error = jsonschema.exceptions.best_match(errors)
    except Exception:  # a schema jsonschema cannot read is reported elsewhere
        return None
    return None if error is None else str(error.message)


# --- types written as a JSON string (a Path from "data.csv", a date from "2024-05-01") ----------


def _written(what: str, build: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        try:
            return build(value)
        except (ValueError, TypeError, ArithmeticError):  # Decimal's errors say nothing readable
            raise ValueError(f"{value!r} is not {what}") from None

    return convert


@functools.cache
def _textual_types() -> tuple[tuple[type, dict[str, Any], Callable[[Any], Any] | None], ...]:
    """(type, its schema, how a JSON value becomes it); subclasses match, so datetime comes before
    date. Built on first use: ``import agentnb`` does not pay for decimal and uuid."""
    import datetime
    import decimal
    import pathlib
    import uuid

    return (
        (datetime.datetime, {"type": "string", "format": "date-time"},
         _written("an ISO 8601 date and time (2024-05-01T14:30:00)", datetime.datetime.fromisoformat)),
        (datetime.date, {"type": "string", "format": "date"},
         _written("an ISO 8601 date (2024-05-01)", datetime.date.fromisoformat)),
        (datetime.time, {"type": "string", "format": "time"},
         _written("an ISO 8601 time (14:30:00)", datetime.time.fromisoformat)),
        (uuid.UUID, {"type": "string", "format": "uuid"}, _written("a UUID", uuid.UUID)),
        (decimal.Decimal, {"type": ["number", "string"]},
         _written("a decimal number", lambda v: decimal.Decimal(str(v)))),
        (pathlib.PurePath, {"type": "string"}, None),  # None: the type itself (Path, PurePosixPath...)
    )  # fmt: skip


def textual(tp: Any) -> tuple[type, dict[str, Any], Callable[[Any], Any]] | None:
    if not isinstance(tp, type) or tp in (str, int, float, bool, list, dict, tuple, type(None)):
        return None
    for base, schema, build in _textual_types():
        if issubclass(tp, base):
            return base, schema, build if build is not None else _written(f"a path ({tp.__name__})", tp)
    return None


# --- converting validated JSON back into the Python types a function expects ------------


def converter_for(tp: Any) -> Callable[[Any], Any] | None:
    """A function turning JSON data into ``tp`` (dataclasses, enums, tuples), or None if as-is."""
    origin = get_origin(tp)
    args = get_args(tp)
    if uses_pydantic(tp):  # pydantic builds the instance (its validators run)
        from pydantic import TypeAdapter

        return TypeAdapter(tp).validate_python  # type: ignore[no-any-return]
    if origin is typing.Annotated:
        return converter_for(args[0])
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp
    written = textual(tp)
    if written is not None:
        return written[2]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = get_type_hints(tp)
        subs: dict[str, Callable[[Any], Any]] = {}
        for f in dataclasses.fields(tp):
            sub = converter_for(hints.get(f.name, Any))
            if sub is not None:
                subs[f.name] = none_passes(sub) if f.default is None else sub
        return lambda d: tp(**{k: (subs[k](v) if k in subs else v) for k, v in d.items()})
    if origin in (typing.Union, types.UnionType):
        inner = [converter_for(a) for a in args if a is not _NONE]
        only = inner[0] if len(inner) == 1 else None
        if only is None:
            return None
        return lambda v: None if v is None else only(v)
    if origin in (list, Sequence) and args:
        item = converter_for(args[0])
        if item is None:
            return None
        return lambda v: [item(x) for x in v]
    if origin in (dict, Mapping) and len(args) == 2:
        value = converter_for(args[1])
        if value is None:
            return None
        return lambda d: {k: value(v) for k, v in d.items()}
    if origin is tuple:
        return tuple
    if origin in (set, frozenset):
        return origin  # type: ignore[no-any-return]
    return None
