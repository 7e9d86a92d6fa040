"""AnthropicProvider through the real anthropic SDK over HTTP, against the scripted Messages server."""

from __future__ import annotations

import asyncio
import traceback
from typing import Any

import anthropic_wire_server as w
import pytest

pytest.importorskip("anthropic")

from agentnb import Agent, ToolContext, tool
from agentnb.errors import (
    AuthenticationError,
    ModelNotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    UserError,
)
from agentnb.events import TextDelta, ToolCallDelta
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
from agentnb.providers import Completion, Request, TextChunk, ToolCallChunk, get_provider
from agentnb.providers.anthropic import AnthropicProvider

KEY = "sk-ant-test-0123456789abcdef"
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
    with w.MessagesServer() as server:
        yield server


@pytest.fixture
def provider(wire):
    return AnthropicProvider("claude-test", api_key=KEY, base_url=wire.url, max_retries=1)


def complete(p: AnthropicProvider, request: Request) -> Completion:
    return asyncio.run(p.complete(request))


def stream(p: AnthropicProvider, request: Request) -> list[Any]:
    async def collect() -> list[Any]:
        return [item async for item in p.stream(request)]

    return asyncio.run(collect())


# -- what is sent ---------------------------------------------------------------------------


def test_plain_request_system_max_tokens_and_key_header(provider, wire):
    wire.script(w.text("Hello."))
    c = complete(provider, Request([SystemMessage("Be brief."), UserMessage("hi")]))
    assert c == Completion("Hello.", (), Usage(21, 9), "end_turn")
    (body,) = wire.bodies
    assert body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert wire.requests[0].path == "/v1/messages"
    headers = wire.requests[0].headers  # the SDK's auth header differs between versions
    assert headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"


def test_tools_tool_choice_and_a_whole_tool_conversation(provider, wire):
    wire.script(*[w.text("ok")] * 4)
    history = [
        UserMessage("add 1 and 2, and take a picture"),
        AssistantMessage("Sure.", (ToolCall("t1", "add", {"a": 1, "b": 2}), ToolCall("t2", "snap", {}))),
        ToolMessage("t1", "add", "3"),
        ToolMessage("t2", "snap", "Error: no camera", True),
    ]
    for choice in ("auto", "required", "none", "add"):
        complete(provider, Request(history, [add, snap], tool_choice=choice))
    bodies = wire.bodies
    assert "tool_choice" not in bodies[0]
    assert [b.get("tool_choice") for b in bodies[1:]] == [
        {"type": "any"},
        {"type": "none"},
        {"type": "tool", "name": "add"},
    ]
    assert bodies[0]["tools"][0] == {"name": "add", "description": "Add two integers.", "input_schema": add.parameters}
    assert bodies[0]["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Sure."},
                {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "t2", "name": "snap", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "3"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "Error: no camera", "is_error": True},
            ],
        },
    ]


def test_tool_images_go_inside_the_tool_result(provider, wire):
    wire.script(w.tool_use(("snap", {})), w.text("A picture."))
    result = Agent(provider, tools=[snap]).run("picture please")
    assert result.output == "A picture."
    last = wire.bodies[1]["messages"][-1]
    assert last["role"] == "user"
    (block,) = last["content"]
    assert block["type"] == "tool_result" and block["tool_use_id"] == "toolu_1"
    assert block["content"][0] == {"type": "text", "text": "took it"}
    assert block["content"][1]["source"]["media_type"] == "image/png"
    assert block["content"][1]["source"]["data"] == Image(PNG).b64


def test_without_tools_on_offer_earlier_tool_blocks_go_as_text(provider, wire):
    wire.script(w.text("fine"))
    history = [
        UserMessage("x"),
        AssistantMessage(None, (ToolCall("t1", "add", {"a": 1, "b": 2}),)),
        ToolMessage("t1", "add", "3"),
    ]
    complete(provider, Request(history))
    body = wire.bodies[0]
    assert "tools" not in body
    assert body["messages"][1] == {"role": "assistant", "content": '[called add with {"a": 1, "b": 2}]'}
    assert body["messages"][2] == {"role": "user", "content": "[result of add: 3]"}


def test_settings_known_and_extra(wire):
    p = AnthropicProvider(
        "m", api_key=KEY, base_url=wire.url, settings={"temperature": 0.2, "max_tokens": 50, "top_k": 3}
    )
    wire.script(w.text("x"))
    complete(p, Request([UserMessage("hi")]))
    body = wire.bodies[0]
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50 and body["top_k"] == 3


# -- what is read ---------------------------------------------------------------------------


def test_parallel_tool_use_json(provider, wire):
    wire.script(w.tool_use(("add", {"a": 1, "b": 2}), ("add", {"a": 5, "b": 5}, "toolu_x"), content="Adding."))
    c = complete(provider, Request([UserMessage("go")], [add]))
    assert c.text == "Adding." and c.finish_reason == "tool_use"
    assert c.tool_calls == (ToolCall("toolu_1", "add", {"a": 1, "b": 2}), ToolCall("toolu_x", "add", {"a": 5, "b": 5}))


