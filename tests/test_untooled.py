"""The UnTooled layer over a scripted text-only model: prompt rendering, parsing, the loop."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentnb import Agent, tool
from agentnb.events import TextDelta, ToolCallRequested, ValidationResult
from agentnb.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentnb.providers.base import Completion, Request
from agentnb.providers.untooled import PromptTemplate, UnTooled
from agentnb.providers.untooled.parse import load_json, parse_reply
from agentnb.testing import FunctionProvider, ScriptedProvider, Streamed


@tool(examples=[("How warm is it in Madrid?", {"city": "Madrid"})])
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Current weather for a city.

    Args:
        city: the city name
        unit: temperature unit
    """
    return f"Sunny, 21 degrees {unit} in {city}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


NAMES = ["get_weather", "add"]


def text_model(*replies: object) -> ScriptedProvider:
    return ScriptedProvider(list(replies), native_tools=False)


# --- prompt rendering -------------------------------------------------------------------------


def test_system_prompt_snapshot() -> None:
    prompt = UnTooled(text_model()).system_prompt([get_weather, add], "Be brief.")
    assert prompt == (
        "You are a helpful assistant with access to the functions below.\n"
        "\n"
        "Function: get_weather\n"
        "Description: Current weather for a city.\n"
        "Arguments:\n"
        "- city (string, required): the city name\n"
        '- unit ("celsius" or "fahrenheit", optional, default "celsius"): temperature unit\n'
        'Example: "How warm is it in Madrid?" -> {"name": "get_weather", "arguments": {"city": "Madrid"}}\n'
        "\n"
        "Function: add\n"
        "Description: Add two integers.\n"
        "Arguments:\n"
        "- a (integer, required)\n"
        "- b (integer, required)\n"
        "\n"
        "To call a function, reply with only a JSON object, nothing else:\n"
        '{"name": "<function name>", "arguments": {"<parameter>": <value>, ...}}\n'
        "Copy argument values exactly as the user wrote them, and give every required parameter.\n"
        "When the user's request needs one of these functions, call it. When no function fits, or when you "
        "already have the results you need, answer in plain text.\n"
        "\n"
        "Be brief."
    )


def test_render_turns_calls_and_results_into_plain_chat() -> None:
    layer = UnTooled(text_model())
    messages = [
        SystemMessage("Be brief."),
        UserMessage("Weather in Oslo and 2+3?"),
        AssistantMessage(None, (ToolCall("c1", "get_weather", {"city": "Oslo"}), ToolCall("c2", "add", {"a": 2}))),
        ToolMessage("c1", "get_weather", "Rain, 8 degrees"),
        ToolMessage("c2", "add", "Invalid arguments for add", is_error=True),
        UserMessage("[Attached image(s) from tool result]", ()),
    ]
    out = layer.render(Request(messages, [get_weather, add]))
    assert [m.role for m in out] == ["system", "user", "assistant", "user"]
    assert out[0].content.endswith("Be brief.") and "Function: add" in out[0].content
    assert json.loads(out[2].content) == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
        {"name": "add", "arguments": {"a": 2}},
    ]
    assert out[3].content.startswith(
        "Result of get_weather: Rain, 8 degrees\nError from add: Invalid arguments for add\n"
        "Using these results, answer my question in one sentence: Weather in Oslo and 2+3?"
    )
    assert out[3].content.endswith("[Attached image(s) from tool result]")


def test_broken_call_is_shown_back_as_written() -> None:
    raw = '{"name": "add", "arguments": {"a": 1,'
    out = UnTooled(text_model()).render(
        Request([UserMessage("x"), AssistantMessage(None, (ToolCall("c", "add", None, raw, "bad"),))], [add])
    )
    assert out[-1].content == raw


def test_tool_choice_notes_and_no_tools() -> None:
    layer = UnTooled(text_model())
    required = layer.render(Request([UserMessage("go")], [add], "required"))
    assert required[-1].content.endswith("(Reply with a function call, as JSON.)")
    named = layer.render(Request([UserMessage("go")], [add, get_weather], "get_weather"))
    assert named[-1].content.endswith("(Reply with a call to get_weather, as JSON.)")
    plain = layer.render(Request([SystemMessage("Be brief."), UserMessage("go")], []))
    assert [(m.role, m.content) for m in plain] == [("system", "Be brief."), ("user", "go")]


