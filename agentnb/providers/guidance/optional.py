"""Optional parameters the request names: keep a call open until they are written.

A small model writes a call's required arguments and closes it, leaving out optional ones the
user asked for ("for 2 passengers", "compounded monthly", "using simpson's method"). A
parameter counts as *named* when the request has a word starting like one of the parts of its
name ("passe" of ``passengers``, "compo" of ``compounds_per_year``) or one of its enum values.
While a named one is unwritten, tokens that would close the arguments get a penalty, and
tokens that write its key a bonus. The grammar still decides what is allowed.

>>> schema = {"type": "object", "required": ["origin"], "properties": {"origin": {"type": "string"},
...     "passengers": {"type": "integer"}, "cabin": {"enum": ["economy", "business"]}, "pets": {"type": "boolean"}}}
>>> named_optionals(schema, "From Oslo for 2 passengers, business class")
['passengers', 'cabin']
"""

from __future__ import annotations

import re
from typing import Any

from agentnb.providers.guidance.partial_json import scan
from agentnb.providers.guidance.steer import TokenTable


def _stem(part: str) -> str:
    return part[: max(3, min(5, len(part) - 1))]


def named_optionals(schema: dict[str, Any], source: str) -> list[str]:
    """The optional parameters of ``schema`` that ``source`` (the request) names."""
    text = source.lower()
    required = set(schema.get("required") or ())
    out = []
    for name, spec in (schema.get("properties") or {}).items():
        if name in required or not isinstance(spec, dict):
            continue
        parts = [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name) if len(p) >= 4]
        hits = any(re.search(r"\b" + re.escape(_stem(p.lower())), text) for p in parts)
        values = [v for v in spec.get("enum") or () if isinstance(v, str) and len(v) >= 3]
        hits = hits or any(re.search(r"\b" + re.escape(v.lower()) + r"\b", text) for v in values)
        if hits:
            out.append(name)
    return out


class NamedOptionals:
    """Bonuses that keep a call open while a named optional parameter is unwritten.

    >>> class Tok:
    ...     def batch_decode(self, ids):
    ...         return [["}", "}}", ", ", '"', "pass", "engers", "x"][i[0]] for i in ids]
    >>> n = NamedOptionals(["passengers"], TokenTable(Tok(), 7), 4.0)
    >>> n.bonus('{"name": "f", "arguments": {"origin": "Oslo"')
    {0: -4.0, 1: -4.0}
    >>> n.bonus('{"name": "f", "arguments": {"origin": "Oslo", "')
    {4: 4.0}
    >>> n.bonus('{"name": "f", "arguments": {"origin": "Oslo", "passengers": 2')
    {}
    """

    def __init__(self, names: list[str], table: TokenTable, strength: float) -> None:
        self.names = names
        self.table = table
        self.strength = strength
        self._closers = [i for i, t in enumerate(table.texts) if "}" in t]

    def bonus(self, written: str) -> dict[int, float]:
        state = scan(written)
        if len(state.stack) != 2 or state.stack[0] != "{" or state.stack[1] != "{":
            return {}  # only directly inside "arguments"
        args = written[written.find("{", written.find('"arguments"')) :]
        missing = [n for n in self.names if f'"{n}"' not in args]
        if not missing:
            return {}
        if state.in_string and state.is_key:
            key = written[written.rfind('"') + 1 :]
            rests = [n[len(key) :] + '": ' for n in missing if n.startswith(key) and len(n) > len(key)]
            return dict.fromkeys(self.table.continuing(rests), self.strength)
        return dict.fromkeys(self._closers, -self.strength)  # '"}' closes a string value and the call
