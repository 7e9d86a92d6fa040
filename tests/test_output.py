"""Structured output: output_type kinds, validation, repair, transcripts, and the native track."""

from __future__ import annotations

import dataclasses
import enum
import json
import subprocess
import sys
from typing import TypedDict

import openai_wire_server as w
import pytest
from openai_fixtures import *  # noqa: F403 - the wire and provider fixtures
from pydantic import BaseModel, Field, field_validator

from agentnb import Agent, RunResult, tool
from agentnb.errors import UserError
from agentnb.events import OutputMode, OutputValidated
from agentnb.messages import UserMessage
from agentnb.output import FINAL_TOOL, output_spec, strict_schema
from agentnb.testing import ScriptedProvider, Streamed, call


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Item(BaseModel):
    name: str = Field(description="what it is")
    qty: int = Field(ge=1)
    color: Color | None = None

    @field_validator("name")
    @classmethod
    def no_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("name must not be blank")
        return v


@dataclasses.dataclass
class City:
    name: str
    population: int


class Row(TypedDict):
    country: str
    capital: str


SCHEMA = {
    "type": "object",
    "title": "Point",
    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
    "required": ["x", "y"],
}


@tool
def population(city: str) -> int:
    """Population of a city."""
    return {"Oslo": 709000}.get(city, 0)


KINDS = [
    (Item, '{"name": "pen", "qty": 2}', Item(name="pen", qty=2)),
    (City, '{"name": "Oslo", "population": 709000}', City("Oslo", 709000)),
    (Row, '{"country": "Norway", "capital": "Oslo"}', {"country": "Norway", "capital": "Oslo"}),
    (list[City], '{"value": [{"name": "A", "population": 1}]}', [City("A", 1)]),
    (list[Item], '[{"name": "cup", "qty": 3, "color": "red"}]', [Item(name="cup", qty=3, color=Color.RED)]),
    (int, '{"value": 42}', 42),
    (int, "42", 42),
    (bool, "true", True),
    (float, '{"value": 2.5}', 2.5),
    (str, "plain words", "plain words"),
    (SCHEMA, '{"x": 1, "y": 2.5}', {"x": 1, "y": 2.5}),
]


@pytest.mark.parametrize(("output_type", "answer", "expected"), KINDS)
def test_each_kind_gives_a_typed_value(output_type: object, answer: str, expected: object) -> None:
    result = Agent(ScriptedProvider([answer]), output_type=output_type).run("go")
    assert result.stop_reason == "answer"
    assert result.value == expected
    assert type(result.value) is type(expected)
    assert result.output == answer  # the text is kept


def test_fenced_json_is_read() -> None:
    result = Agent(ScriptedProvider(['```json\n{"name": "Oslo", "population": 1}\n```']), output_type=City).run("go")
    assert result.value == City("Oslo", 1)


def test_tools_first_then_the_value() -> None:
    model = ScriptedProvider([call("population", city="Oslo"), '{"name": "Oslo", "population": 709000}'])
    result = Agent(model, tools=[population], output_type=City).run("Oslo?")
    assert result.tool_calls == 1 and result.value == City("Oslo", 709000)
    assert model.requests[0].output is not None and model.requests[0].output.name == "City"


def test_invalid_answer_is_repaired_with_the_errors() -> None:
    model = ScriptedProvider(['{"name": " ", "qty": 0}', '{"name": "pen", "qty": 1}'])
    result = Agent(model, output_type=Item).run("go")
    assert result.stop_reason == "answer" and result.value == Item(name="pen", qty=1)
    checks = [e for e in result.events if isinstance(e, OutputValidated)]
    assert [c.ok for c in checks] == [False, True] and checks[0].retry
    # pydantic's own validation: the field_validator and Field(ge=1) both report
    assert any("blank" in e for e in checks[0].errors) and any("qty" in e for e in checks[0].errors)
    repair = model.requests[1].messages[-1]
    assert isinstance(repair, UserMessage) and "qty" in repair.content and "not a valid Item" in repair.content
    assert json.loads(checks[1].value) == {"name": "pen", "qty": 1, "color": None}


