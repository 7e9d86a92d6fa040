"""JSON Schema from Python type hints and docstrings (used by :mod:`agentnb.tools.definition`).

Every problem found is collected into a list instead of raised one at a time, so a bad tool
definition is reported in one error.

>>> from typing import Literal
>>> schema_for(Literal["c", "f"], [], "unit")
{'type': 'string', 'enum': ['c', 'f']}
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, get_args, get_origin, get_type_hints

from agentnb.tools.docstrings import parse_docstring
from agentnb.tools.schema_values import json_default, jsonable, refused_default, textual, uses_pydantic

try:  # typing_extensions TypedDicts are also recognised when present
    from typing import is_typeddict
except ImportError:  # pragma: no cover - Python < 3.10
    is_typeddict = None  # type: ignore[assignment]

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARRAYS = (list, tuple, set, frozenset, Sequence, typing.List, typing.Tuple, typing.Set)  # noqa: UP006
_NONE = type(None)


def schema_for(tp: Any, problems: list[str], where: str) -> dict[str, Any]:
    """The JSON Schema of type ``tp``; unsupported parts are appended to ``problems``."""
    if tp is Any or tp is object:
        return {}
    if tp is _NONE or tp is None:
        return {"type": "null"}
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    origin = get_origin(tp)
    args = get_args(tp)
    if uses_pydantic(tp):  # models (nested anywhere in them) and Annotated[..., Field(...)]
        return pydantic_schema(tp, problems, where)
    if origin is typing.Annotated:
        schema = schema_for(args[0], problems, where)
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        return {**schema, "description": text} if text else schema
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([m.value for m in tp])
    if origin in (typing.Union, types.UnionType):
        return _union_schema(args, problems, where)
    if origin in _ARRAYS or tp in _ARRAYS:
        return _array_schema(origin or tp, args, problems, where)
    if origin in (dict, Mapping, typing.Dict) or tp in (dict, typing.Dict):  # noqa: UP006
        return _dict_schema(args, problems, where)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass_schema(tp, problems, where)
    written = textual(tp)
    if written is not None:
        return dict(written[1])
    if is_typeddict is not None and is_typeddict(tp):
        return _typeddict_schema(tp, problems, where)
    problems.append(f"{where}: unsupported type {_type_name(tp)}")
    return {}


_META = ("description", "default", "title", "examples")


def accepts_null(schema: Mapping[str, Any]) -> bool:
    """Whether ``null`` is valid under ``schema``.

    >>> accepts_null({"type": ["integer", "null"]}), accepts_null({"type": "object"})
    (True, False)
    """
    import jsonschema  # only asked about None defaults, by code that already loaded it

    try:
        return bool(jsonschema.Draft202012Validator(dict(schema)).is_valid(None))
    except Exception:  # an unresolvable reference: say no, and widen
        return False


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` widened to accept ``null``, for a ``None`` default on a non-Optional type.

    ``def f(meta: dict[str, int] = None)`` means "a dict, or nothing": its schema must accept
    its own default (as ``Optional`` would), or a model that copies the default is refused.

    >>> nullable({"type": "integer", "default": None})
    {'type': ['integer', 'null'], 'default': None}
    >>> nullable({"type": "object", "additionalProperties": {"type": "integer"}})
    {'anyOf': [{'type': 'object', 'additionalProperties': {'type': 'integer'}}, {'type': 'null'}]}
    """
    if accepts_null(schema):
        return schema
    core = {k: v for k, v in schema.items() if k not in _META}
    meta = {k: v for k, v in schema.items() if k in _META}
    kind = core.get("type")
    if set(core) == {"type"} and isinstance(kind, (str, list)):
        return {"type": [*([kind] if isinstance(kind, str) else kind), "null"], **meta}
    return {"anyOf": [core, {"type": "null"}], **meta}


