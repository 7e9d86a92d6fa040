"""Envelope schemas rewritten into forms a server's grammar converter does enforce.

A server turns the envelope's JSON Schema into a grammar, and its converter skips keywords it
does not know: the reply then parses but may still break the tool's schema. What the
converters of the llama.cpp family skip (read in their sources, checked against
llama-cpp-python 0.3.36):

* llama-cpp-python (``llama_cpp/llama_grammar.py``): ``minimum`` / ``maximum`` /
  ``exclusiveMinimum`` / ``exclusiveMaximum`` / ``multipleOf`` on integers and numbers,
  ``uniqueItems``, ``not``, ``if``/``then``, ``minProperties``, string ``format`` other than
  date, time, date-time and uuid, ``minLength``/``maxLength`` beside a ``pattern``, and every
  keyword beside a ``type`` list (``{"type": ["string", "null"], "maxLength": 3}`` becomes any
  string or null);
* llama.cpp's own ``llama-server`` (``common/json-schema-to-grammar.cpp``) enforces integer
  bounds and keeps the keywords beside a ``type`` list, but not bounds on numbers,
  ``multipleOf``, ``uniqueItems`` or ``not``.

Both enforce ``enum``, ``const``, ``anyOf``, ``required``, ``additionalProperties``,
``minItems``/``maxItems`` and ``minLength``/``maxLength``. :func:`enforceable` rewrites what can
be rewritten *exactly* into those (so the rewritten schema accepts the same values):

* an integer with both bounds and at most :data:`MAX_ENUM` values becomes an ``enum`` of them;
* a ``type`` list with other keywords becomes an ``anyOf`` with one branch per type.

What stays unenforced (a bound on a number, ``minimum`` alone) is checked after the reply:
see :mod:`agentnb.providers.untooled.repair`. When a call breaks such a bound, the one re-ask
narrows that argument with :func:`narrowed`: an ``enum`` of values that all validate (a grid
inside the bounds), so the model's second call can no longer break it.

>>> enforceable({"type": "integer", "minimum": 1, "maximum": 3})
{'type': 'integer', 'minimum': 1, 'maximum': 3, 'enum': [1, 2, 3]}
>>> enforceable({"type": ["string", "null"], "maxLength": 3})
{'anyOf': [{'type': 'string', 'maxLength': 3}, {'type': 'null', 'maxLength': 3}]}
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

#: Most integers an integer range is spelled out as an ``enum`` for.
MAX_ENUM = 64
#: Most values a re-ask offers for one argument whose bounds the server did not enforce.
MAX_GRID = 201
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains")
_ANNOTATIONS = frozenset({"type", "description", "title", "default", "examples"})


def enforceable(schema: Any) -> Any:
    """A copy of ``schema`` that accepts the same values, in forms grammar converters enforce."""
    if isinstance(schema, list):
        return [enforceable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SUBSCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [enforceable(s) for s in out[key]]
    for key in _SUBSCHEMA:
        if isinstance(out.get(key), dict):
            out[key] = enforceable(out[key])
    for key in ("properties", "$defs", "definitions"):
        if isinstance(out.get(key), dict):
            out[key] = {k: enforceable(v) for k, v in out[key].items()}
    kinds = out.get("type")
    if isinstance(kinds, list) and len(kinds) > 1 and set(out) - _ANNOTATIONS and "anyOf" not in out:
        rest = {k: v for k, v in out.items() if k not in ("type", "description", "title", "default", "examples")}
        branches = [enforceable({"type": kind, **rest}) for kind in kinds]
        head = {k: v for k, v in out.items() if k in ("description", "title", "default")}
        return {**head, "anyOf": branches}
    if kinds == "integer" or kinds == ["integer"]:
        values = integer_values(out)
        if values is not None:
            out["enum"] = values
    return out


def integer_values(schema: dict[str, Any]) -> list[int] | None:
    """Every integer ``schema`` allows, when its bounds leave at most :data:`MAX_ENUM` of them.

    >>> integer_values({"type": "integer", "exclusiveMinimum": 0, "maximum": 10, "multipleOf": 5})
    [5, 10]
    >>> integer_values({"type": "integer", "minimum": 0}) is None
    True
    """
    if "enum" in schema or "const" in schema:
        return None
    low, high = _bounds(schema)
    if low is None or high is None or high < low or high - low + 1 > MAX_ENUM:
        return None
    step = schema.get("multipleOf")
    if step is not None and not (_is_number(step) and step > 0):
        return None
    values = [v for v in range(low, high + 1) if step is None or _multiple(v, step)]
    return values or None


def _bounds(schema: dict[str, Any]) -> tuple[int | None, int | None]:
    """The least and greatest integers the numeric bounds of ``schema`` allow (None: unbounded)."""
    lows: list[int] = []
    highs: list[int] = []
    lo, hi = schema.get("minimum"), schema.get("maximum")
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if _is_number(lo):
        low = math.ceil(lo)
        lows.append(low + 1 if xlo is True and low == lo else low)  # draft 4: a boolean beside minimum
    if _is_number(xlo):
        lows.append(math.floor(xlo) + 1)
    if _is_number(hi):
        high = math.floor(hi)
        highs.append(high - 1 if xhi is True and high == hi else high)
    if _is_number(xhi):
        highs.append(math.ceil(xhi) - 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _multiple(value: int, step: float) -> bool:
    quotient = value / step
    return abs(quotient - round(quotient)) < 1e-9


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def narrowed(schema: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """An ``enum`` of values ``schema`` accepts (a subset), and a note saying which; or None.

    For an argument that broke a numeric bound the server did not enforce: integers in the
    range (from the bound, :data:`MAX_ENUM` of them, when one side is open), numbers on the
    finest decimal grid of at most :data:`MAX_GRID` points. Every value offered validates;
    values between the grid's points are no longer possible, which the note says.

    >>> narrowed({"type": "number", "minimum": 0, "maximum": 1})[0]["enum"][:3]
    [0, 0.01, 0.02]
    >>> narrowed({"type": "integer", "minimum": 1})[1]
    'integers 1 to 64'
    >>> narrowed({"type": "string"}) is None
    True
    """
    kind = schema.get("type")
    if kind not in ("integer", "number") or "enum" in schema or "const" in schema:
        return None
    low, high = _bounds(schema)
    if low is None and high is None:
        return None
    if kind == "integer" or schema.get("multipleOf") is not None:
        low = high - MAX_ENUM + 1 if low is None else low  # type: ignore[operator]
        high = low + MAX_ENUM - 1 if high is None else min(high, low + MAX_ENUM - 1)
        values: list[Any] = [v for v in range(low, high + 1) if _valid(schema, v)]
        note = f"integers {values[0]} to {values[-1]}" if values else ""
    else:
        values, note = _grid(schema)
    if not values:
        return None
    head = {k: v for k, v in schema.items() if k in ("description", "title")}
    return {**head, "enum": values}, note


def _grid(schema: dict[str, Any]) -> tuple[list[Any], str]:
    lo, hi = (
        schema.get("minimum", schema.get("exclusiveMinimum")),
        schema.get("maximum", schema.get("exclusiveMaximum")),
    )
    lo = lo if _is_number(lo) else None
    hi = hi if _is_number(hi) else None
    if lo is None or hi is None:  # one side open: a window of whole numbers from the bound
        start = lo if lo is not None else hi - MAX_ENUM + 1  # type: ignore[operator]
        base = math.ceil(start)
        values = [v for v in range(base, base + MAX_ENUM) if _valid(schema, v)]
        return values, f"whole numbers {values[0]} to {values[-1]}" if values else ""
    step_exp = 0
    while (hi - lo) * 10 ** (step_exp + 1) + 1 <= MAX_GRID and step_exp < 6:
        step_exp += 1
    while step_exp > -12 and (hi - lo) * 10**step_exp + 1 > MAX_GRID:
        step_exp -= 1
    scale = 10**step_exp
    first, last = math.ceil(lo * scale), math.floor(hi * scale)
    values = []
    for k in range(first, last + 1):
        v = round(k / scale, max(step_exp, 0))
        value: Any = int(v) if float(v).is_integer() else v
        if _valid(schema, value):
            values.append(value)
    step = f"{10.0**-step_exp:g}"
    return values, f"numbers {values[0]} to {values[-1]} in steps of {step}" if values else ""


def _valid(schema: dict[str, Any], value: Any) -> bool:
    import jsonschema

    return bool(jsonschema.validators.validator_for(schema)(schema).is_valid(value))
