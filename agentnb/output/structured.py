"""Structured output: a run's final answer as a typed value (``Agent(..., output_type=T)``).

:func:`output_spec` turns ``T`` -- a pydantic model, a dataclass, a TypedDict, a ``list[...]``
of those, a plain type (``int``, ``bool``, ...) or a JSON Schema dict -- into an
:class:`OutputSpec`: the JSON Schema the model must write, and a validator. Python types go
through pydantic's ``TypeAdapter`` (its own validation, so a pydantic model's validators run);
a JSON Schema dict through ``jsonschema``. Both are imported on first use only.

Schemas that are not objects are *wrapped* where an API needs an object at the top
(``{"value": <T>}``); :meth:`OutputSpec.check` accepts the wrapped and the bare form.

>>> from dataclasses import dataclass
>>> @dataclass
... class City:
...     name: str
...     population: int
>>> spec = output_spec(City)
>>> spec.check('{"name": "Oslo", "population": 709000}').value
City(name='Oslo', population=709000)
>>> spec.check('{"name": "Oslo"}').errors
('population: Field required',)
>>> output_spec(list[int]).check('{"value": [1, "2"]}').value
[1, 2]
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError
from agentnb.events import OutputValidated
from agentnb.messages import UserMessage
from agentnb.tools.schema import inline_refs

#: The key a non-object value is wrapped in where an API needs a JSON object.
WRAP_KEY = "value"
#: Keywords OpenAI's strict structured outputs accept (anything else: not strict).
_STRICT_KEYS = frozenset(
    [
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "title",
        "$defs",
        "$ref",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "pattern",
        "format",
        "minItems",
        "maxItems",
    ]
)
_FENCE = re.compile(r"^```[\w-]*[ \t]*\n?(.*?)(?:```)?\s*$", re.S)


@dataclass(frozen=True, slots=True)
class OutputCheck:
    """The result of checking one answer: ``value`` (typed) when ``errors`` is empty."""

    value: Any
    data: Any
    errors: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.errors


class OutputSpec:
    """What the final answer must be: a JSON Schema, and how to turn valid JSON into ``T``.

    Attributes:
        output_type: the ``T`` it was made from (a type or a schema dict).
        name: a short name for events and API schema names (``City``, ``list[int]``).
        schema: the JSON Schema of the value, references inlined.
        wrapped: True when ``schema`` is not an object, so APIs get :attr:`wire_schema`.
        wire_schema: an object schema (``schema`` itself, or ``{"value": schema}``).
        strict: the wire schema in OpenAI's strict form, or None when it cannot be strict.
    """

    __slots__ = (
        "output_type",
        "name",
        "schema",
        "wrapped",
        "wire_schema",
        "strict",
        "_adapter",
        "_validator",
        "_convert",
    )

    def __init__(self, output_type: Any) -> None:
        self.output_type = output_type
        self._adapter: Any = None
        self._validator: Any = None
        self._convert: Any = None
        if isinstance(output_type, dict):
            schema = inline_refs(output_type)
            self._validator = _jsonschema_validator(output_type)
            self.name = str(output_type.get("title") or "output")
        else:
            schema = self._from_type(output_type)
            self.name = type_name(output_type)
        self.schema = schema
        self.wrapped = schema.get("type") != "object"
        self.wire_schema = (
            {"type": "object", "properties": {WRAP_KEY: schema}, "required": [WRAP_KEY], "additionalProperties": False}
            if self.wrapped
            else schema
        )
        self.strict = strict_schema(self.wire_schema)

    def _from_type(self, tp: Any) -> dict[str, Any]:
        try:
            from pydantic import TypeAdapter
        except ImportError:
            from agentnb.errors import MissingDependencyError

            raise MissingDependencyError("output_type with a Python type", "pydantic") from None
        try:
            self._adapter = TypeAdapter(tp)
            return inline_refs(self._adapter.json_schema())
        except Exception as exc:  # pydantic refuses some types (typing.TypedDict before 3.12)
            from agentnb.tools.schema import schema_for
            from agentnb.tools.schema_values import converter_for

            problems: list[str] = []
            schema = schema_for(tp, problems, "output_type")
            if problems:
                raise UserError(
                    f"output_type {type_name(tp)} has no JSON Schema ({exc}); use a pydantic model, "
                    "a dataclass, a TypedDict, a list of those, a plain type or a JSON Schema dict"
                ) from None
            # Our own schema and jsonschema instead: the value is built as tool arguments are.
            self._adapter = None
            self._validator = _jsonschema_validator(schema)
            self._convert = converter_for(tp)
            return schema

    def __repr__(self) -> str:
        return f"OutputSpec({self.name})"

    @property
    def api_name(self) -> str:
        """The name as APIs accept it (letters, digits, ``_``, ``-``)."""
        return re.sub(r"[^A-Za-z0-9_-]+", "_", self.name).strip("_")[:64] or "output"

    def check(self, text: str | None) -> OutputCheck:
        """Read the answer ``text`` as JSON and validate it against ``T``."""
        body = (text or "").strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        if not body:
            return OutputCheck(None, None, ("the answer is empty; write only the JSON value",))
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            from agentnb.providers.untooled.parse import load_json  # forgiving: Python dicts, trailing commas

            data, err = load_json(body)
            if err is not None:
                if self.schema.get("type") == "string":  # a bare string answer is the value
                    data = body
                else:
                    return OutputCheck(None, None, (f"the answer is not JSON ({err}); write only the JSON value",))
        if self.wrapped and isinstance(data, dict) and set(data) == {WRAP_KEY}:
            data = data[WRAP_KEY]
        return self.validate(data)

    def validate(self, data: Any) -> OutputCheck:
        """Validate JSON data (already parsed) against ``T``."""
        if self._adapter is not None:
            from pydantic import ValidationError

            try:
                return OutputCheck(self._adapter.validate_python(data), data, ())
            except ValidationError as exc:
                return OutputCheck(None, data, tuple(_pydantic_error(e) for e in exc.errors()))
        errors = tuple(sorted(_jsonschema_error(e) for e in self._validator.iter_errors(data)))
        if errors:
            return OutputCheck(None, data, errors)
        return OutputCheck(self._convert(data) if self._convert is not None else data, data, ())

    def dump(self, value: Any) -> Any:
        """A valid value as JSON data (for transcripts)."""
        if self._adapter is not None:
            return self._adapter.dump_python(value, mode="json")
        if self._convert is not None:
            from agentnb.tools.rendering import render_value

            return json.loads(render_value(value))  # dataclasses, enums... as JSON data
        return value


#: The final-answer tool's name, for APIs whose strongest mechanism is a tool.
FINAL_TOOL = "final_result"


def final_tool_description(spec: OutputSpec) -> str:
    """What the final-answer tool is for, as the model reads it."""
    return f"Give your final answer: a {spec.name}" + (f" (in {WRAP_KEY!r})." if spec.wrapped else ".")


def answer_from_final_tool(completion: Any, event: Any) -> Any:
    """A provider's completion with a final-answer tool call turned into the answer text.

    Other calls in the same turn are dropped (the answer ends the run); ``event`` (an
    :class:`~agentnb.events.OutputMode`) is added to the completion's events either way.
    """
    from dataclasses import replace

    events = (*completion.events, event)
    final = [c for c in completion.tool_calls if c.name == FINAL_TOOL]
    if not final:
        return replace(completion, events=events)
    c = final[0]
    text = json.dumps(c.arguments, ensure_ascii=False) if c.arguments is not None else (c.raw_arguments or "")
    return replace(completion, text=text, tool_calls=(), finish_reason="stop", events=events)


def output_spec(output_type: Any) -> OutputSpec | None:
    """An :class:`OutputSpec` for ``output_type`` (None stays None; a spec is returned as is)."""
    if output_type is None or isinstance(output_type, OutputSpec):
        return output_type
    if isinstance(output_type, str):
        raise UserError(
            f"output_type {output_type!r} is a string; pass the type itself (or a JSON Schema dict). "
            "In the magics, --output-type names a variable holding it"
        )
    if _not_a_type(output_type):
        what = "a function" if callable(output_type) else f"a {type(output_type).__name__} value"
        raise UserError(
            f"output_type must be a type (int, list[City], a pydantic model...) or a JSON Schema dict, not {what}: "
            f"{output_type!r:.60}"
        )
    return OutputSpec(output_type)


def _not_a_type(value: Any) -> bool:
    """A value where a type was meant: a function, an instance of a model or dataclass, a number..."""
    import dataclasses
    import inspect

    if isinstance(value, type):
        return False
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return True
    if dataclasses.is_dataclass(value) or hasattr(type(value), "model_fields"):  # an instance, not the class
        return True
    return isinstance(value, (bool, int, float, complex, bytes, list, tuple, set, frozenset))


def output_step(
    spec: OutputSpec, text: str | None, depth: int, retries_left: int
) -> tuple[OutputValidated, OutputCheck, UserMessage | None]:
    """The loop's output step: check a final answer; a message asking for a repair, if one is due."""
    check = spec.check(text)
    retry = not check.ok and retries_left > 0
    value = json.dumps(spec.dump(check.value), ensure_ascii=False) if check.ok else None
    event = OutputValidated(depth, spec.name, check.errors, value, retry)
    return event, check, UserMessage(repair_message(check.errors, spec)) if retry else None


