"""Tool definitions: schemas from signatures and docstrings, explicit schemas, validation."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import decimal
import enum
import pathlib
import uuid
from typing import Annotated, Literal, Optional, TypedDict

import pytest

from agentnb import Agent, Tool, ToolContext, ToolDefinitionError, tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@dataclasses.dataclass
class Point:
    """A point.

    Args:
        x: horizontal
        y: vertical
    """

    x: float
    y: float = 0.0


class Address(TypedDict):
    street: str
    zip: int


def test_google_docstring_and_types_snapshot() -> None:
    @tool
    def search(
        query: str,
        limit: int = 5,
        mode: Literal["fast", "deep"] = "fast",
        color: Color | None = None,
        tags: list[str] | None = None,
        weights: dict[str, float] | None = None,
    ) -> str:
        """Search the index.

        More detail that is part of the description.

        Args:
            query: what to look for
            limit (int): at most this many
                results, continued here
            mode: search mode
            color: a colour filter
            tags: tags to match
            weights: per-field weights

        Returns:
            the hits
        """
        return query

    assert search.name == "search"
    assert search.description == "Search the index. More detail that is part of the description."
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "limit": {"type": "integer", "description": "at most this many results, continued here", "default": 5},
            "mode": {"type": "string", "enum": ["fast", "deep"], "description": "search mode", "default": "fast"},
            "color": {
                "anyOf": [{"type": "string", "enum": ["red", "green"]}, {"type": "null"}],
                "description": "a colour filter",
                "default": None,
            },
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "description": "tags to match",
                "default": None,
            },
            "weights": {
                "anyOf": [{"type": "object", "additionalProperties": {"type": "number"}}, {"type": "null"}],
                "description": "per-field weights",
                "default": None,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_numpy_docstring() -> None:
    @tool
    def area(width: float, height: float) -> float:
        """Area of a rectangle.

        Parameters
        ----------
        width : float
            The width,
            in metres.
        height : float
            The height.

        Returns
        -------
        float
        """
        return width * height

    props = area.parameters["properties"]
    assert props["width"]["description"] == "The width, in metres."
    assert props["height"]["description"] == "The height."
    assert area.description == "Area of a rectangle."


def test_nested_dataclass_typeddict_and_conversion() -> None:
    @tool
    def place(point: Point, address: Address, color: Color = Color.RED, opt: Optional[int] = None) -> str:  # noqa: UP045
        """Place a point."""
        assert isinstance(point, Point)
        assert isinstance(color, Color)
        return f"{point.x},{point.y},{address['zip']},{color.value}"

    props = place.parameters["properties"]
    assert props["point"] == {
        "type": "object",
        "properties": {
            "x": {"type": "number", "description": "horizontal"},
            "y": {"type": "number", "description": "vertical", "default": 0.0},
        },
        "required": ["x"],
        "additionalProperties": False,
        "description": "A point.",
    }
    assert props["address"]["required"] == ["street", "zip"]
    assert props["opt"]["type"] == ["integer", "null"]
    assert place.validate({"point": {"x": 1}, "address": {"street": "a", "zip": 1}}) == []
    assert place.validate({"point": {"x": "1"}, "address": {"street": "a", "zip": 1, "extra": 2}}) == [
        "address: Additional properties are not allowed ('extra' was unexpected)",
        "point.x: '1' is not of type 'number'",
    ]
    ctx = ToolContext("c", "place", 0)
    kwargs = place.prepare({"point": {"x": 1, "y": 2}, "address": {"street": "a", "zip": 9}, "color": "green"}, ctx)
    assert place.fn(**kwargs) == "1,2,9,green"


def test_validation_reports_every_error_in_words() -> None:
    @tool
    def f(a: int, unit: Literal["c", "f"]) -> None:
        """F."""

    assert f.validate({"a": 1, "unit": "c"}) == []
    assert f.validate({"a": "x", "unit": "k", "zzz": 1}) == [
        "Additional properties are not allowed ('zzz' was unexpected)",
        "a: 'x' is not of type 'integer'",
        "unit: 'k' is not one of ['c', 'f']",
    ]
    assert f.validate({}) == ["'a' is a required property", "'unit' is a required property"]


def test_bad_definition_lists_every_problem() -> None:
    def bad(a, *rest, b: set[int] | complex = 1, **kw):  # type: ignore[no-untyped-def]
        """Bad.

        Args:
            nothere: documented but missing
        """

    with pytest.raises(ToolDefinitionError) as info:
        tool(bad)
    problems = info.value.problems
    assert "parameter a: missing type annotation" in problems
    assert any("*args/**kwargs" in p and "rest" in p for p in problems)
    assert any("*args/**kwargs" in p and "kw" in p for p in problems)
    assert any("unsupported type complex" in p for p in problems)
    assert any("nothere" in p for p in problems)
    assert "invalid tool 'bad'" in str(info.value)


def test_missing_description_and_bad_name() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Tool("bad name!", "", {"type": "object"})
    assert len(info.value.problems) == 2


def test_explicit_schema_and_openai_dict() -> None:
    spec = {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Current time in a timezone.",
            "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
        },
    }
    t = tool(spec, fn=lambda tz: f"12:00 {tz}")
    assert t.name == "get_time" and t.parameters["required"] == ["tz"]
    assert t.openai_schema() == spec
    assert t.validate({}) == ["'tz' is a required property"]
    raw = Tool("echo", "Echo.", {"type": "object", "properties": {"x": {"type": "string"}}}, lambda x: x)
    assert raw("hi") == "hi"
    with pytest.raises(ToolDefinitionError, match="not a valid JSON Schema"):
        Tool("broken", "Broken.", {"type": "object", "properties": {"x": {"type": 5}}})


def test_options_and_examples_are_checked() -> None:
    @tool(direct_output=True, allow_repeat=True, timeout=2.5, examples=[("Add 1 and 2", {"a": 1, "b": 2})])
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert (add.direct_output, add.allow_repeat, add.timeout) == (True, True, 2.5)
    assert add.examples[0].query == "Add 1 and 2"

    def neg(a: int) -> int:
        """Negate."""
        return -a

    with pytest.raises(ToolDefinitionError) as info:
        tool(examples=[{"query": "q", "arguments": {"a": "x"}}, "nonsense"])(neg)
    assert info.value.problems == [
        "example 0 ('q'): a: 'x' is not of type 'integer'",
        "example 1: expected (query, arguments) or {'query':..., 'arguments':...}",
    ]


def test_annotated_description_async_and_context_param() -> None:
    @tool
    async def fetch(url: Annotated[str, "the address"], ctx: ToolContext) -> str:
        """Fetch a page."""
        ctx.attach_image(b"png")
        return url

    assert fetch.is_async and fetch.context_param == "ctx"
    assert fetch.parameters["properties"] == {"url": {"type": "string", "description": "the address"}}
    ctx = ToolContext("c1", "fetch", 0)
    assert asyncio.run(fetch.fn(**fetch.prepare({"url": "u"}, ctx))) == "u"
    assert len(ctx.images) == 1


def test_tuple_and_set_schemas() -> None:
    @tool
    def f(pair: tuple[int, str], items: tuple[int, ...], uniq: set[str]) -> None:
        """F."""

    p = f.parameters["properties"]
    assert p["pair"] == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "minItems": 2,
        "maxItems": 2,
    }
    assert p["items"] == {"type": "array", "items": {"type": "integer"}}
    assert p["uniq"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


def test_paths_dates_uuids_and_decimals_are_written_as_text() -> None:
    """``path: Path`` and ``day: date`` are common in notebooks: the model writes a string, the
    function gets the Python value; a bad one is a validation error the model can fix."""
    from agentnb import Agent
    from agentnb.testing import ScriptedProvider, call

    seen = []

    def plan(
        path: pathlib.Path,
        day: datetime.date,
        at: datetime.datetime | None = None,
        start: datetime.time = datetime.time(9),
        ref: uuid.UUID = uuid.UUID(int=1),
        price: decimal.Decimal = decimal.Decimal("1.50"),
        more: list[pathlib.PurePosixPath] | None = None,
    ) -> str:
        """Plan a trip."""
        seen.append((path, day, at, start, ref, price, more))
        return "planned"

    t = tool(plan)
    props = t.parameters["properties"]
    assert props["path"] == {"type": "string"} and props["day"] == {"type": "string", "format": "date"}
    assert props["start"]["default"] == "09:00:00" and props["price"]["default"] == "1.50"
    assert props["ref"]["default"] == "00000000-0000-0000-0000-000000000001"
    assert t.validate({"path": "a.csv", "day": "2024-13-01"}) == [
        "day: '2024-13-01' is not an ISO 8601 date (2024-05-01)"
    ]
    assert t.validate({"path": "a.csv", "day": "2024-01-01", "price": "lots"}) == [
        "price: 'lots' is not a decimal number"
    ]
    model = ScriptedProvider(
        [
            call("plan", path="data/x.csv", day="May 1st"),  # refused, then fixed
            call("plan", path="data/x.csv", day="2024-05-01", at="2024-05-01T10:00:00Z", price=2.5, more=["a/b"]),
            "done",
        ]
    )
    result = Agent(model, tools=[plan]).run("go")
    assert result.output == "done" and len(seen) == 1
    assert "day: 'May 1st' is not an ISO 8601 date" in model.requests[1].messages[-1].content
    path, day, at, start, ref, price, more = seen[0]
    assert path == pathlib.Path("data/x.csv") and day == datetime.date(2024, 5, 1)
    assert at == datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.timezone.utc) and start == datetime.time(9)
    assert ref == uuid.UUID(int=1) and price == decimal.Decimal("2.5") and more == [pathlib.PurePosixPath("a/b")]


def test_the_same_tool_listed_twice_is_one_tool_and_two_tools_with_one_name_are_an_error() -> None:
    """``tools=[*common, add]`` with ``add`` in ``common`` raised "two tools have this name"."""
    from agentnb.testing import ScriptedProvider

    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    def other(a: int, b: int) -> int:
        """Also called add."""
        return a - b

    other.__name__ = "add"
    assert list(Agent(ScriptedProvider(["x"]), tools=[add, add, [add]]).tools) == ["add"]
    with pytest.raises(ToolDefinitionError, match="two tools have this name"):
        Agent(ScriptedProvider(["x"]), tools=[add, other])
