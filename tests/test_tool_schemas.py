"""Tool parameter schemas from signatures, pydantic included: snapshot-tested, defaults valid.

The snapshots live in tests/snapshots/tool_schemas.json; after a deliberate change rewrite
them with ``UPDATE_SNAPSHOTS=1 pytest tests/test_tool_schemas.py``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
from pathlib import Path
from typing import Annotated, Literal, Optional, TypedDict

import jsonschema
import pytest
from pydantic import BaseModel, Field, field_validator

from agentnb import Agent, ToolDefinitionError, tool
from agentnb.events import ToolFinished, ValidationResult
from agentnb.testing import ScriptedProvider, call
from agentnb.tools import Tool, ToolContext

SNAPSHOTS = Path(__file__).parent / "snapshots" / "tool_schemas.json"


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(BaseModel):
    street: str
    zip: str = Field(pattern=r"^\d{5}$", description="five digits")


class Person(BaseModel):
    """A person to register."""

    name: str = Field(description="full name")
    age: int = Field(ge=0, le=150)
    address: Address | None = None
    color: Color = Color.RED

    @field_validator("name")
    @classmethod
    def capitalised(cls, v: str) -> str:
        if not v[:1].isupper():
            raise ValueError("must start with a capital letter")
        return v


@dataclasses.dataclass
class Team:
    """A team."""

    title: str
    lead: Person
    members: list[Person] = dataclasses.field(default_factory=list)


class Point(TypedDict):
    x: float
    y: float


SEEN: list[object] = []


@tool
def register(person: Person, note: str = "") -> str:
    """Register a person."""
    SEEN.append(person)
    return f"registered {person.name}"


@tool
def optionals(
    counts: dict[str, int] | None = None,
    tags: Optional[list[str]] = None,  # noqa: UP045 - the spelling users write
    limit: int | None = None,
    color: Color = Color.BLUE,
    level: Level = Level.HIGH,
    mode: Literal["fast", "slow"] = "fast",
) -> str:
    """Every kind of optional parameter."""
    SEEN.append((counts, tags, limit, color, level, mode))
    return "ok"


@tool
def fields(
    n: int = Field(3, ge=1, le=5, description="how many"),
    ratio: Annotated[float, Field(gt=0, lt=1)] = 0.5,
    name: str = Field(description="who"),
) -> str:
    """pydantic Field as defaults and in Annotated."""
    SEEN.append((n, ratio, name))
    return "ok"


@tool
def nested(team: Team, points: list[Point], lookup: dict[str, Person] | None = None) -> str:
    """Models nested in dataclasses, lists and dicts."""
    SEEN.append((team, points, lookup))
    return "ok"


class Settings(BaseModel):
    retries: int = None  # pydantic refuses an explicit null here: no default in the schema
    label: str | None = None


@dataclasses.dataclass
class Window:
    width: int
    title: str = None  # type: ignore[assignment]


@tool
def none_defaults(  # a None default on a non-Optional type means "or nothing"
    meta: dict[str, int] = None,  # type: ignore[assignment]  # noqa: RUF013
    tags: list[str] = None,  # type: ignore[assignment]  # noqa: RUF013
    n: int = None,  # type: ignore[assignment]  # noqa: RUF013
    mode: Literal["a", "b"] = None,  # type: ignore[assignment]  # noqa: RUF013
    window: Window = None,  # type: ignore[assignment]
    settings: Settings = None,  # type: ignore[assignment]
    k: int = Field(None, ge=1),
) -> str:
    """None defaults on types that do not say Optional.

    Args:
        meta: counts by name
    """
    SEEN.append((meta, tags, n, mode, window, settings, k))
    return "ok"


TOOLS = [register, optionals, fields, nested, none_defaults]


def test_schemas_match_the_snapshots() -> None:
    got = {t.name: t.parameters for t in TOOLS}
    if os.environ.get("UPDATE_SNAPSHOTS") or not SNAPSHOTS.exists():
        SNAPSHOTS.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(SNAPSHOTS.read_text(encoding="utf-8"))


def _properties(schema: object):  # type: ignore[no-untyped-def]
    """Every (property schema) anywhere in a schema."""
    if isinstance(schema, dict):
        yield from (schema.get("properties") or {}).values()
        for v in schema.values():
            yield from _properties(v)
    elif isinstance(schema, list):
        for v in schema:
            yield from _properties(v)


@pytest.mark.parametrize("t", TOOLS, ids=lambda t: t.name)
def test_every_default_validates_against_its_own_schema(t: Tool) -> None:
    checked = 0
    for prop in _properties(t.parameters):
        if isinstance(prop, dict) and "default" in prop:
            jsonschema.validate(prop["default"], {k: v for k, v in prop.items() if k != "default"})
            checked += 1
    assert checked or t.name == "register" or t.name == "nested"


def test_a_none_default_is_accepted_by_its_schema_and_omitted_arguments_validate() -> None:
    props = none_defaults.parameters["properties"]
    assert props["meta"] == {
        "anyOf": [{"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "null"}],
        "description": "counts by name",
        "default": None,
    }
    assert props["n"] == {"type": ["integer", "null"], "default": None}
    assert none_defaults.parameters.get("required") is None
    for name in props:  # each default, sent back explicitly, is valid
        assert none_defaults.validate({name: None}) == [], name
    assert none_defaults.validate({}) == []
    assert none_defaults.validate({"meta": {"a": "x"}}) == ["meta.a: 'x' is not of type 'integer'"]
    assert none_defaults.validate({"k": 0}) != []
    window = props["window"]["anyOf"][0]["properties"]["title"]
    assert window == {"type": ["string", "null"], "default": None}
    settings = props["settings"]["anyOf"][0]["properties"]
    assert "default" not in settings["retries"] and settings["label"]["default"] is None


def test_a_run_with_omitted_and_explicit_none_arguments() -> None:
    SEEN.clear()
    model = ScriptedProvider(
        [
            call("none_defaults"),
            call("none_defaults", meta=None, window={"width": 3}, settings=None, k=None),
            call("none_defaults", meta={"a": 1}, window={"width": 3, "title": None}, settings={"label": "x"}),
            "done",
        ]
    )
    result = Agent(model, tools=[none_defaults]).run("go")
    checks = [e for e in result.events if isinstance(e, ValidationResult)]
    assert [c.errors for c in checks] == [(), (), ()]
    assert [e.result for e in result.events if isinstance(e, ToolFinished)] == ["ok", "ok", "ok"]
    assert SEEN[0] == (None, None, None, None, None, None, None)
    assert SEEN[1][4] == Window(3) and SEEN[1][5] is None
    assert SEEN[2][0] == {"a": 1} and SEEN[2][4] == Window(3, None) and SEEN[2][5] == Settings(label="x")


def test_optional_and_enum_defaults() -> None:
    props = optionals.parameters["properties"]
    assert props["counts"]["default"] is None and optionals.validate({"counts": None}) == []
    assert props["color"] == {"type": "string", "enum": ["red", "blue"], "default": "blue"}
    assert props["level"]["default"] == 2
    assert optionals.parameters.get("required") is None
    SEEN.clear()
    optionals.fn(**optionals.prepare({"color": "red", "level": 1}, ToolContext("c", "optionals", 0)))
    assert SEEN[-1][3] is Color.RED and SEEN[-1][4] is Level.LOW


def test_field_defaults_and_bounds() -> None:
    props = fields.parameters["properties"]
    assert props["n"] == {"default": 3, "description": "how many", "maximum": 5, "minimum": 1, "type": "integer"}
    assert props["ratio"]["exclusiveMinimum"] == 0 and fields.parameters["required"] == ["name"]
    assert fields.validate({"name": "a", "n": 9}) == ["n: 9 is greater than the maximum of 5"]
    SEEN.clear()
    fields.fn(**fields.prepare({"name": "a"}, ToolContext("c", "fields", 0)))
    assert SEEN[-1] == (3, 0.5, "a")  # the Field's default, not the FieldInfo object


def test_pydantic_instances_are_built_before_the_tool_runs() -> None:
    SEEN.clear()
    arguments = {
        "team": {"title": "T", "lead": {"name": "Ann", "age": 40}, "members": [{"name": "Bo", "age": 3}]},
        "points": [{"x": 1, "y": 2}],
        "lookup": {"k": {"name": "Cy", "age": 9, "address": {"street": "Main", "zip": "12345"}}},
    }
    assert nested.validate(arguments) == []
    nested.fn(**nested.prepare(arguments, ToolContext("c", "nested", 0)))
    team, points, lookup = SEEN[-1]
    assert isinstance(team, Team) and isinstance(team.lead, Person) and isinstance(team.members[0], Person)
    assert points == [{"x": 1, "y": 2}]
    assert isinstance(lookup["k"], Person) and isinstance(lookup["k"].address, Address)


def test_pydantic_errors_go_back_to_the_model() -> None:
    SEEN.clear()
    model = ScriptedProvider(
        [
            call("register", person={"name": "ann", "age": 30}),  # the validator refuses it
            call("register", person={"name": "Ann", "age": 30, "address": {"street": "x", "zip": "12"}}),
            call("register", person={"name": "Ann", "age": 30}),
            "done",
        ]
    )
    result = Agent(model, tools=[register]).run("register Ann, 30")
    checks = [e for e in result.events if isinstance(e, ValidationResult)]
    assert "capital letter" in " ".join(checks[0].errors) and checks[0].errors[0].startswith("person.name")
    assert "person.address.zip" in " ".join(checks[1].errors) or "address.zip" in " ".join(checks[1].errors)
    assert checks[2].ok
    assert [e.result for e in result.events if isinstance(e, ToolFinished)] == ["registered Ann"]
    assert isinstance(SEEN[-1], Person) and SEEN[-1].color is Color.RED
    assert "capital letter" in result.messages[2].content  # the model read why


@dataclasses.dataclass
class Page:
    size: int = "ten"  # type: ignore[assignment]


def named(name: str = 5) -> str:  # type: ignore[assignment]
    """A default of another type."""
    return name


def sized(page: Page, step: int = 1.5, ratio: float = 2) -> str:  # type: ignore[assignment]
    """A nested default and a float default on an int; an int default on a float is fine."""
    return "ok"


def test_a_default_its_type_refuses_is_a_definition_error_not_a_schema_that_refuses_it() -> None:
    """``name: str = 5`` gave {"type": "string", "default": 5}: a model copying the default was refused."""
    with pytest.raises(ToolDefinitionError) as err:
        tool(named)
    assert "parameter name: its default does not fit its type (5 is not of type 'string')" in str(err.value)
    assert "annotate the type the default has" in str(err.value)
    with pytest.raises(ToolDefinitionError) as err:
        tool(sized)
    problems = str(err.value)
    assert "parameter page.size: its default does not fit its type ('ten' is not of type 'integer')" in problems
    assert "parameter step: its default does not fit its type (1.5 is not of type 'integer')" in problems
    assert "ratio" not in problems
