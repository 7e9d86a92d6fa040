"""Benchmark data, scoring and the AnythingLLM-style baseline parser (benchmarks/ is not a package)."""

from __future__ import annotations

import doctest
import importlib.util
import sys
from pathlib import Path

import jsonschema
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_agentnb_bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


scoring = _load("scoring")
naive = _load("naive_baseline")
call_fit = _load("call_fit")

TASKS = scoring.load_tasks()
CASES = scoring.load_fc_cases()
MORE = scoring.load_more_cases()
DECISION = scoring.load_decision_cases()
SIBLING = scoring.load_sibling_cases()
TOOLS = TASKS["tools"]


def _items():
    """(id, functions, expected) for every request in both data files."""
    for task in TASKS["tasks"]:
        yield task["id"], TOOLS, task["expected"]
    for case in [*CASES, *MORE, *DECISION, *SIBLING]:
        yield case["id"], case["functions"], case["expected"]


# --- data -----------------------------------------------------------------------------------------


def test_counts_meet_the_minimums() -> None:
    assert len(TOOLS) >= 8
    assert len(TASKS["tasks"]) >= 48
    assert sum(t["expected"] is None for t in TASKS["tasks"]) >= 10
    assert len(CASES) >= 60
    categories = [c["category"] for c in CASES]
    assert set(categories) == {"simple", "multiple"}
    assert min(categories.count("simple"), categories.count("multiple")) >= 25


def test_the_larger_set_has_every_kind_and_enough_agent_tasks() -> None:
    import json

    categories = [c["category"] for c in MORE]
    assert min(categories.count(k) for k in ("simple", "multiple", "no_tool")) >= 35
    assert all((c["expected"] is None) == (c["category"] == "no_tool") for c in MORE)
    # >= 200 single-request cases across simple, one-of-several and no-tool-fits
    assert len(TASKS["tasks"]) + len(CASES) + len(MORE) >= 200
    agent = json.loads((BENCHMARKS / "data" / "agent_tasks.json").read_text(encoding="utf-8"))["tasks"]
    assert len(agent) >= 50 and len({t["query"] for t in agent}) == len(agent)


def test_the_decision_set_has_enough_of_both_sides_in_each_half() -> None:
    kinds = {"near", "chat", "knowledge", "math"}
    assert all((c["expected"] is None) == (c["category"] == "no_tool") for c in DECISION)
    assert {c["kind"] for c in DECISION if c["expected"] is None} == kinds
    for half in (DECISION[0::2], DECISION[1::2]):
        assert sum(c["expected"] is None for c in half) >= 35
        assert sum(c["expected"] is not None for c in half) >= 35
    for case in DECISION:
        names = [f["name"] for f in case["functions"]]
        assert 1 <= len(names) <= 4 and len(names) == len(set(names))
        if case["expected"] is not None:
            assert case["category"] == ("simple" if len(names) == 1 else "multiple"), case["id"]
    # no request repeats one of the older sets
    older = {t["query"].casefold() for t in TASKS["tasks"]} | {c["query"].casefold() for c in [*CASES, *MORE]}
    assert not older & {c["query"].casefold() for c in DECISION}


def test_the_sibling_set_is_new_and_balanced() -> None:
    """Issue 26 item 11's siblings: requests none of the tuned or held-out sets hold, half a call."""
    assert all((c["expected"] is None) == (c["category"] == "no_tool") for c in SIBLING)
    assert sum(c["expected"] is None for c in SIBLING) == sum(c["expected"] is not None for c in SIBLING) >= 15
    older = [t["query"] for t in TASKS["tasks"]] + [c["query"] for c in [*CASES, *MORE, *DECISION]]
    assert not {q.casefold() for q in older} & {c["query"].casefold() for c in SIBLING}


def test_ids_and_queries_are_unique() -> None:
    ids = [i for i, _, _ in _items()]
    assert len(ids) == len(set(ids))
    assert len({t["query"] for t in TASKS["tasks"]}) == len(TASKS["tasks"])
    assert len({c["query"] for c in CASES}) == len(CASES)


