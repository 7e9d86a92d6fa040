"""OpenAIProvider through the real openai SDK over HTTP, against the scripted wire server."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
from typing import Any

import openai_wire_server as w
import pytest
from openai_fixtures import *  # noqa: F403 - the wire and provider fixtures
from openai_fixtures import KEY

from agentnb import tool
from agentnb.errors import (
    AuthenticationError,
    MissingDependencyError,
    ModelNotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    UserError,
)
from agentnb.messages import AssistantMessage, Image, SystemMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentnb.providers import Completion, Request, TextChunk, ToolCallChunk, get_provider
from agentnb.providers.openai import OpenAIProvider


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first
        b: second
    """
    return a + b


@tool
def echo(text: str) -> str:
    """Repeat the text."""
    return text


def complete(p: OpenAIProvider, request: Request) -> Completion:
    return asyncio.run(p.complete(request))


def stream(p: OpenAIProvider, request: Request) -> list[Any]:
    async def collect() -> list[Any]:
        return [item async for item in p.stream(request)]

    return asyncio.run(collect())


HI = Request([UserMessage("hi")])


# -- what is sent ---------------------------------------------------------------------------


def test_plain_request_sends_no_tools_and_reads_text_and_usage(provider, wire):
    wire.script(w.text("Hello there."))
    c = complete(provider, HI)
    assert c == Completion("Hello there.", (), Usage(11, 7), "stop")
    (body,) = wire.bodies
    assert body == {"model": "wire-model", "messages": [{"role": "user", "content": "hi"}]}
    assert wire.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_conversation_with_tools_tool_messages_and_images_is_sent_exactly(provider, wire):
    png = b"\x89PNG\r\n\x1a\nfake"
    messages = [
        SystemMessage("be brief"),
        UserMessage("add and echo"),
        AssistantMessage(
            "calling",
            (ToolCall("c1", "add", {"a": 1, "b": 2}), ToolCall("c2", "echo", None, '{"text": "x', "bad JSON")),
        ),
        ToolMessage("c1", "add", "3"),
        ToolMessage("c2", "echo", "Invalid arguments for echo; it was not run", is_error=True),
        UserMessage("[Attached image(s) from tool result]", (Image(png, "image/png"),)),
    ]
    wire.script(w.text("ok"))
    complete(provider, Request(messages, [add, echo]))
    (body,) = wire.bodies
    assert body["tools"] == [add.openai_schema(), echo.openai_schema()]
    assert "tool_choice" not in body  # "auto" is the API default
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "add and echo"},
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
                {"id": "c2", "type": "function", "function": {"name": "echo", "arguments": '{"text": "x'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
        {"role": "tool", "tool_call_id": "c2", "content": "Invalid arguments for echo; it was not run"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[Attached image(s) from tool result]"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgpmYWtl"}},
            ],
        },
    ]


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("required", "required"),
        ("none", "none"),
        ("add", {"type": "function", "function": {"name": "add"}}),
    ],
)
def test_tool_choice_maps_to_the_api(provider, wire, choice, sent):
    wire.script(w.text("ok"))
    complete(provider, Request([UserMessage("x")], [add], tool_choice=choice))
    assert wire.bodies[0]["tool_choice"] == sent


def test_settings_pass_through_and_unknown_keys_go_in_the_body(wire):
    p = OpenAIProvider("m", api_key=KEY, base_url=wire.url, settings={"temperature": 0.5, "seed": 1})
    wire.script(w.text("ok"))
    complete(p, Request([UserMessage("x")], settings={"temperature": 0, "max_tokens": 5, "top_k": 3}))
    body = wire.bodies[0]
    assert (body["temperature"], body["seed"], body["max_tokens"], body["top_k"]) == (0, 1, 5, 3)


def test_base_url_from_environment(monkeypatch, wire):
    monkeypatch.setenv("OPENAI_BASE_URL", wire.url)
    p = OpenAIProvider("env-model", api_key=KEY)
    wire.script(w.text("from env"))
    assert complete(p, HI).text == "from env"
    assert wire.bodies[0]["model"] == "env-model"


def test_local_server_needs_no_key(monkeypatch, wire):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    p = OpenAIProvider("m", base_url=wire.url)
    wire.script(w.text("ok"))
    assert complete(p, HI).text == "ok"
    assert wire.requests[0].headers["authorization"] == "Bearer EMPTY"


def test_no_key_and_no_base_url_is_a_user_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIProvider("gpt-4o-mini")


