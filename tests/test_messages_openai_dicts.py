"""Plain OpenAI chat dicts as a prompt or history: content parts, function calls, clear errors."""

from __future__ import annotations

import base64

import pytest

from agentnb import Agent
from agentnb.messages import AssistantMessage, ToolMessage, UserMessage
from agentnb.testing import ScriptedProvider

PNG = b"\x89PNG\r\n\x1a\n..."


def test_an_openai_history_with_parts_images_and_function_calls_is_read() -> None:
    """It raised KeyError('name') on a function call and ValueError on content parts."""
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    history = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is in this picture"}, {"type": "text", "text": "and 2+3?"}, {"type": "image_url", "image_url": {"url": url}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
    ]  # fmt: skip
    model = ScriptedProvider(["A cat; 5."])
    result = Agent(model).run(history)
    assert result.output == "A cat; 5."
    sent = model.requests[0].messages
    assert sent[0].role == "system" and sent[0].content == "Be brief."
    assert isinstance(sent[1], UserMessage) and sent[1].content == "What is in this picture\nand 2+3?"
    assert sent[1].images[0].data == PNG and sent[1].images[0].mime == "image/png"
    assert isinstance(sent[2], AssistantMessage) and sent[2].tool_calls[0].arguments == {"a": 2, "b": 3}
    assert isinstance(sent[3], ToolMessage) and sent[3].name == "add"  # the call's name, filled in


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"role": "user"}, "a user message needs 'content'"),
        ({"content": "hi"}, "unknown message role None"),
        ({"role": "tool", "content": "5"}, "a tool message needs 'tool_call_id'"),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x.example/a.png"}}]},
            "base64 data: URL",
        ),
        ({"role": "user", "content": [{"type": "audio"}]}, "unsupported content part 'audio'"),
    ],
)
def test_a_malformed_message_is_a_clear_error_before_any_model_call(message: dict, error: str) -> None:
    model = ScriptedProvider(["never"])
    with pytest.raises(ValueError, match=error):
        Agent(model).run([message])
    assert model.requests == []


def test_a_history_given_as_a_string_or_one_dict() -> None:
    # a string was read as one user message per character
    with pytest.raises(TypeError, match="not a string"):
        Agent(ScriptedProvider(["x"])).run("hi", history="we talked before")
    model = ScriptedProvider(["x"])
    Agent(model).run("and now?", history={"role": "user", "content": "before"})
    assert [(m.role, m.content) for m in model.requests[0].messages] == [("user", "before"), ("user", "and now?")]
