"""A compiled fast path for validating tool arguments against common schema shapes.

``jsonschema`` stays the authority (and writes the error messages); this module compiles a
schema with ``fastjsonschema`` into plain Python code when the schema uses only keywords on
which both libraries agree, so the common case (valid arguments) costs about a microsecond
instead of fifteen. When the fast check fails, the caller asks ``jsonschema`` for the errors,
so a disagreement can only cost time, never let invalid arguments through: keywords where
``fastjsonschema`` accepts what ``jsonschema`` rejects (``multipleOf`` on floats,
``uniqueItems`` with ``1`` and ``True``) are not compiled.

>>> check = fast_validator({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
>>> check({"a": 1}), check({"a": "1"}), check({})
(True, False, False)
>>> fast_validator({"type": "object", "patternProperties": {"^x": {}}}) is None
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema

_SUBSCHEMA = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("anyOf", "allOf", "oneOf")
_PLAIN = frozenset(
    {
        "type",
        "required",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "minProperties",
        "maxProperties",
        "description",
        "title",
        "default",
        "examples",
        "format",
    }
)


def compilable(schema: Any, depth: int = 0) -> bool:
    """True when ``schema`` uses only keywords the fast path handles exactly like jsonschema."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > 32:
        return False
    for key, value in schema.items():
        if key in _PLAIN:
            if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                return False
            continue
        if key in _SUBSCHEMA:
            if not compilable(value, depth + 1):
                return False
        elif key == "properties":
            if not isinstance(value, dict) or not all(compilable(v, depth + 1) for v in value.values()):
                return False
        elif key in _SCHEMA_LISTS:
            if not isinstance(value, list) or not all(compilable(v, depth + 1) for v in value):
                return False
        else:  # $ref, $schema, patternProperties, multipleOf, uniqueItems, if/then, ...
            return False
    return True


def fast_validator(schema: dict[str, Any]) -> Callable[[Any], bool] | None:
    """A function ``value -> bool`` (True: valid), or None when the schema is not compilable."""
    if not compilable(schema):
        return None
    try:
        import fastjsonschema
    except ImportError:  # optional speed-up: jsonschema alone is correct, only slower
        return None
    try:
        compiled = fastjsonschema.compile(schema, use_default=False, use_formats=False, detailed_exceptions=False)
    except Exception:
        return None
    failure = fastjsonschema.JsonSchemaException

    def check(value: Any) -> bool:
        try:
            compiled(value)
        except failure:
            return False
        except Exception:  # odd Python values: let jsonschema decide
            return False
        return True

    return check


def conversion_errors(name: str, exc: Exception) -> list[str]:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # a pydantic ValidationError: one line per problem
        try:
            return [f"{'.'.join(str(p) for p in (name, *e['loc']))}: {e['msg']}" for e in errors()]
        except Exception:
            pass
    return [f"{name}: {exc}"]


def describe_error(error: jsonschema.ValidationError) -> str:
    if error.context and error.validator in ("anyOf", "oneOf"):
        # "not valid under any of the given schemas" tells the model nothing: name the closest
        # branch's problem (an Optional[Model] with one bad field says which field).
        # "not null" says nothing either; a wrong type deeper inside a branch does.
        near = [c for c in error.context if c.validator != "type" or c.relative_path]
        if near:
            error = max(near, key=lambda c: len(c.absolute_path))
    path = ".".join(str(p) for p in error.absolute_path)
    return f"{path}: {error.message}" if path else error.message
