"""The speed work of issue 13 changes nothing observable: same validation, frozen events,
snapshots of the history."""

from __future__ import annotations

import dataclasses
from typing import Literal

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb import Agent, tool
from agentnb.events import EVENT_TYPES, ToolFinished
from agentnb.messages import ToolCall, ToolMessage
from agentnb.run.history import MessageView
from agentnb.testing import ScriptedProvider, call
from agentnb.tools.validate import compilable, fast_validator


@tool
def typical(
    city: str,
    unit: Literal["c", "f"] = "c",
    days: int = 1,
    scale: float = 1.0,
    tags: list[str] | None = None,
    flags: dict[str, bool] | None = None,
    exact: bool = False,
) -> str:
    """A tool with the usual parameter shapes."""
    return city


SCHEMAS = [
    typical.parameters,
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10}}, "required": ["n"]},
    {"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"}}},
    {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "e": {"enum": [1, "1"]}},
    },
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "number"}, "maxItems": 3}}},
    {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1},
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["city", "unit", "days", "scale", "tags", "flags", "exact", "n", "s", "v", "e", "a", "x"])
arguments = st.dictionaries(keys, json_values, max_size=5)


@pytest.mark.parametrize("schema", SCHEMAS)
def test_these_schemas_are_compiled(schema: dict) -> None:  # type: ignore[type-arg]
    assert compilable(schema) and fast_validator(schema) is not None


@settings(max_examples=300, deadline=None)
@given(args=arguments)
def test_the_fast_path_never_accepts_what_jsonschema_rejects(args: dict) -> None:  # type: ignore[type-arg]
    for schema in SCHEMAS:
        fast = fast_validator(schema)
        assert fast is not None
        if fast(args):
            assert jsonschema.Draft202012Validator(schema).is_valid(args), (schema, args)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.1}}},
        {"type": "object", "properties": {"x": {"type": "array", "uniqueItems": True}}},
        {"type": "object", "patternProperties": {"^a": {"type": "integer"}}},
        {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"type": "integer"}}},
    ],
)
def test_keywords_where_the_libraries_differ_use_jsonschema(schema: dict) -> None:  # type: ignore[type-arg]
    assert fast_validator(schema) is None
    t = tool({"type": "function", "function": {"name": "t", "description": "d", "parameters": schema}})
    bad = {"x": 0.3, "ab": 0.3}
    assert t.validate(bad) == jsonschema_errors(schema, bad) != []


def jsonschema_errors(schema: dict, value: object) -> list[str]:  # type: ignore[type-arg]
    errors = jsonschema.Draft202012Validator(schema).iter_errors(value)
    return sorted(f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)


def test_validation_messages_are_unchanged() -> None:
    assert typical.validate({"city": "Oslo", "unit": "k", "days": True}) == [
        "days: True is not of type 'integer'",
        "unit: 'k' is not one of ['c', 'f']",
    ]
    assert typical.validate({"city": "Oslo", "days": 2.0}) == []  # 2.0 is an integer in JSON Schema


def test_events_and_messages_stay_frozen_and_replaceable() -> None:
    for cls in (*EVENT_TYPES.values(), ToolCall, ToolMessage):
        fields = [f for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
        obj = cls(*[None] * len(fields))
        first = dataclasses.fields(cls)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, first, 5)
        assert getattr(dataclasses.replace(obj, **{first: 7}), first) == 7
    e = ToolFinished(1, "c", "n", "r", None, 0.5)
    assert e == ToolFinished(depth=1, call_id="c", name="n", result="r", error=None, duration=0.5)
    assert e.kind == "tool_finished" and hash(e) == hash(ToolFinished(1, "c", "n", "r", None, 0.5))
    with pytest.raises(TypeError):
        ToolFinished(1, "c")  # type: ignore[call-arg]


def test_each_request_sees_the_history_as_it_was() -> None:
    model = ScriptedProvider([call("typical", city="a"), call("typical", city="b"), "done"])
    Agent(model, tools=[typical]).run("go")
    assert [len(r.messages) for r in model.requests] == [1, 3, 5]
    assert isinstance(model.requests[0].messages, MessageView)
    assert model.requests[0].messages[-1].content == "go"
    assert list(model.requests[1].messages) == list(model.requests[2].messages[:3])
    with pytest.raises(IndexError):
        model.requests[0].messages[1]