def test_streaming_assembles_text_and_input_json_deltas(provider, wire):
    wire.script(w.tool_use(("add", {"a": 10, "b": 20}), ("add", {"a": 1, "b": 1}), content="Let me add.", pieces=4))
    items = stream(provider, Request([UserMessage("go")], [add]))
    text = "".join(i.text for i in items if isinstance(i, TextChunk))
    assert text == "Let me add."
    calls = [i for i in items if isinstance(i, ToolCallChunk)]
    assert calls[0] == ToolCallChunk(1, "toolu_1", "add")  # the content block's index
    assert len([c for c in calls if c.arguments]) >= 4  # the JSON really came in pieces
    final = items[-1]
    assert isinstance(final, Completion)
    assert final.tool_calls == (
        ToolCall("toolu_1", "add", {"a": 10, "b": 20}),
        ToolCall("toolu_2", "add", {"a": 1, "b": 1}),
    )
    assert final.usage == Usage(21, 9) and final.finish_reason == "tool_use"


def test_a_streamed_agent_run(provider, wire):
    wire.script(w.tool_use(("add", {"a": 2, "b": 3})), w.text("It is 5."))
    events = []
    result = Agent(provider, tools=[add], stream=True).run("2+3?", on_event=events.append)
    assert result.output == "It is 5." and result.usage == Usage(42, 18)
    assert any(isinstance(e, ToolCallDelta) for e in events) and any(isinstance(e, TextDelta) for e in events)
    assert wire.bodies[1]["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5"}
    ]


@pytest.mark.parametrize("streaming", [False, True])
def test_thinking_blocks_are_kept_and_sent_back_never_shown(provider, wire, streaming):
    wire.script(w.tool_use(("add", {"a": 1, "b": 1}), thinking="secret plan"), w.text("2"))
    result = Agent(provider, tools=[add], stream=streaming).run("1+1")
    assert result.output == "2"
    (assistant,) = [m for m in result.messages if isinstance(m, AssistantMessage) and m.tool_calls]
    assert assistant.content is None  # the thinking is not text
    assert assistant.reasoning == ({"type": "thinking", "thinking": "secret plan", "signature": "sig-secr"},)
    assert message_from_dict(assistant.to_dict()) == assistant  # survives transcript save/load
    sent = wire.bodies[1]["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "secret plan", "signature": "sig-secr"}
    assert sent[1]["type"] == "tool_use"


# -- errors and keys ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "error", "text"),
    [
        (w.error(401, f"invalid x-api-key {KEY}", "authentication_error"), AuthenticationError, "rejected the API key"),
        (w.error(404, "model: claude-nope", "not_found_error"), ModelNotFoundError, "not found"),
        (w.error(429, "slow down", "rate_limit_error"), RateLimitError, "after 1 retries"),
        (w.error(529, "Overloaded", "overloaded_error"), ServerError, "Overloaded"),
        (
            w.error(400, "messages: bad", "invalid_request_error"),
            ProviderError,
            r"refused the request \(400\): messages: bad",
        ),
    ],
)
def test_errors_are_typed_retried_and_keyless(provider, wire, reply, error, text):
    retried = reply.status in (429, 529)
    wire.script(*([reply] * (2 if retried else 1)))
    with pytest.raises(error, match=text) as info:
        complete(provider, Request([UserMessage("hi")]))
    assert len(wire.requests) == (2 if retried else 1)
    shown = "".join(traceback.format_exception(info.value))
    assert KEY not in shown and info.value.__cause__ is None and info.value.__suppress_context__


def test_an_error_event_mid_stream(provider, wire):
    wire.script(w.Reply(content=[{"type": "text", "text": "partial"}], stream_error="Overloaded now"))
    with pytest.raises(ServerError, match=r"mid-stream.*Overloaded now"):
        stream(provider, Request([UserMessage("hi")]))


@pytest.mark.parametrize("cut", [0, 5])
def test_a_stream_cut_off_without_a_stop_reason_is_an_error_and_the_run_keeps_its_transcript(provider, wire, cut):
    # The server closes the stream cleanly half way: no message_delta, no message_stop.
    reply = w.Reply(content=[{"type": "text", "text": "an answer that never ends"}], cut_after=cut)
    wire.script(reply)
    with pytest.raises(ProviderError, match=r"ended .*no stop_reason; the answer is incomplete"):
        stream(provider, Request([UserMessage("hi")]))
    wire.script(reply)
    r = Agent(provider, stream=True).run("hi")
    assert r.stop_reason == "error" and "incomplete" in r.error and KEY not in r.error
    assert [m.role for m in r.messages] == ["user"]


def test_no_server_is_a_clear_error():
    p = AnthropicProvider("m", api_key=KEY, base_url="http://127.0.0.1:9", max_retries=0)
    with pytest.raises(ProviderError, match="could not connect"):
        complete(p, Request([UserMessage("hi")]))


def test_key_from_env_spec_and_hygiene(monkeypatch, wire):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UserError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("m")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    p = get_provider("anthropic:claude-test", base_url=f"http://u:pw@127.0.0.1:{wire.url.rsplit(':', 1)[1]}")
    assert isinstance(p, AnthropicProvider) and p.model == "claude-test"
    for text in (repr(p), repr(vars(p)), str(p.__dict__)):
        assert KEY not in text and "pw" not in repr(p)
    wire.script(w.text("hello"))
    result = Agent(p).run("hi")
    assert result.output == "hello"
    import json

    assert KEY not in json.dumps([e.to_dict() for e in result.events], default=str)
