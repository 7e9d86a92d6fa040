"""Reading a typed Python function as a tool: its parameters' JSON Schema, converters and defaults.

>>> def add(a: int, b: int = 2) -> int:
...     '''Add two integers.
...
...     Args:
...         a: the first
...     '''
...     return a + b
>>> problems: list[str] = []
>>> sig = read_signature(add, problems)
>>> sig.name, sig.summary, sig.schema["required"], sig.schema["properties"]["a"], problems
('add', 'Add two integers.', ['a'], {'type': 'integer', 'description': 'the first'}, [])
>>> signature_text("add", sig.schema, sig.summary)
'add(a: integer, b: integer = 2): Add two integers.'
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentnb.tools.context import ToolContext
from agentnb.tools.docstrings import parse_docstring
from agentnb.tools.kinds import callable_parts
from agentnb.tools.schema import nullable, schema_for
from agentnb.tools.schema_values import converter_for, json_default, jsonable, none_passes, refused_default

#: What to do about a default its type refuses.
_FIT = "annotate the type the default has (a union, if both are meant), or change the default"


@dataclass(slots=True)
class Signature:
    """What a function says about itself as a tool (see :func:`read_signature`)."""

    name: str
    summary: str
    schema: dict[str, Any]
    converters: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    #: Python defaults to pass for omitted arguments (a ``Field(...)`` default is not a value).
    fills: dict[str, Any] = field(default_factory=dict)
    #: The parameter annotated ``ToolContext`` (it is not shown to the model).
    context_param: str | None = None


def read_signature(fn: Callable[..., Any], problems: list[str]) -> Signature:
    """The tool ``fn`` describes (functions, methods, partials, callable objects); what cannot
    be described to a model is appended to ``problems``."""
    parts = callable_parts(fn, problems)  # functions, methods, partials, callable objects
    summary, docs = parse_docstring(parts.doc)
    hints = parts.hints
    props: dict[str, Any] = {}
    required: list[str] = []
    converters: dict[str, Callable[[Any], Any]] = {}
    fills: dict[str, Any] = {}
    context_param = None
    for p in parts.parameters:
        tp = hints.get(p.name, inspect.Parameter.empty)
        if tp is ToolContext or tp == "ToolContext":
            context_param = p.name
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            problems.append(f"parameter {p.name}: *args/**kwargs cannot be described to a model")
            continue
        if p.kind is p.POSITIONAL_ONLY:
            problems.append(f"parameter {p.name}: positional-only parameters are not supported")
            continue
        if tp is inspect.Parameter.empty:
            problems.append(f"parameter {p.name}: missing type annotation")
            continue
        default = p.default
        declared = _pydantic_field(default)
        if declared is not None:  # def f(n: int = Field(5, ge=1, description=...))
            tp = typing.Annotated[tp, declared]
            default = p.empty if declared.is_required() else declared.get_default(call_default_factory=True)
            if default is not p.empty:
                fills[p.name] = default
        prop = schema_for(tp, problems, f"parameter {p.name}")
        if docs.get(p.name) and "description" not in prop:
            prop = {**prop, "description": docs[p.name]}
        if default is p.empty:
            required.append(p.name)
        elif "default" not in prop and jsonable(default):
            prop = {**prop, "default": json_default(default)}
        if default is None:  # `meta: dict = None` means "or nothing": accept the default
            prop = nullable(prop)
        refused = refused_default(prop)
        if refused is not None:  # `name: str = 5`: a model copying the default would be refused
            problems.append(f"parameter {p.name}: its default does not fit its type ({refused}); {_FIT}")
        props[p.name] = prop
        conv = converter_for(tp)
        if conv is not None:
            converters[p.name] = none_passes(conv) if default is None else conv
    for documented in docs:
        if documented not in props and documented != context_param:
            problems.append(f"docstring documents {documented!r}, which is not a parameter")
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return Signature(str(parts.name), summary, schema, converters, fills, context_param)


def signature_text(name: str, parameters: Mapping[str, Any], description: str | None) -> str:
    """``name(param: type = default, ...)`` and the description's first line."""
    props = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    params = []
    for param_name, spec in props.items():
        kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
        kind = "|".join(kind) if isinstance(kind, list) else kind
        if isinstance(spec, dict) and "enum" in spec:
            kind = "|".join(repr(v) for v in spec["enum"])
        param = f"{param_name}: {kind}"
        if param_name not in required:
            has = isinstance(spec, dict) and "default" in spec
            param += f" = {spec['default']!r}" if has else " = ..."
        params.append(param)
    line = (description or "").strip().splitlines()[0] if (description or "").strip() else ""
    line = line if len(line) <= 80 else line[:79] + "…"
    return f"{name}({', '.join(params)})" + (f": {line}" if line else "")


def _pydantic_field(default: Any) -> Any:
    """``default`` when it is a pydantic ``Field(...)`` (pydantic is not imported to find out)."""
    # ``pydantic.fields`` itself: ``import pydantic`` alone does not load it (its attributes load
    # lazily), and a Field(...) default can only exist once it is loaded.
    fields = sys.modules.get("pydantic.fields")
    if fields is not None and isinstance(default, fields.FieldInfo):
        return default
    return None
