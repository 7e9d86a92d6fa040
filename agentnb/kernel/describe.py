"""``describe``: what a person would print to understand a value, bounded in size and time.

Strings, bytes, numbers, lists, tuples, sets, dicts, dataclasses and pydantic models are
described here; DataFrames, Series and numpy arrays in :mod:`agentnb.kernel.frames` (imported
only for them); any other object by its type and a clipped, time-bounded ``repr``.

>>> print(describe({"lr": 0.1, "layers": [64, 64]}, "cfg"))
cfg: dict of 2 str -> float, list
  'lr': 0.1
  'layers': [64, 64]
>>> print(describe("line one\\nline \\x1b[31mtwo", "text"))
text: str of 22 characters, 2 lines
line one
line \\x1b[31mtwo
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

from agentnb.kernel.bounded import TooSlow, clip, clipped_repr, plain, within
from agentnb.kernel.summary import SHORT_SCALARS, short, summary, type_name

#: Characters of a description (the model reads at most this much of one value).
MAX_CHARS = 8_000
#: Characters of a string's text shown.
TEXT_CHARS = 2_000
#: Elements of a list, or items of a dict, shown.
ITEMS = 20


def describe(value: Any, name: str) -> str:
    """The description of ``value`` (the variable or path ``name``), at most :data:`MAX_CHARS`."""
    module = getattr(type(value), "__module__", "") or ""
    if module.startswith(("pandas", "numpy")):
        from agentnb.kernel.frames import describe_array_like

        text = describe_array_like(value, name)
    else:
        lines = value.count("\n") + 1 if type(value) is str else 1
        text = f"{name}: {summary(value)}" + (f", {lines:,} lines" if lines > 1 else "") + "\n" + _body(value)
    return clip(text.rstrip("\n"), MAX_CHARS)


def _body(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _text(value)
    if kind in (list, tuple):
        return "".join(f"  [{i}] {short(v)}\n" for i, v in enumerate(value[:ITEMS])) + _more(len(value))
    if kind in (set, frozenset):
        items = [v for _, v in zip(range(ITEMS), value, strict=False)]
        return "".join(f"  {short(v)}\n" for v in items) + _more(len(value))
    if kind is dict:
        items = [kv for _, kv in zip(range(ITEMS), value.items(), strict=False)]
        return "".join(f"  {short(k, 60)}: {short(v)}\n" for k, v in items) + _more(len(value))
    if kind in SHORT_SCALARS or kind is bytearray:
        return clipped_repr(value, TEXT_CHARS) + "\n"
    fields = _fields(value)
    if fields is not None:
        return fields
    if isinstance(value, type) or inspect.isroutine(value):
        return _callable(value)
    return f"repr: {clipped_repr(value, TEXT_CHARS)}\n"


def _text(value: str) -> str:
    shown = plain(value[:TEXT_CHARS])
    more = f"\n[… {len(value) - TEXT_CHARS:,} more characters]" if len(value) > TEXT_CHARS else ""
    return shown + more + "\n"


def _more(total: int) -> str:
    return f"  … and {total - ITEMS:,} more\n" if total > ITEMS else ""


def _fields(value: Any) -> str | None:
    """A dataclass's or a pydantic model's fields: annotation and value, read from ``__dict__``."""
    kind = type(value)
    if dataclasses.is_dataclass(kind):
        names = [(f.name, f.type) for f in dataclasses.fields(kind)]
    else:
        model_fields = getattr(kind, "model_fields", None)
        if not (isinstance(model_fields, dict) and hasattr(kind, "model_dump")):
            return None
        names = [(n, getattr(f, "annotation", "")) for n, f in model_fields.items()]
    stored = getattr(value, "__dict__", {})
    lines = []
    for field, annotation in names[:ITEMS]:
        hint = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None) or str(annotation)
        shown = short(stored[field]) if field in stored else "(not set)"
        lines.append(f"  {field}: {plain(hint)[:60]} = {shown}\n")
    return "".join(lines) + _more(len(names))


def _callable(value: Any) -> str:
    """A function's or a class's signature and the first line of its docstring."""
    try:
        signature = within(lambda: str(inspect.signature(value)), 0.2)
    except (TooSlow, Exception):  # a builtin without one, or a __signature__ that fails
        signature = "(...)"
    doc = inspect.getdoc(value) if isinstance(value, type) or inspect.isroutine(value) else None
    first = plain(doc.strip().splitlines()[0])[:200] if doc and doc.strip() else "(no docstring)"
    return f"  {plain(type_name(value))}{clip(plain(signature), 300)}\n  {first}\n"