def test_template_file_sections_are_checked() -> None:
    with pytest.raises(ValueError, match="lacks sections"):
        PromptTemplate("[[system]]\n$catalogue\n")


# --- parsing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "add", "arguments": {"a": 1, "b": 2}}',
        '  {"name": "add", "arguments": {"a": 1, "b": 2}}<|im_end|>',
        '```json\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```',
        'Sure! I will add them.\n```\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n```',
        'Let me compute that: {"name": "add", "arguments": {"a": 1, "b": 2}}',
        "{'name': 'add', 'arguments': {'a': 1, 'b': 2}}",
        '{"name": "add", "arguments": {"a": 1, "b": 2,},}',
        '{"name": "add", "arguments": {"a": 1, "b": 2',
        '{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}',
        '{"name": "add", "parameters": {"a": 1, "b": 2}}',
        '{"type": "function", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}',
        '{"add": {"a": 1, "b": 2}}',
        '[{"name": "add", "arguments": {"a": 1, "b": 2}}]',
    ],
)
def test_parse_accepts_the_ways_small_models_write_a_call(reply: str) -> None:
    prose, calls = parse_reply(reply, NAMES)
    assert [(c.name, c.arguments, c.parse_error) for c in calls] == [("add", {"a": 1, "b": 2}, None)]
    assert prose in (None, "Sure! I will add them.", "Let me compute that:")


def test_parse_python_literals_and_parallel_calls() -> None:
    _, calls = parse_reply(
        "[{'name': 'add', 'arguments': {'a': 1, 'b': 2}}, {'name': 'get_weather', 'arguments': {'city': None, 'x': True}}]",
        NAMES,
    )
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_1", "add", {"a": 1, "b": 2}),
        ("call_2", "get_weather", {"city": None, "x": True}),
    ]
    assert load_json("{'ok': true, 'none': null, 'text': 'true story'}") == (
        {"ok": True, "none": None, "text": "true story"},
        None,
    )


@pytest.mark.parametrize(
    "reply",
    [
        "A set like {1, 2} has two elements.",
        "In Python you write a dict as {'a': 1}.",
        'JSON looks like {"name": "Bob", "age": 3}, with quoted keys.',
        "[1] Shakespeare wrote it around 1595.",
        "Use `{}` for an empty dict and ``` for fences.",
        "The answer is 5.",
    ],
)
def test_prose_with_braces_is_not_a_call(reply: str) -> None:
    assert parse_reply(reply, NAMES) == (reply, ())


@pytest.mark.parametrize(
    ("reply", "name", "fragment"),
    [
        ('{"name": "add", "arguments": {"a": 1 "b": 2}}', "add", "not valid JSON"),
        ('{"name": "add", "arguments": [1, 2]}', "add", "must be a JSON object"),
        ('{"city": "Paris"}', "", 'needs a "name"'),
        ('{"name": "add", "arguments": {"a": 1}} {"name": "add"', "add", "not valid JSON"),
    ],
)
def test_broken_calls_come_back_with_an_error_for_the_model(reply: str, name: str, fragment: str) -> None:
    _, calls = parse_reply(reply, NAMES)
    (c,) = calls
    assert (c.name, c.arguments) == (name, None)
    assert fragment in (c.parse_error or "")
    assert c.raw_arguments


def test_strict_mode_reads_calls_only_at_the_start() -> None:
    reply = 'Here: {"name": "add", "arguments": {"a": 1, "b": 2}}'
    assert parse_reply(reply, NAMES, strict=True) == (reply, ())
    assert parse_reply(reply, NAMES)[1][0].name == "add"


def test_named_choice_reads_a_bare_arguments_object() -> None:
    _, calls = parse_reply('{"a": 1, "b": 2}', NAMES, default_tool="add")
    assert (calls[0].name, calls[0].arguments) == ("add", {"a": 1, "b": 2})


@given(st.text(max_size=200))
@example("{[")  # repaired to "{[]}", a Python set holding a list: literal_eval raised TypeError
def test_parse_never_raises_and_keeps_prose(text: str) -> None:
    prose, calls = parse_reply(text, NAMES)
    if not calls:
        assert prose == (text.strip() or None)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@given(st.sampled_from(NAMES), st.dictionaries(st.text(min_size=1, max_size=10), json_values, max_size=4))