def test_few_shot_examples_are_not_test_requests() -> None:
    queries = {t["query"].casefold() for t in TASKS["tasks"]}
    for tool in TOOLS:
        assert 1 <= len(tool["examples"]) <= 2, tool["name"]
        for example in tool["examples"]:
            assert example["query"].casefold() not in queries
            jsonschema.validate(example["arguments"], tool["parameters"])


def test_tool_sets_are_well_formed() -> None:
    functions = [*TOOLS, *(f for c in [*CASES, *DECISION, *SIBLING] for f in c["functions"])]
    for fn in functions:
        assert fn["name"] and fn["description"], fn
        jsonschema.Draft202012Validator.check_schema(fn["parameters"])
        assert fn["parameters"]["type"] == "object"
        for prop in fn["parameters"]["properties"].values():
            assert "type" in prop and "description" in prop
    for case in CASES:
        names = [f["name"] for f in case["functions"]]
        assert len(names) == len(set(names))
        assert len(names) == 1 if case["category"] == "simple" else 2 <= len(names) <= 4, case["id"]


@pytest.mark.parametrize(("item_id", "functions", "expected"), list(_items()), ids=[i for i, _, _ in _items()])
def test_every_acceptable_value_fits_its_schema(item_id: str, functions: list, expected: dict | None) -> None:
    if expected is None:
        return
    (fn,) = [f for f in functions if f["name"] == expected["name"]]
    params = fn["parameters"]
    # the convention: every parameter is listed; "" (may be omitted) only for optional ones
    assert set(expected["arguments"]) == set(params["properties"])
    for name, alternatives in expected["arguments"].items():
        assert isinstance(alternatives, list) and alternatives
        if name in params.get("required", []):
            assert scoring.OMITTED not in alternatives
        for value in alternatives:
            if value != scoring.OMITTED:
                jsonschema.validate(value, params["properties"][name])
    # the first alternative of each argument makes a call that validates and scores correct
    first = {k: v[0] for k, v in expected["arguments"].items() if v[0] != scoring.OMITTED}
    call = {"name": expected["name"], "arguments": first}
    assert scoring.schema_valid(call, functions)
    assert scoring.score_call(expected, call)["correct"]


# --- scoring --------------------------------------------------------------------------------------

EXPECTED = {
    "name": "convert_units",
    "arguments": {"value": [5], "from_unit": ["km", "kilometers"], "to_unit": ["mi"], "note": ["", "x"]},
}