def test_spec_builds_the_provider(wire):
    p = get_provider("openai:wire-model", base_url=wire.url, api_key=KEY)
    assert isinstance(p, OpenAIProvider)
    assert (p.name, p.supports_native_tools, p.supports_streaming) == ("wire-model", True, True)
    wire.script(w.text("ok"))
    assert complete(p, HI).text == "ok"


def test_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(MissingDependencyError, match=r"agentnb\[openai\]"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1")


def test_import_agentnb_does_not_import_openai():
    code = "import sys, agentnb, agentnb.providers; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_one_provider_serves_several_event_loops(provider, wire):
    # Agent.run drives each run on a fresh loop; a pooled connection from a closed loop must not be reused.
    wire.script(w.text("one"), w.text("two"))
    assert complete(provider, HI).text == "one"
    assert complete(provider, HI).text == "two"


# -- what is read -------------------------------------------------------------------------


def test_parallel_calls_are_read_in_order(provider, wire):
    wire.script(w.tool_calls(("add", {"a": 1, "b": 2}, "c1"), ("echo", {"text": "hi"}, "c2")))
    c = complete(provider, Request([UserMessage("x")], [add, echo]))
    assert c.tool_calls == (ToolCall("c1", "add", {"a": 1, "b": 2}), ToolCall("c2", "echo", {"text": "hi"}))
    assert c.finish_reason == "tool_calls"


def test_invalid_json_arguments_are_kept_not_emptied(provider, wire):
    wire.script(w.tool_calls(("add", '{"a": 1, "b": ', "c1")))
    (call,) = complete(provider, Request([UserMessage("x")], [add])).tool_calls
    assert call.arguments is None
    assert call.raw_arguments == '{"a": 1, "b": '
    assert "not valid JSON" in (call.parse_error or "")


def test_stream_yields_text_deltas_then_the_completion_with_usage(provider, wire):
    wire.script(w.text("Hello streaming world", pieces=4))
    items = stream(provider, HI)
    texts = [i.text for i in items if isinstance(i, TextChunk)]
    assert len(texts) == 4 and "".join(texts) == "Hello streaming world"
    assert items[-1] == Completion("Hello streaming world", (), Usage(11, 7), "stop")
    body = wire.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_stream_assembles_split_names_and_interleaved_parallel_calls(provider, wire):
    calls = [
        ("add", {"a": 10, "b": 20}, "c1"),
        ("echo", {"text": "a longer argument, split in many pieces"}, "c2"),
        ("add", {"a": -1, "b": 1}, "c3"),
    ]
    wire.script(w.tool_calls(*calls, pieces=6, split_names=True, interleave=True))
    items = stream(provider, Request([UserMessage("x")], [add, echo]))
    parts = [i for i in items if isinstance(i, ToolCallChunk)]
    assert [p.index for p in parts[:3]] == [0, 1, 2]  # interleaved on the wire
    assert [p.name for p in parts[:6]] == ["ad", "ec", "ad", "d", "ho", "d"]  # names arrive in halves
    done = items[-1]
    assert done.tool_calls == tuple(ToolCall(cid, n, a) for n, a, cid in calls)
    tools = len(json.dumps(wire.bodies[0]["tools"])) // 4  # the scripted server counts them, as servers do
    assert done.finish_reason == "tool_calls" and done.usage == Usage(11 + tools, 7)


def test_stream_does_not_double_a_name_that_is_repeated_with_its_id(provider, wire):
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip

    frag = {"index": 0, "id": "c1", "type": "function"}
    chunks = [
        chunk({"tool_calls": [{**frag, "function": {"name": "add", "arguments": '{"a": 1,'}}]}),
        chunk({"tool_calls": [{**frag, "function": {"name": "add", "arguments": ' "b": 2}'}}]}),
        chunk({}, "tool_calls"),
    ]
    wire.script(w.Reply(chunks=chunks))
    done = stream(provider, Request([UserMessage("x")], [add]))[-1]
    assert done.tool_calls == (ToolCall("c1", "add", {"a": 1, "b": 2}),)


def test_stream_invalid_json_arguments_are_kept(provider, wire):
    wire.script(w.tool_calls(("add", '{"a": 1 "b": 2}', "c1"), pieces=5))
    (call,) = stream(provider, Request([UserMessage("x")], [add]))[-1].tool_calls
    assert (call.arguments, call.raw_arguments) == (None, '{"a": 1 "b": 2}')


def test_server_without_stream_options_is_asked_again_without_them(provider, wire):
    wire.script(w.error(400, "Unrecognized request argument supplied: stream_options"), w.text("ok"))
    assert stream(provider, HI)[-1].text == "ok"
    assert [("stream_options" in b) for b in wire.bodies] == [True, False]
    assert provider.stream_usage is False


# -- errors ---------------------------------------------------------------------------------


def test_authentication_error_carries_the_server_message_and_is_not_retried(provider, wire):
    wire.script(w.error(401, "Incorrect API key provided"))
    with pytest.raises(AuthenticationError, match="Incorrect API key provided") as info:
        complete(provider, HI)
    assert info.value.status == 401 and len(wire.requests) == 1


def test_unknown_model_is_model_not_found(provider, wire):
    wire.script(w.error(404, "The model `wire-model` does not exist"))
    with pytest.raises(ModelNotFoundError, match="does not exist") as info:
        complete(provider, HI)
    assert "'wire-model'" in str(info.value) and info.value.status == 404


def test_rate_limit_is_retried_then_succeeds(provider, wire):
    wire.script(w.error(429, "Rate limit reached"), w.text("after the wait"))
    assert complete(provider, HI).text == "after the wait"
    assert len(wire.requests) == 2


def test_rate_limit_that_persists_is_a_rate_limit_error(provider, wire):
    wire.script(*[w.error(429, "Rate limit reached for requests")] * 3)
    with pytest.raises(RateLimitError, match="Rate limit reached for requests"):
        complete(provider, HI)
    assert len(wire.requests) == 3  # the first try and max_retries=2


@pytest.mark.parametrize("streaming", [False, True])
def test_server_error_after_retries(provider, wire, streaming):
    wire.script(*[w.error(500, "The server had an error")] * 3)
    with pytest.raises(ServerError, match="The server had an error") as info:
        stream(provider, HI) if streaming else complete(provider, HI)
    assert info.value.status == 500 and len(wire.requests) == 3


def test_other_client_errors_are_provider_errors_with_status(provider, wire):
    wire.script(w.error(422, "messages: field required"))
    with pytest.raises(ProviderError, match="messages: field required") as info:
        complete(provider, HI)
    assert info.value.status == 422 and type(info.value) is ProviderError


def test_unreachable_server_says_so():
    p = OpenAIProvider("m", api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(ProviderError, match=r"could not connect to http://127\.0\.0\.1:9/v1"):
        complete(p, HI)


def test_mid_stream_disconnect_is_a_clear_provider_error(provider, wire):
    wire.script(w.text("this answer will be cut off", pieces=6, disconnect_after=3))
    with pytest.raises(ProviderError, match="broke mid-stream"):
        stream(provider, HI)


def test_error_event_inside_a_stream(provider, wire):
    wire.script(w.Reply(chunks=[{"error": {"message": "model overloaded", "type": "server_error"}}]))
    with pytest.raises(ProviderError, match="model overloaded"):
        stream(provider, HI)


# -- the key stays secret -----------------------------------------------------------------


def test_key_is_not_in_repr_or_vars(provider):
    assert KEY not in repr(provider) and KEY not in str(provider)
    assert KEY not in repr(vars(provider)) if hasattr(provider, "__dict__") else True
    assert repr(provider) == f"OpenAIProvider('wire-model', base_url='{provider.base_url}')"


def test_key_echoed_by_a_server_is_redacted_from_errors(provider, wire):
    wire.script(w.error(401, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(AuthenticationError) as info:
        complete(provider, HI)
    assert KEY not in str(info.value) and "Incorrect API key provided: ***" in str(info.value)


def test_userinfo_in_base_url_is_hidden_from_repr():
    p = OpenAIProvider("m", api_key=KEY, base_url="http://user:pw@127.0.0.1:9/v1")
    assert repr(p) == "OpenAIProvider('m', base_url='http://127.0.0.1:9/v1')"


def test_build_request_is_json_ready(provider):
    kwargs = provider.build_request(Request([UserMessage("x")], [add], tool_choice="required"))
    assert json.loads(json.dumps(kwargs)) == kwargs


def test_a_client_left_behind_by_a_finished_loop_goes_quietly(wire, caplog):
    # Outside Jupyter each Agent.run has its own loop; the provider's HTTP client from an
    # earlier run may be collected while a later loop runs, and must not fail there.
    p = OpenAIProvider("m", api_key=KEY, base_url=wire.url)
    wire.script(w.text("one"))
    assert complete(p, HI).text == "one"

    async def later() -> None:
        nonlocal p
        del p
        gc.collect()
        await asyncio.sleep(0.05)

    asyncio.run(later())
    gc.collect()
    noise = [r for r in caplog.records if "Event loop is closed" in f"{r.getMessage()} {r.exc_info}"]
    assert not noise
