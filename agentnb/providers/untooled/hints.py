"""Request-aware help for a call constrained by a server, where the in-process route steers tokens.

The in-process backend nudges a call toward the user's own values as it decodes it
(:mod:`agentnb.providers.hf.steer`, :mod:`agentnb.providers.hf.optional`). A server only takes
a schema and a prompt, so the server route says the same things there:

* **Named optional parameters become required** in the schema sent for that request
  (:func:`require_named`): when the request names an optional parameter ("for 2 passengers",
  "compounded monthly") or one of its enum values ("business class"), a small model otherwise
  closes the call without it. The detection is the in-process one
  (:func:`~agentnb.providers.hf.optional.named_optionals`). Only ``required`` grows: every value
  the tool accepts for that parameter is still allowed, and the call is validated against the
  tool's own schema as always.
* **Numbers written out** (:func:`plain_numbers`): a JSON number cannot hold "$10,000" or
  "250k", so a model copying it writes ``10`` or ``250`` and the grammar ends the number there.
  When the request holds such numbers, UnTooled (with ``value_hints``) adds the request once
  more with them as plain digits, under the request itself, for the model to copy from.

* **A number copied short is asked for again** (:func:`short_numbers`): a value whose digits
  begin a number the request writes with separators or a scale ("$2,500" read as ``250``,
  "$250k" as ``250``), and that the request does not hold on its own, is reported back
  to the model once, with the number as written and in plain digits
  (:mod:`agentnb.providers.untooled.repair`). The model writes the new call; agentnb changes no
  value itself.

>>> plain_numbers("Monthly payment on a $250k mortgage at 6.5% over 30 years?")
'Monthly payment on a $250000 mortgage at 6.5% over 30 years?'
>>> plain_numbers("Bill is 64 dollars") is None
True
>>> schema = {"type": "object", "required": ["origin"], "properties": {"origin": {"type": "string"},
...     "passengers": {"type": "integer"}, "pets": {"type": "boolean"}}}
>>> require_named(schema, "From Oslo for 2 passengers")["required"]
['origin', 'passengers']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from agentnb.providers.hf.optional import named_optionals
from agentnb.providers.hf.steer import _GROUPED, _SCALED, numeric_forms
from agentnb.tools import Tool


def require_named(schema: dict[str, Any], query: str) -> dict[str, Any]:
    """``schema`` with the optional parameters ``query`` names added to ``required``."""
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        return schema
    named = named_optionals(schema, query)
    if not named:
        return schema
    return {**schema, "required": [*(schema.get("required") or ()), *named]}


def tighten(tools: Sequence[Tool], query: str) -> tuple[Tool, ...]:
    """``tools`` with :func:`require_named` applied to each one's parameters (the same object
    where nothing changes)."""
    out = []
    for tool in tools:
        schema = require_named(tool.parameters, query)
        out.append(tool if schema is tool.parameters else Tool(tool.name, tool.description, schema))
    return tuple(out)


def plain_numbers(text: str) -> str | None:
    """``text`` with thousands separators dropped and scale words ("250k", "2 million") written
    as digits; None when it has no such number."""
    plain = numeric_forms(text)[-1]
    return plain if plain != text else None


class ShortNumber(NamedTuple):
    """An argument whose number begins a longer number of the request (see :func:`short_numbers`)."""

    name: str
    value: int | float
    written: str  # as the request writes it: "$2,500", "250k"
    plain: int | float  # the same in plain digits: 2500, 250000


#: A number in text, with what may make it longer: thousands groups, decimals, a scale word.
_WRITTEN = re.compile(
    r"\$?\d[\d,]*(?:\.\d+)?(?:\s*(?:thousand|million|billion|trillion)\b|(?:k|K|M|bn|B)\b)?"
)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.]*\d)")


def short_numbers(arguments: Any, query: str) -> list[ShortNumber]:
    """The top-level number arguments that look like a number of ``query`` copied short.

    A value counts when the request writes a number with thousands separators or a scale
    ("$2,500", "250k", "2 million"), the value's digits begin that number's plain digits
    but it is a smaller number, and the value does not occur in the request by itself.

    >>> short_numbers({"cost": 250, "current_value": 3100}, "Bought for $2,500, worth $3,100 now")
    [ShortNumber(name='cost', value=250, written='$2,500', plain=2500)]
    >>> short_numbers({"principal": 10, "years": 10}, "I put $10,000 in for 10 years")  # 10 is there
    []
    >>> short_numbers({"rate": 0.05}, "$10,000 at 5%")
    []
    """
    if not isinstance(arguments, dict):
        return []
    alone = {float(m.group()) for m in _NUMBER.finditer(_GROUPED.sub("", _SCALED.sub(" ", query)))}
    written = []
    for m in _WRITTEN.finditer(query):
        text = m.group().strip().rstrip(",")
        if not (_GROUPED.search(text) or _SCALED.search(text.lstrip("$"))):
            continue
        plain = numeric_forms(text.lstrip("$"))[-1]
        try:
            value = float(plain)
        except ValueError:
            continue
        written.append((text, value))
    out = []
    for name, value in arguments.items():
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0 or float(value) in alone:
            continue
        digits = _digits(value)
        for text, plain in written:
            if value < plain and _digits(plain).startswith(digits):
                out.append(ShortNumber(name, value, text, int(plain) if plain.is_integer() else plain))
                break
    return out


def _digits(value: float) -> str:
    """A number's significant digits: 2.5 -> "25", 2500 -> "25", 0.25 -> "25"."""
    text = f"{value:f}".replace(".", "").strip("0")
    return text or "0"
