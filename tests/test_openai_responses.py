"""OpenAIProvider(api="responses") through the real openai SDK against a scripted Responses server."""

from __future__ import annotations

import asyncio
import json
import traceback
from typing import Any

import openai_responses_server as r
import pytest

pytest.importorskip("openai")

from agentnb import Agent, ToolContext, tool
from agentnb.errors import AuthenticationError, ProviderError, RateLimitError, ServerError, UserError
from agentnb.events import ReasoningSummary, TextDelta, ToolCallDelta
from agentnb.messages import (
    AssistantMessage,
    Image,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    message_from_dict,
)
from agentnb.printer import format_event
from agentnb.providers import Completion, Request, TextChunk, ToolCallChunk, get_provider
from agentnb.providers.openai import OpenAIProvider
from agentnb.run.result import RunResult

KEY = "sk-responses-test-0123456789"
PNG = b"\x89PNG\r\n\x1a\nfake"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def snap(ctx: ToolContext) -> str:
    """Take a picture."""
    ctx.attach_image(PNG)
    return "took it"


@pytest.fixture
def wire():
    with r.ResponsesServer() as server:
        yield server


@pytest.fixture
def provider(wire):
    return OpenAIProvider("o-test", api="responses", api_key=KEY, base_url=wire.url, max_retries=1)


def complete(p: OpenAIProvider, request: Request) -> Completion:
    return asyncio.run(p.complete(request))


def stream(p: OpenAIProvider, request: Request) -> list[Any]:
    async def collect() -> list[Any]:
        return [item async for item in p.stream(request)]

    return asyncio.run(collect())


def test_spec_and_default_route(wire):
    p = get_provider("openai-responses:o-test", base_url=wire.url, api_key=KEY)
    assert isinstance(p, OpenAIProvider) and p.api == "responses" and "api='responses'" in repr(p)
    assert get_provider("openai:o-test", base_url=wire.url).api == "chat"  # Chat Completions stays the default
    with pytest.raises(UserError, match="'chat' or 'responses'"):
        OpenAIProvider("m", base_url=wire.url, api="assistants")


def test_request_shape_tools_choice_and_conversation(provider, wire):
    wire.script(*[r.text("ok")] * 4)
    history = [
        SystemMessage("be brief"),
        UserMessage("add, then picture"),
        AssistantMessage("On it.", (ToolCall("c1", "add", {"a": 1, "b": 2}), ToolCall("c2", "snap", {}))),
        ToolMessage("c1", "add", "3"),
        ToolMessage("c2", "snap", "took it"),
        UserMessage("[Attached image(s) from tool result]", (Image(PNG),)),
    ]
    for choice in ("auto", "required", "none", "add"):
        complete(provider, Request(history, [add, snap], tool_choice=choice, settings={"max_tokens": 64}))
    first = wire.bodies[0]
    assert wire.requests[0].path == "/v1/responses"
    assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert "tool_choice" not in first and first["max_output_tokens"] == 64
    assert [b.get("tool_choice") for b in wire.bodies[1:]] == ["required", "none", {"type": "function", "name": "add"}]
    assert first["tools"][0] == {
        "type": "function",
        "name": "add",
        "description": "Add two integers.",
        "parameters": add.parameters,
        "strict": False,
    }
    assert first["input"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "add, then picture"},
        {"role": "assistant", "content": "On it."},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "function_call", "call_id": "c2", "name": "snap", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
        {"type": "function_call_output", "call_id": "c2", "output": "took it"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "[Attached image(s) from tool result]"},
                {"type": "input_image", "image_url": Image(PNG).data_url},
            ],
        },
    ]


def test_parallel_calls_text_and_usage(provider, wire):
    wire.script(r.calls(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}, "call_x")))
    c = complete(provider, Request([UserMessage("go")], [add]))
    assert c.tool_calls == (ToolCall("call_r1", "add", {"a": 1, "b": 2}), ToolCall("call_x", "add", {"a": 3, "b": 4}))
    assert c.usage == Usage(31, 12) and c.finish_reason == "tool_calls"
    wire.script(r.text("Seven."))
    assert complete(provider, Request([UserMessage("go")])) == Completion("Seven.", (), Usage(31, 12), "completed")


def test_bad_arguments_stay_visible(provider, wire):
    wire.script(r.calls(("add", '{"a": 1,')))
    (call,) = complete(provider, Request([UserMessage("go")], [add])).tool_calls
    assert call.arguments is None and call.raw_arguments == '{"a": 1,' and "not valid JSON" in call.parse_error


