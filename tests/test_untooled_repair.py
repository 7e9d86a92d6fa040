"""Constrained calls over a server: schemas the server's converter enforces, and the one re-ask.

The schema rewrite is checked value by value against jsonschema; the re-ask runs through
OpenAIProvider's untooled route against agentnb.testing's scripted server over real HTTP
(the server does not constrain anything: the scripted replies play a server whose grammar
skipped a keyword, and hostile servers).
"""

from __future__ import annotations

import io
import json

import jsonschema
import pytest

from agentnb import Agent, tool
from agentnb.events import CallRepair, ConstraintDropped, ToolStarted, ValidationResult, event_from_dict
from agentnb.notebook.trace.render import depth_html
from agentnb.notebook.trace.state import TraceState
from agentnb.printer import TextPrinter
from agentnb.providers import OpenAIProvider
from agentnb.providers.untooled.enforce import MAX_ENUM, MAX_GRID, enforceable, integer_values, narrowed
from agentnb.testing import ScriptedServer
from agentnb.testing.server import error, text

# --- the rewrite ----------------------------------------------------------------------------

BOUNDED = [
    {"type": "integer", "minimum": 1, "maximum": 4},
    {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 5},
    {"type": "integer", "minimum": -3.5, "maximum": 2.5},
    {"type": "integer", "minimum": 0, "maximum": 30, "multipleOf": 5},
    {"type": "integer", "minimum": 0, "maximum": 3, "exclusiveMinimum": True},  # draft 4
]


@pytest.mark.parametrize("schema", BOUNDED)
def test_a_small_integer_range_becomes_an_enum_that_accepts_exactly_the_same_values(schema):
    out = enforceable(schema)
    assert "enum" in out and out["enum"] == sorted(out["enum"])
    draft = jsonschema.Draft4Validator if schema.get("exclusiveMinimum") is True else jsonschema.Draft202012Validator
    before, after = draft(schema), draft(out)
    for value in [*range(-10, 40), -3.5, 2.5, 1.0, 0.5, "2", True, None]:
        assert before.is_valid(value) == after.is_valid(value), value


def test_what_cannot_be_rewritten_exactly_is_left_alone():
    for schema in (
        {"type": "integer", "minimum": 0},  # no upper bound
        {"type": "integer", "minimum": 0, "maximum": MAX_ENUM},  # one value too many
        {"type": "number", "minimum": 0, "maximum": 1},  # fractions
        {"type": "integer", "minimum": 5, "maximum": 1},  # unsatisfiable: the validator says so
        {"type": "integer", "enum": [1, 7]},
    ):
        assert enforceable(schema) == schema
    assert integer_values({"type": "integer", "minimum": 1, "maximum": 2, "multipleOf": 5}) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "number", "minimum": 0, "maximum": 1},
        {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
        {"type": "number", "minimum": -2.5, "maximum": 2.5},
        {"type": "number", "minimum": 0},
        {"type": "number", "maximum": 10, "multipleOf": 0.5},
        {"type": "integer", "minimum": 1},
        {"type": "integer", "maximum": -3},
        {"type": "integer", "minimum": 0, "maximum": 1000},
    ],
)
def test_a_re_ask_narrows_an_argument_to_values_that_all_validate(schema):
    found = narrowed({**schema, "description": "d"})
    assert found is not None
    out, note = found
    assert out["description"] == "d" and note
    values = out["enum"]
    assert 2 <= len(values) <= MAX_GRID and len(set(values)) == len(values)
    validator = jsonschema.Draft202012Validator(schema)
    assert all(validator.is_valid(v) for v in values)
    assert narrowed({"type": "number"}) is None and narrowed({"type": "string", "maxLength": 2}) is None


def test_the_rewrite_reaches_nested_schemas_and_splits_type_lists():
    params = {
        "type": "object",
        "properties": {
            "level": {"type": "integer", "minimum": 1, "maximum": 3, "description": "1 to 3"},
            "pages": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2}},
            "note": {"type": ["string", "null"], "maxLength": 3, "description": "short"},
            "mode": {"anyOf": [{"type": "integer", "minimum": 7, "maximum": 8}, {"type": "string"}]},
        },
    }
    out = enforceable(params)
    props = out["properties"]
    assert props["level"]["enum"] == [1, 2, 3] and props["pages"]["items"]["enum"] == [0, 1, 2]
    assert props["note"] == {
        "description": "short",
        "anyOf": [{"type": "string", "maxLength": 3}, {"type": "null", "maxLength": 3}],
    }
    assert props["mode"]["anyOf"][0]["enum"] == [7, 8]
    validator, rewritten = jsonschema.Draft202012Validator(params), jsonschema.Draft202012Validator(out)
    for value in ({"note": "abcd"}, {"note": None}, {"note": "ab"}, {"level": 4}, {"pages": [0, 3]}, {"mode": "x"}):
        assert validator.is_valid(value) == rewritten.is_valid(value), value
    assert params["properties"]["level"] == {"type": "integer", "minimum": 1, "maximum": 3, "description": "1 to 3"}