def test_any_json_call_round_trips(name: str, arguments: dict) -> None:
    reply = json.dumps({"name": name, "arguments": arguments})
    _, calls = parse_reply(reply, NAMES)
    assert [(c.name, c.arguments) for c in calls] == [(name, arguments)]


# --- through the loop -----------------------------------------------------------------------------


def test_agent_calls_a_tool_and_answers() -> None:
    model = text_model('{"name": "get_weather", "arguments": {"city": "Paris"}}', "It is sunny in Paris.")
    result = Agent(model, tools=[get_weather, add]).run("Weather in Paris?")
    assert (result.output, result.tool_calls, result.stop_reason) == ("It is sunny in Paris.", 1, "answer")
    first, second = (r.messages for r in model.requests)
    assert {m.role for m in [*first, *second]} <= {"system", "user", "assistant"}
    assert "Function: get_weather" in first[0].content
    assert second[-2].content == '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    assert second[-1].content.startswith("Result of get_weather: Sunny, 21 degrees celsius in Paris")
    assert model.requests[0].constraint is None  # a scripted model cannot constrain decoding


def test_invalid_and_broken_calls_go_back_to_the_model() -> None:
    model = text_model(
        '{"name": "add", "arguments": {"a": "one", "b": 2}}',
        '{"name": "add", "arguments": {"a": 1, "b": 2',
        '{"name": "add", "arguments": {"a": 1 "b": 2}}',
        '{"name": "add", "arguments": {"a": 1, "b": 2}}',
        "1 + 2 = 3",
    )
    agent = Agent(model, tools=[add])
    result = agent.run("1+2?")
    assert result.output == "1 + 2 = 3"
    checks = [e for e in result.events if isinstance(e, ValidationResult)]
    assert [bool(e.errors) for e in checks] == [True, False, True, False]
    seen = [r.messages[-1].content for r in model.requests[1:]]
    assert "'one' is not of type 'integer'" in seen[0]
    assert "not valid JSON" in seen[2] and "Expecting ','" in seen[2]
    assert seen[1].startswith("Result of add: 3")  # the truncated call was repaired and ran
    assert "already called add" in seen[3]  # its repeat was answered by the deduplicator


def test_prose_answer_passes_through() -> None:
    model = text_model("Hello! How can I help?")
    result = Agent(model, tools=[add]).run("hi")
    assert (result.output, result.tool_calls) == ("Hello! How can I help?", 0)


async def test_streaming_shows_prose_but_never_a_call() -> None:
    layer = UnTooled(
        text_model(
            Streamed(["Let me ", "check. ", '{"name": "add", ', '"arguments": {"a": 1, "b": 2}}']),
            Streamed(["  ", "[1] Hamlet ", "is a play ", "{not a call}."]),
            Streamed(["```json\n{", '"name": "add", "arguments": {"a": 1, "b": 2}}\n```']),
        )
    )
    for expected_text, expected_calls in [
        (["Let me ", "check. "], 1),
        (["[1] Hamlet is a play {not a call}."], 0),
        ([], 1),
    ]:
        items = [i async for i in layer.stream(Request([UserMessage("x")], [add]))]
        texts = [i.text for i in items if type(i).__name__ == "TextChunk"]
        completion = items[-1]
        assert isinstance(completion, Completion)
        assert texts == expected_text
        assert len(completion.tool_calls) == expected_calls
        if expected_calls:
            assert "{" not in "".join(texts)


def test_agent_stream_events_for_an_untooled_call() -> None:
    model = text_model(
        Streamed(['{"name": "add", ', '"arguments": {"a": 1, "b": 2}}']),
        Streamed(["The sum ", "is 3."]),
    )
    events = Agent(model, tools=[add], stream=True).run("1+2?").events
    deltas = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert deltas == "The sum is 3."
    assert [e.name for e in events if isinstance(e, ToolCallRequested)] == ["add"]


def test_constraint_is_set_for_constraining_backends() -> None:
    class Constraining(ScriptedProvider):
        supports_constraints = True

    model = Constraining(['{"name": "add", "arguments": {"a": 1, "b": 2}}', "3"], native_tools=False)
    Agent(model, tools=[add, get_weather], tool_choice="add").run("1+2?")
    first, second = (r.constraint for r in model.requests)
    assert first is not None and first.tool_choice == "add" and [t.name for t in first.tools] == ["add", "get_weather"]
    assert second is not None and second.tool_choice == "auto"
    # constrained replies are calls only when they start with JSON
    assert UnTooled(model, constrain=False).inner_request(Request([UserMessage("x")], [add])).constraint is None


