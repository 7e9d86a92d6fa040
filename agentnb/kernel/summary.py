"""One line per value: its type and size, read without running the user's code.

A summary never calls a ``__repr__``, a ``__len__`` or a property of a user's class: builtin
values, containers, pandas and numpy objects are measured; anything else is named by its type.
pandas and numpy are never imported here: an object is recognised by its type's module first.

>>> summary([{"a": 1}] * 3_000), summary("x" * 20_114), summary(42), summary({"lr": 0.1})
('list of 3,000 dict', 'str of 20,114 characters', 'int 42', 'dict of 1 str -> float')
>>> class Model: pass
>>> summary(Model()), summary(Model), summary(len)
('Model object', 'class Model', 'builtin_function_or_method len')
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

from agentnb.kernel.bounded import clipped_repr, plain

#: Elements of a container looked at to say what it holds.
PEEK = 100
_SCALARS = (bool, int, float, complex, type(None))
_SEQUENCES = (list, tuple, set, frozenset)
_CALLABLES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)
#: Values whose repr is short and runs no user code.
SHORT_SCALARS = (bool, int, float, complex, type(None), str, bytes)


def summary(value: Any) -> str:
    """``DataFrame 1,000,000 x 12``, ``ndarray (512, 512) float32``, ``list of 3,000 dict``..."""
    kind = type(value)
    if kind in _SCALARS:
        text = repr(value)
        return f"{kind.__name__} {text if len(text) <= 40 else text[:39] + '…'}"
    if kind is str:
        return f"str {value!r}" if len(value) <= 40 and value.isprintable() else f"str of {len(value):,} characters"
    if kind in (bytes, bytearray):
        return f"{kind.__name__} of {len(value):,}"
    if kind in _SEQUENCES:
        return f"{kind.__name__} of {len(value):,}{_of(value)}"
    if kind is dict:
        keys = _of(value.keys()).removeprefix(" ")
        values = _of(value.values()).removeprefix(" ")
        return f"dict of {len(value):,}" + (f" {keys} -> {values}" if value else "")
    module = getattr(kind, "__module__", "") or ""
    if module.startswith(("pandas", "numpy")):
        return _array_like(value, kind.__name__)
    if isinstance(value, type):
        return f"class {type_name(value)}"
    if isinstance(value, _CALLABLES):
        return f"{kind.__name__} {type_name(value)}"
    fields = _fields(value)
    if fields is not None:
        return f"{type_name(kind)} ({fields})"
    return f"{type_name(kind)} object"


def type_name(value: Any) -> str:
    """A class's or a function's qualified name, without ``<locals>`` (``Outer.Inner``)."""
    name = getattr(value, "__qualname__", None)
    if not isinstance(name, str):
        name = getattr(value, "__name__", None) or "?"
    return str(name).rpartition("<locals>.")[2]


def _of(items: Any) -> str:
    """`` dict`` when the first elements are all one type, `` int, str`` for a few, else ``''``."""
    names: list[str] = []
    for i, item in enumerate(items):
        if i >= PEEK:
            break
        name = type(item).__name__
        if name not in names:
            names.append(name)
            if len(names) > 3:
                return " mixed"
    return (" " + ", ".join(names)) if names else ""


def _fields(value: Any) -> str | None:
    kind = type(value)
    if dataclasses.is_dataclass(kind):
        return f"dataclass, {len(dataclasses.fields(kind))} fields"
    model_fields = getattr(kind, "model_fields", None)
    if isinstance(model_fields, dict) and hasattr(kind, "model_dump"):
        return f"pydantic model, {len(model_fields)} fields"
    return None


def _array_like(value: Any, name: str) -> str:
    """A pandas or numpy object, by its shape and dtype (attributes these libraries compute cheaply)."""
    try:
        if name == "DataFrame":
            rows, cols = value.shape
            return f"DataFrame {rows:,} x {cols:,}"
        if name == "Series":
            label = f" {value.name!r}" if isinstance(value.name, str) else ""
            return f"Series{label} of {len(value):,} {value.dtype}"
        if name == "ndarray":
            return f"ndarray {tuple(value.shape)} {value.dtype}"
        shape = getattr(value, "shape", None)
        if shape == ():  # a numpy scalar: its value
            return f"{name} {value.item()!r}"[:60]
        if isinstance(shape, tuple):
            return f"{name} {shape}"
    except Exception:  # an object of these libraries that does not have what it seemed to
        pass
    return f"{name} object"


def short(value: Any, width: int = 200) -> str:
    """One value in at most ``width`` characters: a repr for small plain values, else its summary."""
    kind = type(value)
    if kind is str and len(value) > width:
        return plain(repr(value[:width])) + f"… [{len(value):,} characters]"
    if kind in SHORT_SCALARS:
        return clipped_repr(value, width)
    if kind in (list, tuple, set, frozenset, dict) and len(value) <= 8 and _all_plain(value):
        return clipped_repr(value, width)
    module = getattr(kind, "__module__", "") or ""
    if kind in (list, tuple, set, frozenset, dict, bytearray) or module.startswith(("pandas", "numpy")):
        return summary(value)
    if isinstance(value, type) or callable(value):
        return summary(value)
    return clipped_repr(value, width, seconds=0.1)


def _all_plain(value: Any) -> bool:
    items = list(value.items()) if isinstance(value, dict) else list(value)
    flat = [x for kv in items for x in kv] if isinstance(value, dict) else items
    return all(type(x) in SHORT_SCALARS and (type(x) is not str or len(x) <= 60) for x in flat)