# --- the re-ask -----------------------------------------------------------------------------

CALLED: list[float] = []


@tool
def binomial(trials: int, p: float) -> str:
    """Probability of one success in n trials.

    Args:
        trials: number of trials
        p: probability of success, between 0 and 1
    """
    CALLED.append(p)
    return f"n={trials}, p={p}"


binomial.parameters["properties"]["p"].update(minimum=0, maximum=1)  # what the server's grammar skips
binomial.parameters["properties"]["trials"].update(minimum=1, maximum=20)  # what it enforces, as an enum
BAD = '{"name": "binomial", "arguments": {"trials": 10, "p": 1.5}}'
GOOD = '{"name": "binomial", "arguments": {"trials": 10, "p": 0.5}}'


@pytest.fixture
def server():
    CALLED.clear()
    with ScriptedServer() as s:
        yield s


def provider(server: ScriptedServer, **options) -> OpenAIProvider:
    return OpenAIProvider("m", base_url=server.url, tool_calling="untooled", max_retries=0, timeout=20, **options)


@pytest.mark.parametrize("stream", [False, True])
def test_a_call_that_breaks_its_schema_is_asked_again_once_and_the_user_sees_it(server, stream):
    server.script(text(BAD), text(GOOD), text('{"answer": "About 0.5."}'))
    out = io.StringIO()
    r = Agent(provider(server), [binomial], stream=stream).run("10 flips, p?", on_event=TextPrinter(out))
    assert r.error is None and r.output == "About 0.5." and CALLED == [0.5]
    fixes = [e for e in r.events if isinstance(e, CallRepair)]
    assert len(fixes) == 1 and fixes[0].repaired and fixes[0].rejected == {"trials": 10, "p": 1.5}
    assert fixes[0].depth == 0 and any("maximum" in err for err in fixes[0].errors)
    assert [e.errors for e in r.events if isinstance(e, ValidationResult)] == [()]
    # the re-ask: the model's own reply, the errors, and an envelope with only that tool
    again = server.bodies[1]
    assert again["messages"][-2] == {"role": "assistant", "content": BAD}
    assert "1.5 is greater than the maximum of 1" in again["messages"][-1]["content"]
    schema = again["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["name"] == {"const": "binomial"} and "anyOf" not in schema
    # the bounded integer goes to the server as an enum; a number's bounds as they are at first,
    call = server.bodies[0]["response_format"]["json_schema"]["schema"]["anyOf"][0]  # [the call, an answer]
    first = call["properties"]["arguments"]["properties"]
    assert first["trials"]["enum"] == list(range(1, 21)) and "enum" not in first["p"]
    # ... and on the re-ask the argument that broke them is offered only values that validate
    args = schema["properties"]["arguments"]["properties"]
    assert args["p"]["enum"][:3] == [0, 0.01, 0.02] and args["p"]["enum"][-1] == 1 and len(args["p"]["enum"]) == 101
    assert "p: numbers 0 to 1 in steps of 0.01" in fixes[0].detail
    assert "call to binomial broke its schema" in out.getvalue() and "repaired" in out.getvalue()
    # the transcript keeps it, and the trace shows it
    assert event_from_dict(json.loads(json.dumps(fixes[0].to_dict()))) == fixes[0]
    state = TraceState()
    for e in r.events:
        state.add(e)
    html = depth_html(state.depths[0])
    assert "call repaired" in html and "1.5" in html
    assert html.index("call repaired") < html.index("Tool call")  # the re-ask came before the call ran


def test_a_call_still_invalid_after_the_re_ask_goes_to_the_loop_as_today(server):
    server.script(text(BAD), text(BAD), text(GOOD), text('{"answer": "0.5"}'))
    r = Agent(provider(server), [binomial]).run("10 flips, p?")
    assert r.error is None and r.output == "0.5" and CALLED == [0.5]
    fixes = [e for e in r.events if isinstance(e, CallRepair)]
    assert [f.repaired for f in fixes] == [False] and "still invalid" in fixes[0].detail
    checks = [e for e in r.events if isinstance(e, ValidationResult)]
    assert [bool(c.errors) for c in checks] == [True, False]  # the loop told the model, which fixed it
    assert "Invalid arguments for binomial" in r.messages[2].content
    assert len(server.bodies) == 4  # one re-ask, not one per loop step


@pytest.mark.parametrize(
    ("reask", "detail"),
    [
        (text("Sorry, I cannot."), "stopped constraining"),  # junk: the server ignored the envelope
        (error(400, "bad request"), "re-ask failed"),  # the re-ask fails at the server
        (text('{"name": "binomial", "arguments": {"trials": 10, "p": '), "no call"),  # cut off
    ],
)
def test_a_hostile_re_ask_keeps_the_first_call_and_the_run_goes_on(server, reask, detail):
    server.script(text(BAD), reask, text(GOOD), text("Done."))
    r = Agent(provider(server), [binomial]).run("10 flips, p?")
    assert r.error is None and r.output and CALLED == [0.5]
    fixes = [e for e in r.events if isinstance(e, CallRepair)]
    assert len(fixes) == 1 and not fixes[0].repaired and detail in fixes[0].detail
    first = next(e for e in r.events if isinstance(e, ValidationResult))
    assert first.errors and r.messages[1].tool_calls[0].arguments == {"trials": 10, "p": 1.5}


def test_junk_invalid_json_and_unknown_tools_end_in_the_loops_errors_not_a_crash(server):
    server.script(
        text("{not json"),  # broken JSON: no re-ask (nothing to validate), the loop reports it
        text('{"name": "nope", "arguments": {}}'),  # no such tool: the loop lists the real ones
        text(GOOD),
        text("Done."),
    )
    r = Agent(provider(server), [binomial]).run("10 flips, p?")
    assert r.error is None and r.output == "Done." and CALLED == [0.5]
    assert not any(isinstance(e, CallRepair) for e in r.events)
    kinds = [e.kind for e in r.events if e.kind in ("validation", "unknown_tool", "tool_started")]
    assert "unknown_tool" in kinds and kinds[-1] == "tool_started"
    assert any(isinstance(e, ConstraintDropped) for e in r.events)  # a call to "nope" is no envelope


def test_unconstrained_replies_and_repair_false_are_not_re_asked(server):
    server.script(text(BAD), text(GOOD), text("Done."))
    r = Agent(provider(server, constrain=False), [binomial]).run("10 flips, p?")
    assert not any(isinstance(e, CallRepair) for e in r.events) and len(server.bodies) == 3
    server.reset()
    CALLED.clear()
    p = provider(server)
    p.untooled().repair = False
    server.script(text(BAD), text(GOOD), text('{"answer": "Done."}'))
    r = Agent(p, [binomial]).run("10 flips, p?")
    assert not any(isinstance(e, CallRepair) for e in r.events) and CALLED == [0.5]
    assert [bool(e.errors) for e in r.events if isinstance(e, ValidationResult)] == [True, False]
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"trials": 10, "p": 0.5}]


