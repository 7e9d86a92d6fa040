"""The prompt of the UnTooled layer: its template file, and tools and calls as the model reads them.

The template (``prompt.txt`` beside this module) has ``[[name]]`` sections with
``$placeholders``; :class:`PromptTemplate` reads it. The helpers render a tool's parameters
(as a schema, and one line per parameter) and a call as the model is asked to write it.

>>> call_json("add", {"a": 2, "b": 3})
'{"name": "add", "arguments": {"a": 2, "b": 3}}'
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

TEMPLATE_FILE = Path(__file__).with_name("prompt.txt")


class PromptTemplate:
    """The sections of a prompt template file (``[[name]]`` headers, ``$placeholders``)."""

    def __init__(self, text: str) -> None:
        self.sections: dict[str, Template] = {}
        parts = re.split(r"^\[\[(\w+)\]\]\n", text, flags=re.M)
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            self.sections[name] = Template(body.rstrip("\n"))
        missing = {"system", "tool", "example", "results", "result", "error_result"} - self.sections.keys()
        if missing:
            raise ValueError(f"prompt template lacks sections {sorted(missing)}")

    @classmethod
    def from_file(cls, path: str | Path) -> PromptTemplate:
        return cls(Path(path).read_text(encoding="utf-8"))

    def fill(self, section: str, **values: Any) -> str:
        tpl = self.sections.get(section)
        return tpl.substitute(values) if tpl is not None else ""


@cache
def default_template() -> PromptTemplate:
    return PromptTemplate.from_file(TEMPLATE_FILE)


def call_json(name: str, arguments: Any) -> str:
    """A call as the model is asked to write it (name first, ``json.dumps`` spacing)."""
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def render_parameters(schema: dict[str, Any]) -> str:
    """A tool's parameter schema for the prompt: types, enums, ``required``; no noise keys."""
    return json.dumps(_trim(schema), ensure_ascii=False)


def render_arguments(schema: dict[str, Any], indent: str = "- ") -> str:
    """A tool's parameters as one line each: name, type (or enum values), required, description.

    >>> print(render_arguments({"type": "object", "required": ["city"], "properties": {
    ...     "city": {"type": "string", "description": "City name."},
    ...     "unit": {"enum": ["c", "f"], "default": "c"}}}))
    - city (string, required): City name.
    - unit ("c" or "f", optional, default "c")
    """
    properties = schema.get("properties") or {}
    if not properties:
        return f"{indent}(none)"
    required = set(schema.get("required") or ())
    lines = []
    for name, spec in properties.items():
        notes = [type_name(spec), "required" if name in required else "optional"]
        if isinstance(spec, dict) and "default" in spec:
            notes.append(f"default {json.dumps(spec['default'], ensure_ascii=False)}")
        description = spec.get("description", "").strip() if isinstance(spec, dict) else ""
        lines.append(f"{indent}{name} ({', '.join(notes)})" + (f": {description}" if description else ""))
    return "\n".join(lines)


def type_name(spec: Any) -> str:
    """A short type for the prompt: ``number``, ``array of string``, ``"a" or "b"``.

    >>> type_name({"type": "array", "items": {"type": "integer"}}), type_name({"enum": ["x", "y"]})
    ('array of integer', '"x" or "y"')
    >>> type_name({"type": "object", "properties": {"x": {"type": "number"}}})
    'object {x: number}'
    >>> type_name({"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]})
    'date string or null'

    """
    if not isinstance(spec, dict):
        return "any"
    if "enum" in spec:
        return " or ".join(json.dumps(v, ensure_ascii=False) for v in spec["enum"])
    kind = spec.get("type")
    if isinstance(kind, list):
        return " or ".join(map(str, kind))
    if kind == "array":
        return f"array of {type_name(spec.get('items') or {})}" if spec.get("items") else "array"
    if kind == "object" and spec.get("properties"):  # nested fields stay visible
        fields = ", ".join(f"{k}: {type_name(v)}" for k, v in spec["properties"].items())
        return f"object {{{fields}}}"
    if kind is None and "anyOf" in spec:
        return " or ".join(type_name(s) for s in spec["anyOf"])
    if kind == "string" and isinstance(spec.get("format"), str):  # "date string", "uri string"
        return f"{spec['format']} string"
    return str(kind or "any")


def _trim(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _trim(v) for k, v in schema.items() if k not in ("additionalProperties", "title", "$schema")}
    if isinstance(schema, list):
        return [_trim(v) for v in schema]
    return schema