@pytest.mark.parametrize(
    ("predicted", "acceptable", "match"),
    [
        ("  New   York ", "new york", True),
        ("New York", "New-York", False),
        (5, 5.0, True),
        (5.0000001, 5, True),
        (5.01, 5, False),
        ("5", 5, False),
        (True, 1, False),
        (False, False, True),
        ([1, "A b"], [1.0, "a  B"], True),
        ([1, 2], [2, 1], False),
        ([1, 2], [1, 2, 3], False),
        ({"a": "X"}, {"a": "x"}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (None, None, True),
        (float("nan"), 0, False),
    ],
)
def test_values_match_is_tolerant_but_typed(predicted, acceptable, match) -> None:
    assert scoring.values_match(predicted, acceptable) is match


def test_score_call_accepts_normalised_values_and_omitted_optionals() -> None:
    call = {"name": "convert_units", "arguments": {"value": 5.0, "from_unit": " KM", "to_unit": "mi"}}
    assert scoring.score_call(EXPECTED, call)["correct"]


@pytest.mark.parametrize(
    ("arguments", "field", "bad"),
    [
        ({"value": 5, "to_unit": "mi"}, "missing", ["from_unit"]),
        ({"value": 5, "from_unit": "km", "to_unit": "mi", "precision": 2}, "unknown", ["precision"]),
        ({"value": 6, "from_unit": "km", "to_unit": "mi"}, "wrong", ["value"]),
        ({"value": 5, "from_unit": "km", "to_unit": "mi", "note": "y"}, "wrong", ["note"]),
    ],
)
def test_score_call_reports_what_is_wrong(arguments: dict, field: str, bad: list) -> None:
    result = scoring.score_call(EXPECTED, {"name": "convert_units", "arguments": arguments})
    assert not result["correct"] and result["name_ok"]
    assert result[field] == bad


@pytest.mark.parametrize(
    "predicted",
    [None, "text", {"name": "convert_units"}, {"name": "convert_units", "arguments": "value=5"}],
)
def test_score_call_rejects_malformed_calls(predicted) -> None:
    assert not scoring.score_call(EXPECTED, predicted)["correct"]


def test_score_call_wrong_function_is_wrong_even_with_right_arguments() -> None:
    call = {"name": "Convert_Units", "arguments": {"value": 5, "from_unit": "km", "to_unit": "mi"}}
    result = scoring.score_call(EXPECTED, call)
    assert not result["correct"] and not result["name_ok"]


def test_summarise_rates() -> None:
    fns = [f for f in TOOLS if f["name"] == "convert_units"]
    good = {"name": "convert_units", "arguments": {"value": 5, "from_unit": "km", "to_unit": "mi"}}
    ill_typed = {"name": "convert_units", "arguments": {"value": "5", "from_unit": "km", "to_unit": "mi"}}
    results = [
        {"expected": EXPECTED, "predicted": good, "functions": fns, "seconds": 1.0, "category": "a"},
        {"expected": EXPECTED, "predicted": ill_typed, "functions": fns, "seconds": 2.0, "category": "a"},
        {"expected": EXPECTED, "predicted": None, "functions": fns, "seconds": 3.0, "category": "b"},
        {"expected": None, "predicted": None, "functions": fns, "seconds": 4.0, "category": "b"},
        {"expected": None, "predicted": good, "functions": fns, "category": "b"},
    ]
    s = scoring.summarise(results)
    assert (s["n"], s["n_tool"], s["n_no_tool"]) == (5, 3, 2)
    assert s["parse_rate"] == pytest.approx(2 / 3)
    assert s["schema_valid_rate"] == pytest.approx(1 / 3)
    assert s["correct_rate"] == pytest.approx(1 / 3)
    assert s["no_tool_accuracy"] == pytest.approx(1 / 2)
    assert s["overall_accuracy"] == pytest.approx(2 / 5)
    assert s["mean_seconds"] == pytest.approx(2.5)
    assert s["by_category"]["a"]["correct_rate"] == pytest.approx(1 / 2)
    assert s["by_category"]["b"]["no_tool_accuracy"] == pytest.approx(1 / 2)


def test_summarise_uses_the_attempt_for_parse_and_schema_rates() -> None:
    fns = [f for f in TOOLS if f["name"] == "convert_units"]
    attempt = {"name": "convert_units", "arguments": {"value": 5, "from_unit": "km", "to_unit": "mi"}}
    s = scoring.summarise([{"expected": EXPECTED, "predicted": None, "attempt": attempt, "functions": fns}])
    assert (s["parse_rate"], s["schema_valid_rate"], s["correct_rate"]) == (1.0, 1.0, 0.0)
    assert s["no_tool_accuracy"] is None and s["mean_seconds"] is None


# --- the AnythingLLM-style baseline ---------------------------------------------------------------

WEATHER = next(t for t in TOOLS if t["name"] == "get_weather")


def test_picker_prompt_shows_properties_but_not_required() -> None:
    history = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "tool", "name": "get_weather", "content": "RESULT-12C"},
        {"role": "user", "content": "And tomorrow?"},
    ]
    messages = naive.build_messages(history, TOOLS)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    system = messages[0]["content"]
    assert system.startswith("You are a program which picks the most optimal function and parameters to call.")
    assert "RESULT-12C" not in str(messages) and "helpful assistant" not in str(messages)
    assert "'name'" in system and "'arguments'" in system
    for tool in TOOLS:
        assert f"Function name: {tool['name']}\n" in system
        assert tool["description"] in system
    assert '"required"' not in system
    assert (
        'Query: "How warm is it in Madrid right now?"\nJSON: {"name":"get_weather","arguments":{"city":"Madrid"}}'
        in system
    )