@tool
def note(title: str, body: str) -> str:
    """Save a note.

    Args:
        title: the note's title
        body: the note's text
    """
    return f"saved {title!r}"


def test_a_call_cut_off_by_the_token_limit_is_asked_again_with_short_strings(server):
    cut = '{"name": "note", "arguments": {"title": "JFK-LAX-2025-17.48.36.99-JFK-LAX-2025'
    server.script(text(cut), text('{"name": "note", "arguments": {"title": "Trip", "body": "LAX"}}'), text("Saved."))
    r = Agent(provider(server, settings={"max_tokens": 40}), [note]).run("Note my trip to LAX")
    assert r.error is None and r.output == "Saved."
    assert [b["max_tokens"] for b in server.bodies] == [40, 80, 40]  # room for the whole call, once
    fixes = [e for e in r.events if isinstance(e, CallRepair)]
    assert len(fixes) == 1 and fixes[0].repaired and fixes[0].rejected is None
    assert "cut off" in fixes[0].errors[0] and "strings of at most 32 characters; max_tokens 80" in fixes[0].detail
    schema = server.bodies[1]["response_format"]["json_schema"]["schema"]["properties"]["arguments"]
    assert schema["properties"]["title"]["maxLength"] == 32 and schema["properties"]["body"]["maxLength"] == 32
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"title": "Trip", "body": "LAX"}]


def test_a_raw_newline_inside_a_string_is_read_as_that_character(server):
    # llama-cpp-python's grammar lets a model write control characters raw inside strings
    server.script(text('{"name": "note", "arguments": {"title": "a\nb", "body": "x\ty"}}'), text("Saved."))
    r = Agent(provider(server), [note]).run("Note it")
    assert r.error is None and not any(isinstance(e, CallRepair) for e in r.events)
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"title": "a\nb", "body": "x\ty"}]


def test_a_call_after_a_fallback_to_json_object_is_still_read_as_constrained_and_repaired(server):
    # llama-cpp-python refuses json_schema; the reply to the json_object retry is constrained too
    refusal = "Input should be 'text' or 'json_object' ('body', 'response_format', 'type')"
    server.script(error(500, refusal, retry_after_ms=1), text(BAD), text(GOOD), text('{"answer": "0.5"}'))
    r = Agent(provider(server), [binomial]).run("10 flips, p?")
    assert r.error is None and CALLED == [0.5]
    assert [type(e).__name__ for e in r.events if isinstance(e, ConstraintDropped | CallRepair)] == [
        "ConstraintDropped",
        "CallRepair",
    ]
    assert server.bodies[2]["response_format"]["type"] == "json_object"
