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

from collections.abc import Sequence
from typing import Any

from agentnb.providers.hf.optional import named_optionals
from agentnb.providers.hf.steer import numeric_forms
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
