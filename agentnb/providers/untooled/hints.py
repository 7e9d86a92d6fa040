"""Request-aware help for a server's constrained call, where the in-process route steers tokens.

The in-process backend nudges a call toward the user's own values as it decodes it
(:mod:`agentnb.providers.hf.steer`, :mod:`agentnb.providers.hf.optional`). A server only takes
a schema and a prompt, so the server route says what it can there:

* **Named optional parameters become required** in the schema sent for that request
  (:func:`require_named`): when the request names an optional parameter ("for 2 passengers",
  "compounded monthly") or one of its enum values ("business class"), a small model otherwise
  closes the call without it. The detection is the in-process one
  (:func:`~agentnb.providers.hf.optional.named_optionals`). Only ``required`` grows: every value
  the tool accepts for that parameter is still allowed, and the call is validated against the
  tool's own schema as always.

Numbers were tried too and did not help SmolLM2-135M behind llama-cpp-python: with the request
shown again in plain digits ("$250000" for "$250k") it still wrote ``250``, and asked once more
about a number copied short, it wrote the same call again (docs/native.md).

>>> schema = {"type": "object", "required": ["origin"], "properties": {"origin": {"type": "string"},
...     "passengers": {"type": "integer"}, "pets": {"type": "boolean"}}}
>>> require_named(schema, "From Oslo for 2 passengers")["required"]
['origin', 'passengers']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.providers.hf.optional import named_optionals
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
