"""Tool calls a server leaves in the reply's text on the native route (agentnb.providers.openai.text_calls),
read by the parser alone and end to end through the scripted OpenAI-compatible server."""

from __future__ import annotations

import io

import pytest

from agentnb import Agent, tool
from agentnb.events import CallsFromText, TextDelta, ToolFinished
from agentnb.notebook.trace.render import depth_html
from agentnb.notebook.trace.state import TraceState
from agentnb.printer import TextPrinter
from agentnb.providers import OpenAIProvider
from agentnb.providers.openai.text_calls import CallGate, calls_in_text
from agentnb.testing import ScriptedServer
from agentnb.testing.server import text, tool_calls

NAMES = ["add", "weather"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.parametrize(
    ("reply", "prose", "calls"),
    [
        (
            '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
            None,
            [("add", {"a": 2, "b": 3})],
        ),
        (
            'I will look both up.\n<tool_call>{"name": "weather", "arguments": {"city": "Oslo"}}</tool_call>\n'
            '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 1}}</tool_call>',
            "I will look both up.",
            [("weather", {"city": "Oslo"}), ("add", {"a": 1, "b": 1})],
        ),
        ('<|python_tag|>{"name": "weather", "parameters": {"city": "Rome"}}', None, [("weather", {"city": "Rome"})]),
        ('[TOOL_CALLS][{"name": "add", "arguments": {"a": 4, "b": 5}}]', None, [("add", {"a": 4, "b": 5})]),
        ('[TOOL_CALLS]add[ARGS]{"a": 6, "b": 7}', None, [("add", {"a": 6, "b": 7})]),
        ('```json\n{"name": "add", "arguments": {"a": 8, "b": 9}}\n```', None, [("add", {"a": 8, "b": 9})]),
        ('  {"name": "weather", "arguments": "{\\"city\\": \\"Lima\\"}"}  ', None, [("weather", {"city": "Lima"})]),
        ('<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}', None, [("add", {"a": 1, "b": 2})]),  # unclosed
    ],
)
def test_calls_written_as_text_are_read(reply, prose, calls):
    found = calls_in_text(reply, NAMES)
    assert found is not None
    assert found[0] == prose and [(c.name, c.arguments) for c in found[1]] == calls
    assert len({c.id for c in found[1]}) == len(calls)


@pytest.mark.parametrize(
    "reply",
    [
        "The answer is 5.",
        "Use a dict like {'a': 1} here.",
        'Here is JSON: {"name": "add", "arguments": {"a": 1}}',  # prose around a bare call: an answer
        '{"name": "delete_everything", "arguments": {}}',  # not on offer
        '{"city": "Oslo"}',  # no name
        "<tool_call>not json</tool_call>",
        '[TOOL_CALLS]launch[ARGS]{"x": 1}',
        '{"name": "add", "arguments": [1, 2]}',
        "",
    ],
)
def test_prose_and_calls_to_tools_not_on_offer_stay_text(reply):
    assert calls_in_text(reply, NAMES) is None


def test_the_gate_streams_prose_and_holds_what_may_be_a_call():
    gate = CallGate()
    shown = [gate.feed(p) for p in ["Sure. Let me ", "check <to", "ol_call>{", '"name": "add"}</tool_call>']]
    assert "".join(shown) == "Sure. Let me check " and "<to" not in shown[1]
    gate = CallGate()
    shown = [gate.feed(p) for p in ["Bold <", "b>text</b> and {braces}"]]
    assert "".join(shown) + gate.rest() == "Bold <b>text</b> and {braces}"
    gate = CallGate()
    assert gate.feed("  ") == "" and gate.feed('{"name"') == "" and gate.rest() == '  {"name"'


TAGGED = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tool_calling", ["native", "auto"])
def test_a_call_left_in_the_text_runs_on_the_native_route(stream, tool_calling):
    with ScriptedServer() as server:
        p = OpenAIProvider("m", base_url=server.url, max_retries=0, timeout=20, tool_calling=tool_calling)
        server.script(text("Let me add them.\n" + TAGGED), text("It is 5."))
        out = io.StringIO()
        r = Agent(p, [add], stream=stream).run("2 + 3?", on_event=TextPrinter(out))
        bodies, probes = server.bodies, len(server.probes)
    assert r.error is None and r.output == "It is 5."
    assert [(e.name, e.result) for e in r.events if isinstance(e, ToolFinished)] == [("add", "5")]
    notes = [e for e in r.events if isinstance(e, CallsFromText)]
    assert len(notes) == 1 and notes[0].names == ("add",)
    assert "read 1 tool call (add) from the reply's text" in out.getvalue()
    # the call goes back to the server as a native call, with its result under the same id
    sent = bodies[1]["messages"]
    call = sent[-2]["tool_calls"][0]
    assert call["function"]["name"] == "add" and sent[-1] == {
        "role": "tool",
        "tool_call_id": call["id"],
        "content": "5",
    }
    assert sent[-2]["content"] == "Let me add them."
    # auto checks ahead, once, that the tools reach the model (two one-token probes)
    assert probes == (2 if tool_calling == "auto" else 0) and p.route == "native"
    if stream:  # the prose streamed; the tagged call never did
        assert "".join(e.text for e in r.events if isinstance(e, TextDelta)).startswith("Let me add them.")
        assert "<tool_call>" not in "".join(e.text for e in r.events if isinstance(e, TextDelta))
    state = TraceState()
    for e in r.events:
        state.add(e)
    assert "calls read from text" in depth_html(state.depths[0])


@pytest.mark.parametrize("stream", [False, True])
def test_prose_with_braces_is_an_answer_and_streams_whole(stream):
    reply = "Use {a} and {b} in the template.\nThen <b>bold</b> it."
    with ScriptedServer() as server:
        p = OpenAIProvider("m", base_url=server.url, max_retries=0, timeout=20, tool_calling="native")
        server.script(text(reply, pieces=7))
        r = Agent(p, [add], stream=stream).run("How do templates work?")
    assert r.output == reply and r.tool_calls == 0
    assert not any(isinstance(e, CallsFromText) for e in r.events)
    if stream:
        assert "".join(e.text for e in r.events if isinstance(e, TextDelta)) == reply


def test_native_calls_and_tool_choice_none_are_left_alone():
    with ScriptedServer() as server:
        p = OpenAIProvider("m", base_url=server.url, max_retries=0, timeout=20, tool_calling="native")
        server.script(tool_calls(("c1", "add", '{"a": 1, "b": 1}')), text("2."), text(TAGGED))
        first = Agent(p, [add]).run("1 + 1?")
        second = Agent(p, [add], tool_choice="none").run("Show me a call as text.")
    assert first.output == "2." and not any(isinstance(e, CallsFromText) for e in first.events)
    assert second.tool_calls == 0 and second.output == TAGGED.strip()


def test_a_structured_answer_is_never_read_as_a_call():
    # With an output_type the reply's JSON is the answer, even where it looks like a call.
    answer = '{"name": "add", "arguments": {"a": 1, "b": 2}}'
    with ScriptedServer() as server:
        p = OpenAIProvider("m", base_url=server.url, max_retries=0, timeout=20, tool_calling="native")
        server.script(text(answer))
        r = Agent(p, [add], output_type=dict).run("Give me the call as data.")
    assert r.error is None and r.tool_calls == 0 and r.value == {"name": "add", "arguments": {"a": 1, "b": 2}}


@pytest.mark.timeout(60)  # a hang guard: a fence pattern once took quadratic time (155 s on 100k)
@pytest.mark.parametrize("reply", ["```" + "x" * 300_000, "```json\n" + "y " * 150_000, "<tool_call>" * 30_000])
def test_long_hostile_replies_are_read_in_linear_time(reply):
    assert calls_in_text(reply, NAMES) is None
    gate = CallGate()
    shown = "".join(gate.feed(reply[i : i + 7]) for i in range(0, len(reply), 7)) + gate.rest()
    assert shown == reply