def drop_refused_none_defaults(schema: Any) -> Any:
    """Every property schema (at any depth) without a ``None`` default its type refuses.

    pydantic describes ``x: int = None`` in a model as ``{"type": "integer", "default": null}``
    and refuses an explicit ``null`` for it: the schema must not offer that default (the
    field stays optional: pydantic fills it when it is omitted).
    """
    if isinstance(schema, list):
        return [drop_refused_none_defaults(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: drop_refused_none_defaults(v) for k, v in schema.items()}
    props = out.get("properties")
    if isinstance(props, dict):
        out["properties"] = {
            k: {n: w for n, w in v.items() if n != "default"}
            if isinstance(v, dict) and "default" in v and v["default"] is None and not accepts_null(v)
            else v
            for k, v in props.items()
        }
    return out


def pydantic_schema(tp: Any, problems: list[str], where: str) -> dict[str, Any]:
    """The JSON Schema pydantic gives ``tp``, references inlined, titles dropped."""
    from pydantic import TypeAdapter

    try:
        schema = TypeAdapter(tp).json_schema()
    except Exception as exc:
        problems.append(f"{where}: pydantic cannot describe {_type_name(tp)} ({exc})")
        return {}
    return drop_refused_none_defaults(inline_refs(schema))  # type: ignore[no-any-return]


def inline_refs(schema: dict[str, Any], max_depth: int = 32) -> dict[str, Any]:
    """``schema`` with local ``$ref`` s replaced by their definitions and titles dropped.

    Weak models and grammar compilers read flat schemas best. A recursive model cannot be
    flattened: its references are kept, with its ``$defs``.

    >>> inline_refs({"$defs": {"P": {"title": "P", "type": "integer"}}, "properties": {"p": {"$ref": "#/$defs/P"}}})
    {'properties': {'p': {'type': 'integer'}}}
    """
    defs = schema.get("$defs", {})
    recursive = False

    def walk(node: Any, depth: int, in_props: bool = False) -> Any:
        nonlocal recursive
        if isinstance(node, list):
            return [walk(v, depth) for v in node]
        if not isinstance(node, dict):
            return node
        if in_props:  # keys are property names, not keywords
            return {k: walk(v, depth) for k, v in node.items()}
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref.rsplit("/", 1)[1])
            if target is None or depth >= max_depth:
                recursive = True
                return node
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**target, **rest}, depth + 1)
        out = {}
        for k, v in node.items():
            if k in ("$defs", "title"):
                continue
            out[k] = walk(v, depth, in_props=k in ("properties", "patternProperties", "$defs"))
        return out

    flat = walk(copy.deepcopy(schema), 0)
    if recursive and defs:
        return {**flat, "$defs": defs}
    return flat  # type: ignore[no-any-return]


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds = {type(v) for v in values}
    schema: dict[str, Any] = {}
    if len(kinds) == 1 and (t := next(iter(kinds))) in _SIMPLE:
        schema["type"] = _SIMPLE[t]
    schema["enum"] = values
    return schema


def _union_schema(args: tuple[Any, ...], problems: list[str], where: str) -> dict[str, Any]:
    members = [schema_for(a, problems, where) for a in args]
    # Simple members collapse into {"type": [...]}, which weak models read more easily.
    if all(set(m) == {"type"} and isinstance(m["type"], str) for m in members):
        return {"type": [m["type"] for m in members]}
    return {"anyOf": members}


def _array_schema(origin: Any, args: tuple[Any, ...], problems: list[str], where: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    if origin in (tuple, typing.Tuple) and args and not (len(args) == 2 and args[1] is Ellipsis):  # noqa: UP006
        schema["prefixItems"] = [schema_for(a, problems, f"{where}[{i}]") for i, a in enumerate(args)]
        schema["minItems"] = schema["maxItems"] = len(args)
    elif args:
        schema["items"] = schema_for(args[0], problems, f"{where}[]")
    if origin in (set, frozenset, typing.Set):  # noqa: UP006
        schema["uniqueItems"] = True
    return schema


def _dict_schema(args: tuple[Any, ...], problems: list[str], where: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if args:
        if args[0] is not str:
            problems.append(f"{where}: dict keys must be str in JSON, not {_type_name(args[0])}")
        schema["additionalProperties"] = schema_for(args[1], problems, f"{where}{{}}")
    return schema


def _object_schema(props: dict[str, dict[str, Any]], required: list[str], description: str | None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    if description:
        schema["description"] = description
    return schema


def _hints(tp: Any, problems: list[str], where: str) -> dict[str, Any]:
    try:
        return get_type_hints(tp, include_extras=True)
    except Exception as exc:  # unresolvable forward references and the like
        problems.append(f"{where}: cannot resolve type hints ({exc})")
        return {}


def _dataclass_schema(tp: type, problems: list[str], where: str) -> dict[str, Any]:
    hints = _hints(tp, problems, where)
    props: dict[str, dict[str, Any]] = {}
    required: list[str] = []
    docs = parse_docstring(tp.__doc__ or "")[1] if tp.__doc__ else {}
    for f in dataclasses.fields(tp):
        if not f.init:
            continue
        prop = schema_for(hints.get(f.name, Any), problems, f"{where}.{f.name}")
        if f.name in docs:
            prop = {**prop, "description": docs[f.name]}
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
        elif f.default is not dataclasses.MISSING and jsonable(f.default):
            prop = {**prop, "default": json_default(f.default)}
            if f.default is None:
                prop = nullable(prop)
            refused = refused_default(prop)
            if refused is not None:
                problems.append(f"{where}.{f.name}: its default does not fit its type ({refused})")
        props[f.name] = prop
    return _object_schema(props, required, _summary(tp))


def _typeddict_schema(tp: type, problems: list[str], where: str) -> dict[str, Any]:
    hints = _hints(tp, problems, where)
    props = {k: schema_for(v, problems, f"{where}.{k}") for k, v in hints.items()}
    required = [k for k in hints if k in getattr(tp, "__required_keys__", hints)]
    return _object_schema(props, required, _summary(tp))


def _summary(tp: type) -> str | None:
    doc = tp.__doc__
    if not doc or doc.startswith(tp.__name__ + "("):  # dataclasses' generated docstring
        return None
    return parse_docstring(doc)[0] or None