def test_picker_accepts_anythingllm_style_examples() -> None:
    tool = {**WEATHER, "examples": [{"prompt": "Rome weather", "call": '{"city": "Rome"}'}]}
    system = naive.build_messages([], [tool])[0]["content"]
    assert 'Query: "Rome weather"\nJSON: {"name":"get_weather","arguments":{"city":"Rome"}}' in system


CALL = {"name": "get_weather", "arguments": {"city": "Oslo"}}


@pytest.mark.parametrize(
    "reply",
    [
        '{"name": "get_weather", "arguments": {"city": "Oslo"}}',
        '  {"name": "get_weather", "arguments": {"city": "Oslo"}}\n',
        'Sure, here you go: {"name": "get_weather", "arguments": {"city": "Oslo"}} Anything else?',
        '```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```',
        "{'name': 'get_weather', 'arguments': {'city': 'Oslo'}}",
        '{"name": "get_weather", "arguments": {"city": "Oslo",},}',
        '{name: "get_weather", arguments: {city: "Oslo"}}',
        '{"name": "get_weather", "arguments": {"city": "Oslo"',
    ],
)
def test_parse_reply_finds_the_call(reply: str) -> None:
    assert naive.parse_reply(reply, TOOLS) == CALL


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('{"name": "get_weather"}', "Missing name or arguments in function call."),
        ('{"name": "Get_Weather", "arguments": {"city": "Oslo"}}', "Function name does not exist."),
        ('{"name": "get_weather", "arguments": {"unit": "celsius"}}', "Missing required argument."),
        ('{"name": "get_weather", "arguments": {"city": "Oslo", "lang": "no"}}', "Invalid argument schema match."),
        ('[{"name": "get_weather", "arguments": {"city": "Oslo"}}]', "Missing name or arguments in function call."),
        ('I found this config: {"debug": true}', "Missing name or arguments in function call."),
    ],
)
def test_invalid_calls_are_dropped(reply: str, reason: str) -> None:
    detail = naive.parse_reply_detailed(reply, TOOLS)
    assert detail["call"] is None and detail["attempt"] is not None and detail["text"] is None
    assert detail["reason"] == reason
    assert naive.parse_reply(reply, TOOLS) is None


@pytest.mark.parametrize("reply", ["Hello! How can I help?", "The answer is {not json}.", " {'a': 1"])
def test_prose_is_a_text_answer(reply: str) -> None:
    detail = naive.parse_reply_detailed(reply, TOOLS)
    assert detail == {"call": None, "attempt": None, "text": reply, "reason": None}


def test_no_type_or_enum_checks_like_anythingllm() -> None:
    reply = '{"name": "get_weather", "arguments": {"city": 42, "unit": "kelvin", "days": "many"}}'
    call = naive.parse_reply(reply, TOOLS)
    assert call == {"name": "get_weather", "arguments": {"city": 42, "unit": "kelvin", "days": "many"}}
    assert not scoring.schema_valid(call, TOOLS)


def test_repair_only_when_the_reply_starts_with_a_bracket() -> None:
    assert naive.safe_json_parse("{'a': True}") == {"a": True}
    assert naive.safe_json_parse("Answer: {'a': True}") is None
    assert naive.safe_json_parse('See {"a": NaN}') is None  # JSON.parse rejects NaN, Python's json would not


@pytest.mark.parametrize("module", [scoring, naive, call_fit], ids=["scoring", "naive_baseline", "call_fit"])
def test_doctests(module) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
