"""End-to-end agent runs through OpenAIProvider and the real openai SDK, over HTTP."""

from __future__ import annotations

import io
import json
import logging

import openai_wire_server as w
import pytest
from openai_fixtures import *  # noqa: F403 - the wire and provider fixtures
from openai_fixtures import KEY

from agentnb import Agent, tool
from agentnb.events import RunFinished, TextDelta, ToolCallDelta
from agentnb.messages import AssistantMessage, ToolMessage, UserMessage
from agentnb.printer import TextPrinter
from agentnb.tools import ToolContext

RAN: list[tuple[int, int]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    RAN.append((a, b))
    return a + b


@tool
def plot(title: str, ctx: ToolContext) -> str:
    """Draw a chart and show it to the model."""
    ctx.attach_image(b"\x89PNG\r\n\x1a\nchart", "image/png")
    return f"drew {title}"


@pytest.fixture(autouse=True)
def _clear_ran() -> None:
    RAN.clear()


modes = pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])


@modes
def test_one_tool_call_then_an_answer(provider, wire, stream):
    wire.script(w.tool_calls(("add", {"a": 2, "b": 3}, "c1")), w.text("2 + 3 = 5"))
    r = Agent(provider, [add], stream=stream).run("What is 2 + 3?")
    assert (r.output, r.stop_reason, r.tool_calls, RAN) == ("2 + 3 = 5", "answer", 1, [(2, 3)])
    tools = len(json.dumps(wire.bodies[0]["tools"])) // 4  # the scripted server counts them, as servers do
    assert r.usage.input_tokens == 2 * (11 + tools) and r.usage.output_tokens == 14  # two calls of (11, 7)
    second = wire.bodies[1]["messages"]
    assert second[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}],
    }
    assert second[2] == {"role": "tool", "tool_call_id": "c1", "content": "5"}
    if stream:
        assert any(isinstance(e, TextDelta) for e in r.events)
        assert any(isinstance(e, ToolCallDelta) for e in r.events)


@modes
def test_parallel_calls_run_and_keep_their_order(provider, wire, stream):
    calls = [("add", {"a": 1, "b": 1}, "c1"), ("add", {"a": 2, "b": 2}, "c2"), ("add", {"a": 3, "b": 3}, "c3")]
    wire.script(w.tool_calls(*calls, interleave=True, pieces=4), w.text("2, 4, 6"))
    r = Agent(provider, [add], stream=stream).run("three sums")
    assert r.tool_calls == 3 and sorted(RAN) == [(1, 1), (2, 2), (3, 3)]
    tool_msgs = [m for m in wire.bodies[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_msgs] == [("c1", "2"), ("c2", "4"), ("c3", "6")]


@modes
def test_invalid_json_arguments_are_reported_and_repaired(provider, wire, stream):
    wire.script(
        w.tool_calls(("add", '{"a": 2, "b": ', "c1")),
        w.tool_calls(("add", {"a": 2, "b": 3}, "c2")),
        w.text("5"),
    )
    r = Agent(provider, [add], stream=stream).run("2 + 3?")
    assert (r.output, RAN) == ("5", [(2, 3)])  # the broken call never ran, the repaired one did
    sent = wire.bodies[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["arguments"] == '{"a": 2, "b": '  # the model sees what it wrote
    assert sent[2]["tool_call_id"] == "c1" and "not valid JSON" in sent[2]["content"]


@modes
def test_depth_limit_takes_tools_away(provider, wire, stream):
    wire.script(
        w.tool_calls(("add", {"a": 1, "b": 0}, "c1")),
        w.tool_calls(("add", {"a": 2, "b": 0}, "c2")),
        w.text("enough"),
    )
    r = Agent(provider, [add], max_tool_calls=2, stream=stream).run("keep adding")
    assert (r.stop_reason, r.tool_calls, r.output) == ("limit", 2, "enough")
    assert ["tools" in b for b in wire.bodies] == [True, True, False]


@modes
def test_tool_images_reach_the_model_as_data_urls(provider, wire, stream):
    wire.script(w.tool_calls(("plot", {"title": "sales"}, "c1")), w.text("I see the chart"))
    r = Agent(provider, [plot], stream=stream).run("plot sales")
    assert r.output == "I see the chart"
    last = wire.bodies[1]["messages"][-1]
    assert last["role"] == "user"
    assert last["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgpjaGFydA=="},
    }


def test_mid_stream_disconnect_ends_the_run_with_its_transcript(provider, wire):
    wire.script(
        w.tool_calls(("add", {"a": 2, "b": 3}, "c1")),
        w.text("The answer is five, as you can see", pieces=8, disconnect_after=4),
    )
    r = Agent(provider, [add], stream=True).run("2 + 3?")
    assert r.stop_reason == "error" and "broke mid-stream" in (r.error or "")
    assert [type(m) for m in r.messages] == [UserMessage, AssistantMessage, ToolMessage]  # step 1 kept
    assert r.messages[-1].content == "5"
    assert any(isinstance(e, TextDelta) for e in r.events)  # the partial text was seen live
    end = r.events[-1]
    assert isinstance(end, RunFinished) and end.stop_reason == "error"


def test_server_failure_ends_the_run_with_its_transcript(provider, wire):
    wire.script(w.tool_calls(("add", {"a": 2, "b": 3}, "c1")), *[w.error(503, "overloaded")] * 3)
    r = Agent(provider, [add]).run("2 + 3?")
    assert r.stop_reason == "error" and "ServerError" in (r.error or "") and "overloaded" in (r.error or "")
    assert len(r.messages) == 3 and RAN == [(2, 3)]


def test_the_key_appears_in_no_output(provider, wire, caplog):
    caplog.set_level(logging.DEBUG)
    wire.script(
        w.tool_calls(("add", {"a": 2, "b": 3}, "c1")),
        w.error(401, f"Incorrect API key provided: {KEY}. You can find your key at ..."),
    )
    out = io.StringIO()
    r = Agent(provider, [add], stream=True).run("2 + 3?", on_event=TextPrinter(out))
    assert r.stop_reason == "error" and "Incorrect API key provided" in (r.error or "")
    assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was really used
    outputs = {
        "repr(provider)": repr(provider),
        "events": "\n".join(repr(e) + json.dumps(e.to_dict(), default=str) for e in r.events),
        "to_dict": json.dumps(r.to_dict()),
        "repr(result)": repr(r),
        "printer": out.getvalue(),
        "logs": "\n".join(f"{rec.getMessage()} {rec.args!r}" for rec in caplog.records),
    }
    leaked = [where for where, text in outputs.items() if KEY in text]
    assert not leaked, f"the key leaked into {leaked}"
    assert caplog.records  # the SDK did log at DEBUG level, so the check looked at something