def repair_message(errors: tuple[str, ...], spec: OutputSpec) -> str:
    """What the model reads when its answer did not validate."""
    lines = "\n".join(f"- {e}" for e in errors)
    schema = json.dumps(spec.schema, separators=(",", ":"), ensure_ascii=False)
    return (
        f"Your answer is not a valid {spec.name}:\n{lines}\n"
        f"Answer again with only a JSON value that matches this schema: {schema}"
    )


def type_name(tp: Any) -> str:
    """``City``, ``list[City]``, ``int``: a readable name for a type."""
    if isinstance(tp, type) and not getattr(tp, "__args__", None):
        return tp.__name__
    text = repr(tp).replace("typing.", "")
    return re.sub(r"(?:[\w]+\.)+(\w+)", r"\1", text).replace("<class '", "").replace("'>", "")


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` in OpenAI's strict form, or None where strict mode cannot express it.

    Strict mode needs every object closed (``additionalProperties: false``) with every
    property required, and only the keywords it knows. Objects that do not say
    ``additionalProperties`` are closed here; optional properties or free-form dicts make the
    schema non-strict (it is then sent with ``strict: false``).
    """
    ok = True

    def walk(node: Any, in_props: bool = False) -> Any:
        nonlocal ok
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if in_props:
            return {k: walk(v) for k, v in node.items()}
        if set(node) - _STRICT_KEYS:
            ok = False
        out = {k: walk(v, in_props=k in ("properties", "$defs")) for k, v in node.items()}
        if out.get("type") == "object" or "properties" in out:
            extra = out.get("additionalProperties", False)
            if extra is not False or set(out.get("properties", {})) != set(out.get("required", ())):
                ok = False
            out["additionalProperties"] = False
        return out

    result = walk(schema)
    return result if ok else None  # type: ignore[no-any-return]


def _jsonschema_validator(schema: dict[str, Any]) -> Any:
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise UserError(f"output_type is not a valid JSON Schema: {exc.message}") from None
    return cls(schema)


def _pydantic_error(e: Any) -> str:
    loc = ".".join(str(p) for p in e.get("loc", ()))
    return f"{loc}: {e['msg']}" if loc else str(e["msg"])


def _jsonschema_error(e: Any) -> str:
    path = ".".join(str(p) for p in e.absolute_path)
    return f"{path}: {e.message}" if path else str(e.message)