def test_streaming_assembles_text_and_argument_deltas(provider, wire):
    wire.script(r.calls(("add", {"a": 10, "b": 20}), ("add", {"a": 1, "b": 1}), pieces=4))
    items = stream(provider, Request([UserMessage("go")], [add]))
    chunks = [i for i in items if isinstance(i, ToolCallChunk)]
    assert chunks[0] == ToolCallChunk(0, "call_r1", "add", "")
    assert len([c for c in chunks if c.arguments and c.index == 0]) == 4
    final = items[-1]
    assert final.tool_calls == (
        ToolCall("call_r1", "add", {"a": 10, "b": 20}),
        ToolCall("call_r2", "add", {"a": 1, "b": 1}),
    )
    wire.script(r.text("Thirty.", pieces=3))
    items = stream(provider, Request([UserMessage("go")]))
    assert [i.text for i in items if isinstance(i, TextChunk)] == ["Thi", "rty", "."]
    assert items[-1] == Completion("Thirty.", (), Usage(31, 12), "completed")


@pytest.mark.parametrize("streaming", [False, True])
def test_reasoning_items_go_back_survive_transcripts_and_only_summaries_show(provider, wire, streaming):
    wire.script(
        r.calls(("add", {"a": 2, "b": 3}), before=[r.reasoning("rs_1", "Need to add.")]),
        r.calls(("add", {"a": 5, "b": 5}), before=[r.reasoning("rs_2")]),
        r.text("Ten."),
    )
    events: list[Any] = []
    result = Agent(provider, tools=[add], stream=streaming).run("2+3, then +5", on_event=events.append)
    assert result.output == "Ten."
    steps = [m for m in result.messages if isinstance(m, AssistantMessage) and m.tool_calls]
    assert [m.reasoning[0]["id"] for m in steps] == ["rs_1", "rs_2"]
    assert all(m.content is None for m in steps)  # reasoning is never text
    # Sent back in front of its call, as the API received it (encrypted content included).
    second = wire.bodies[1]["input"]
    assert second[1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need to add."}],
        "encrypted_content": "enc-rs_1",
    }
    assert second[2]["type"] == "function_call" and second[2]["call_id"] == "call_r1"
    assert [i.get("id") for i in wire.bodies[2]["input"] if i.get("type") == "reasoning"] == ["rs_1", "rs_2"]
    # The summary is an event (at its depth); the hidden reasoning itself is in no event.
    (summary,) = [e for e in events if isinstance(e, ReasoningSummary)]
    assert summary.depth == 0 and summary.text == "Need to add."
    assert "reasoning summary: Need to add." in format_event(summary)
    pytest.importorskip("ipywidgets")
    from agentnb.notebook.trace.render import depth_html
    from agentnb.notebook.trace.state import TraceState

    state = TraceState()
    for event in result.events:
        state.add(event)
    assert "reasoning summary" in depth_html(state.view(0)) and "Need to add." in depth_html(state.view(0))
    assert "enc-rs_1" not in json.dumps([e.to_dict() for e in result.events], default=str)
    if streaming:
        assert any(isinstance(e, ToolCallDelta) for e in events)
    # A saved and reloaded transcript sends the same reasoning back.
    saved = json.loads(json.dumps([m.to_dict() for m in result.messages]))
    reloaded = [message_from_dict(d) for d in saved]
    assert reloaded == list(result.messages)
    wire.script(r.text("again"))
    Agent(provider, tools=[add]).run("more", history=reloaded)
    assert [i.get("id") for i in wire.bodies[3]["input"] if i.get("type") == "reasoning"] == ["rs_1", "rs_2"]


def test_streamed_text_deltas_reach_the_agent(provider, wire):
    wire.script(r.text("Hello world"))
    events: list[Any] = []
    result = Agent(provider, stream=True).run("hi", on_event=events.append)
    assert isinstance(result, RunResult) and result.output == "Hello world"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello world"


@pytest.mark.parametrize(
    ("reply", "error", "text"),
    [
        (r.error(401, f"bad key {KEY}"), AuthenticationError, "rejected the API key"),
        (r.error(429, "slow down"), RateLimitError, "after 1 retries"),
        (r.error(500, "boom"), ServerError, "failed after 1 retries"),
    ],
)
def test_errors_are_typed_and_keyless(provider, wire, reply, error, text):
    wire.script(reply, reply)
    with pytest.raises(error, match=text) as info:
        complete(provider, Request([UserMessage("hi")]))
    shown = "".join(traceback.format_exception(info.value))
    assert KEY not in shown and info.value.__cause__ is None


def test_a_failed_response_mid_stream(provider, wire):
    wire.script(r.Reply(output=r.text("partial").output, fail="the model crashed"))
    with pytest.raises(ServerError, match="the model crashed"):
        stream(provider, Request([UserMessage("hi")]))


def test_no_server_is_a_clear_error():
    p = OpenAIProvider("m", api="responses", api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(ProviderError, match="could not connect"):
        complete(p, Request([UserMessage("hi")]))