def test_pick_hint_goes_to_backends_that_rank_tools() -> None:
    class Ranking(ScriptedProvider):
        supports_constraints = True
        understands_untooled_hints = True

    model = Ranking(['{"name": "add", "arguments": {"a": 1, "b": 2}}', "3"], native_tools=False)
    Agent(model, tools=[add, get_weather], tool_choice="required").run("What is 1+2?")
    pick = model.requests[0].settings["untooled_pick"]
    assert pick["query"] == "What is 1+2?"
    assert (
        pick["prompts"]["add"] == 'Function: add\nDescription: Add two integers.\nExample request for this function: "'
    )
    # "no tool" is ranked too, so that auto can weigh the tools against it
    assert pick["none"].startswith("Function: none\n")
    # after the result: the result's text, for the answer to copy from
    after = model.requests[1].settings
    assert after["untooled_after_tool_results"] is True and after["untooled_results"] == ("3",)
    # a backend that does not rank: no hints
    plain = ScriptedProvider(['{"name": "add", "arguments": {"a": 1, "b": 2}}', "3"], native_tools=False)
    Agent(plain, tools=[add, get_weather], tool_choice="required").run("What is 1+2?")
    assert "untooled_pick" not in plain.requests[0].settings
    assert "untooled_results" not in plain.requests[1].settings
    # one tool is ranked as well (against no tool)
    single = Ranking(['{"name": "add", "arguments": {"a": 1, "b": 2}}', "3"], native_tools=False)
    Agent(single, tools=[add], tool_choice="required").run("What is 1+2?")
    assert list(single.requests[0].settings["untooled_pick"]["prompts"]) == ["add"]


@pytest.mark.parametrize(
    ("reply", "calls", "prose"),
    [
        ('{"name": "add", "arguments": {"a": 1}}\n{"name": "add", "arguments": {"a": 2}}', [1, 2], None),
        ('{"name": "add", "arguments": {"a": 1}} [{"name": "add", "arguments": {"a": 2}}]', [1, 2], None),
        ('{"name": "add", "arguments": {"a": 1}}\n{\n  "type": "tool results above"\n}', [1], None),
        ('{"name": "add", "arguments": {"a": 1}}\nThe sum is 3.', [1], "The sum is 3."),
        ('{"name": "add", "arguments": {"a": 1}}\n<|im_end|>', [1], None),
    ],
    ids=["two-calls", "call-then-array", "call-then-json", "call-then-prose", "call-then-marker"],
)
def test_calls_written_one_after_another(reply: str, calls: list[int], prose: str | None) -> None:
    # a small model writes calls one after another, or writes on after its call; each was
    # "not valid JSON (unexpected text after the JSON value)" before
    got_prose, got = parse_reply(reply, NAMES)
    assert [c.arguments for c in got] == [{"a": n} for n in calls] and got_prose == prose
    assert len({c.id for c in got}) == len(got)


@pytest.mark.parametrize("junk", ["", '\n{\n  "type": "tool results above"\n}'])
def test_an_untooled_model_calling_past_the_limit_gets_agentnb_s_answer_as_a_native_one_does(junk: str) -> None:
    # the run's answer was the model's JSON call ("{"name": "add", ...}"), where a native model's
    # run ends with agentnb's note and the tool results
    call_text = json.dumps({"name": "add", "arguments": {"a": 1, "b": 2}}) + junk
    untooled = Agent(FunctionProvider(lambda m, t: call_text, native_tools=False), [add], max_tool_calls=1)
    native = Agent(FunctionProvider(lambda m, t: ToolCall("c", "add", {"a": 1, "b": 2})), [add], max_tool_calls=1)
    for stream in (False, True):
        got, want = untooled.run("1+2?", stream=stream), native.run("1+2?", stream=stream)
        assert got.stop_reason == want.stop_reason == "limit"
        assert got.output == want.output and got.output.startswith("[agentnb]") and "add(a=1, b=2) -> 3" in got.output
        assert not any(isinstance(e, TextDelta) and "{" in e.text for e in got.events)  # no call shown as text