def test_retries_are_bounded_then_invalid_output() -> None:
    model = ScriptedProvider(["nope", "no", "never", "unused"])
    result = Agent(model, output_type=int).run("go")
    assert result.stop_reason == "invalid_output"
    assert result.value is None and result.output == "never"  # the raw text is kept
    assert model.remaining == 1  # 1 answer + max_output_retries (2) repairs
    result = Agent(ScriptedProvider(["nope"]), output_type=int, max_output_retries=0).run("go")
    assert result.stop_reason == "invalid_output"


def test_per_run_output_type_overrides_and_plain_runs_are_untouched() -> None:
    agent = Agent(ScriptedProvider(["7", "7"]))
    assert agent.run("a").value is None
    assert agent.run("b", output_type=int).value == 7
    plain = Agent(ScriptedProvider(["hi"])).run("x")
    assert not any(isinstance(e, OutputValidated) for e in plain.events)
    assert "value" not in plain.to_dict()


def test_streaming_run_validates_too() -> None:
    model = ScriptedProvider([Streamed(['{"name": "A", ', '"population": 3}'])])
    result = Agent(model, output_type=City, stream=True).run("go")
    assert result.value == City("A", 3)


def test_transcript_round_trip_keeps_the_value(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = Agent(ScriptedProvider(['{"name": "pen", "qty": 2, "color": "blue"}']), output_type=Item).run("go")
    path = tmp_path / "t.json"
    result.save(path)
    data = json.loads(path.read_text())
    assert data["value"] == {"name": "pen", "qty": 2, "color": "blue"} and data["output_type"] == "Item"
    assert RunResult.load(path).value == data["value"]  # JSON data without the type
    typed = RunResult.load(path, output_type=Item)
    assert typed.value == Item(name="pen", qty=2, color=Color.BLUE)
    assert [e for e in typed.events if isinstance(e, OutputValidated)] == [
        e for e in result.events if isinstance(e, OutputValidated)
    ]


def test_bad_output_types_are_user_errors() -> None:
    with pytest.raises(UserError, match="pass the type itself"):
        Agent(ScriptedProvider([]), output_type="City")
    with pytest.raises(UserError, match="not a valid JSON Schema"):
        Agent(ScriptedProvider([]), output_type={"type": "nonsense"})
    with pytest.raises(UserError, match="max_output_retries"):
        Agent(ScriptedProvider([]), output_type=int, max_output_retries=-1)


def test_strict_only_where_the_schema_allows() -> None:
    assert output_spec(City).strict is not None
    assert output_spec(Item).strict is None  # color has a default: not every field is required
    assert output_spec(dict[str, int]).strict is None  # free-form keys
    closed = strict_schema({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    assert closed is not None and closed["additionalProperties"] is False


def test_import_does_not_load_pydantic() -> None:
    code = "import sys, agentnb, agentnb.output; print('pydantic' in sys.modules, 'jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- the native track, over HTTP with the real openai SDK -------------------------------------


def test_response_format_json_schema_strict(wire, provider) -> None:  # type: ignore[no-untyped-def]
    wire.script(w.tool_calls(("population", {"city": "Oslo"})), w.text('{"name": "Oslo", "population": 709000}'))
    result = Agent(provider, tools=[population], output_type=City).run("How many live in Oslo?")
    assert result.value == City("Oslo", 709000) and result.tool_calls == 1
    body = wire.bodies[0]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["name"] == "City"
    assert fmt["json_schema"]["schema"]["required"] == ["name", "population"]
    assert body["tools"][0]["function"]["name"] == "population"  # tools and output together
    modes = [e for e in result.events if isinstance(e, OutputMode)]
    assert len(modes) == 2 and modes[0].mode == "response_format" and "strict" in modes[0].detail


def test_non_object_types_are_wrapped_on_the_wire(wire, provider) -> None:  # type: ignore[no-untyped-def]
    wire.script(w.text('{"value": [3, 4]}'))
    result = Agent(provider, output_type=list[int]).run("two numbers")
    assert result.value == [3, 4]
    schema = wire.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["value"] == {"type": "array", "items": {"type": "integer"}}


def test_final_answer_tool_mode_streamed(wire) -> None:  # type: ignore[no-untyped-def]
    from agentnb.providers.openai import OpenAIProvider

    provider = OpenAIProvider("m", base_url=wire.url, output_mode="tool", max_retries=0)
    wire.script(w.tool_calls((FINAL_TOOL, {"name": "Oslo", "population": 5})))
    result = Agent(provider, output_type=City, stream=True).run("Oslo")
    assert result.value == City("Oslo", 5) and result.output == '{"name": "Oslo", "population": 5}'
    body = wire.bodies[0]
    assert "response_format" not in body
    assert body["tools"][-1]["function"]["name"] == FINAL_TOOL
    assert body["tool_choice"] == {"type": "function", "function": {"name": FINAL_TOOL}}
    mode = next(e for e in result.events if isinstance(e, OutputMode))
    assert mode.mode == "tool"


def test_final_answer_tool_with_other_tools_requires_a_call(wire) -> None:  # type: ignore[no-untyped-def]
    from agentnb.providers.openai import OpenAIProvider

    provider = OpenAIProvider("m", base_url=wire.url, output_mode="tool", max_retries=0)
    wire.script(w.tool_calls(("population", {"city": "Oslo"})), w.tool_calls((FINAL_TOOL, {"value": 709000})))
    result = Agent(provider, tools=[population], output_type=int).run("Oslo")
    assert result.value == 709000
    assert wire.bodies[0]["tool_choice"] == "required"


def test_server_refusing_response_format_switches_to_the_tool(wire, provider) -> None:  # type: ignore[no-untyped-def]
    wire.script(
        w.error(400, "response_format json_schema is not supported by this server"),
        w.tool_calls((FINAL_TOOL, {"name": "Oslo", "population": 1})),
    )
    result = Agent(provider, output_type=City).run("Oslo")
    assert result.value == City("Oslo", 1)
    assert "response_format" in wire.bodies[0] and "response_format" not in wire.bodies[1]
    mode = next(e for e in result.events if isinstance(e, OutputMode))
    assert mode.mode == "tool" and "refused response_format" in mode.detail


def test_native_repair_round_trip(wire, provider) -> None:  # type: ignore[no-untyped-def]
    wire.script(w.text('{"name": "", "qty": 0}'), w.text('{"name": "mug", "qty": 1, "color": null}'))
    result = Agent(provider, output_type=Item).run("one mug")
    assert result.value == Item(name="mug", qty=1)
    sent = wire.bodies[1]["messages"]
    assert sent[-1]["role"] == "user" and "not a valid Item" in sent[-1]["content"]
    assert wire.bodies[0]["response_format"]["json_schema"]["strict"] is False


# -- what the printer and the trace widget show ----------------------------------------------


def test_printer_and_widget_show_the_value_and_the_validation() -> None:
    import io

    from agentnb.printer import TextPrinter

    pytest.importorskip("ipywidgets")
    from agentnb.notebook.trace.widget import TraceWidget

    model = ScriptedProvider(['{"name": "Oslo"}', '{"name": "Oslo", "population": 709000}'])
    out = io.StringIO()
    result = Agent(model, output_type=City).run("go", on_event=TextPrinter(out))
    text = out.getvalue()
    assert "answer is not a valid City (sent back to the model): population: Field required" in text
    assert 'answer is a valid City: {"name": "Oslo", "population": 709000}' in text
    widget = TraceWidget.replay(result)
    html = widget.body_html
    assert "✗ not a valid City" in html and "sent back to the model to repair" in html
    assert "✓ valid City" in html and "<th>population</th><td>709000</td>" in html
    assert "<th>name</th><td>Oslo</td>" in widget.answer_html.value
    failed = Agent(ScriptedProvider(["x"]), output_type=int, max_output_retries=0).run("go")
    widget = TraceWidget.replay(failed)
    assert "invalid output" in widget.header_html and "no retries left" in widget.body_html


def test_widget_shows_a_list_value_as_a_table_and_the_output_mode(wire, provider) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("ipywidgets")
    from agentnb.notebook.trace.widget import TraceWidget

    wire.script(w.text('{"value": [{"name": "A", "population": 1}, {"name": "B", "population": 2}]}'))
    result = Agent(provider, output_type=list[City]).run("two cities")
    html = TraceWidget.replay(result).body_html
    assert "<th>name</th><th>population</th>" in html and "<td>B</td><td>2</td>" in html
    assert "structured output via <b>response_format</b>" in html


# -- the magics ------------------------------------------------------------------------------


def test_magic_output_type_names_a_notebook_variable() -> None:
    from IPython.core.error import UsageError
    from IPython.testing import globalipapp

    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    saved = dict(shell.user_ns)
    try:
        model = ScriptedProvider(['{"name": "Oslo", "population": 709000}'])
        shell.user_ns.update({"model": model, "City": City})
        shell.run_line_magic("agent", "-p model -q --new --output-type City Oslo has 709000 people.")
        result = shell.user_ns["_agent_result"]
        assert result.value == City("Oslo", 709000)
        assert model.requests[0].output is not None and model.requests[0].output.name == "City"
        with pytest.raises(UsageError, match="--output-type 'Nope': name 'Nope' is not defined in the notebook"):
            shell.run_line_magic("agent", "-p model -q --output-type Nope hi")
        with pytest.raises(UsageError, match="--output-type 'City\\(\\)' is not"):  # a call is never evaluated
            shell.run_line_magic("agent", "-p model -q --output-type City() hi")
    finally:
        shell.user_ns.clear()
        shell.user_ns.update(saved)


# -- the OpenAI Responses route --------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
def test_responses_api_asks_for_a_json_schema_text_format(streaming: bool) -> None:
    import openai_responses_server as r

    from agentnb.providers.openai import OpenAIProvider

    with r.ResponsesServer() as server:
        provider = OpenAIProvider("o-test", api="responses", base_url=server.url, max_retries=0)
        server.script(r.text('{"name": "Oslo", "population": 709000}'))
        result = Agent(provider, output_type=City, stream=streaming).run("Oslo?")
        body = server.requests[-1].body
    assert result.value == City("Oslo", 709000)
    fmt = body["text"]["format"]
    assert fmt["type"] == "json_schema" and fmt["name"] == "City" and fmt["strict"] is True
    assert fmt["schema"]["required"] == ["name", "population"]
    assert any(isinstance(e, OutputMode) and "Responses" in e.detail for e in result.events)


# -- Anthropic: a final-answer tool ----------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
def test_anthropic_answers_through_a_final_answer_tool(streaming: bool) -> None:
    pytest.importorskip("anthropic")
    import anthropic_wire_server as a

    from agentnb.providers.anthropic import AnthropicProvider

    with a.MessagesServer() as server:
        provider = AnthropicProvider("claude-test", api_key="sk-ant-test-0123456789", base_url=server.url)
        server.script(
            a.tool_use(("population", {"city": "Oslo"})),
            a.tool_use((FINAL_TOOL, {"name": "Oslo", "population": 709000})),
        )
        result = Agent(provider, tools=[population], output_type=City, stream=streaming).run("Oslo?")
        first = server.requests[0].body
    assert result.value == City("Oslo", 709000) and result.tool_calls == 1
    assert [t["name"] for t in first["tools"]] == ["population", FINAL_TOOL]
    assert first["tool_choice"] == {"type": "any"}
    assert first["tools"][1]["input_schema"]["required"] == ["name", "population"]
    mode = next(e for e in result.events if isinstance(e, OutputMode))
    assert mode.mode == "tool"


@pytest.mark.parametrize(
    "value",
    [lambda text: text, Item(name="pen", qty=2), City("Paris", 2), 3, [int]],
    ids=["function", "model-instance", "dataclass-instance", "number", "list-of-a-type"],
)
def test_a_value_where_a_type_was_meant_is_a_clear_error(value: object) -> None:
    # a lambda gave "invalid_output" at the end of every run; a model instance "unhashable type"
    with pytest.raises(UserError, match="output_type must be a type"):
        Agent(ScriptedProvider(["1"]), output_type=value)
    with pytest.raises(UserError, match="output_type must be a type"):
        Agent(ScriptedProvider(["1"])).run("go", output_type=value)
