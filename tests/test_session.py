"""Sessions: a conversation over runs, the context-window policy, save and load."""

from __future__ import annotations

import io
import json
import os
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentnb import Agent, Session, TextPrinter, UserError, tool
from agentnb.errors import TranscriptError
from agentnb.messages import AssistantMessage, SystemMessage, ToolMessage
from agentnb.testing import ScriptedProvider, call
from agentnb.tracing.otel import SpanWatcher


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_session_carries_the_conversation_and_counts_turns() -> None:
    model = ScriptedProvider(["Hi Ada.", call("add", a=1, b=2), "3", "You are Ada."])
    chat = Agent(model, tools=[add], system="be brief").session()
    chat.run("I am Ada.")
    chat.run("1 + 2?")
    r = chat.run("Who am I?")
    assert r.output == "You are Ada."
    assert [m.role for m in model.requests[-1].messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert chat.turns == 3 and r.events[0].turn == 3
    assert r.events[0].conversation_id == chat.id
    assert chat.messages[0] == SystemMessage("be brief")


def test_trimming_drops_whole_turns_keeps_the_system_prompt_and_tool_results() -> None:
    model = ScriptedProvider([call("add", a=1, b=2), "3", "ok", "fine", "last"])
    chat = Session(Agent(model, tools=[add], system="sys"), max_messages=5)
    chat.run("sum")  # user, assistant(call), tool, assistant: 4 messages
    chat.run("two")
    chat.run("three")
    r = chat.run("four")
    sent = model.requests[-1].messages
    assert isinstance(sent[0], SystemMessage)
    # every tool result sent still has its call, and no call lost its result
    calls = {c.id for m in sent if isinstance(m, AssistantMessage) for c in m.tool_calls}
    results = {m.call_id for m in sent if isinstance(m, ToolMessage)}
    assert calls == results
    assert len(sent) - 1 <= 5
    (trim,) = [e for e in r.events if e.kind == "history_trimmed"]
    assert trim.dropped_turns == 1 and trim.dropped_messages == 4 and trim.reason == "max_messages=5"
    assert len(chat.messages) == 1 + 4 + 2 + 2 + 2  # the session keeps everything


def test_trimming_is_shown_by_the_printer() -> None:
    out = io.StringIO()
    chat = Session(Agent(ScriptedProvider(["a", "b"])), max_tokens=8)
    chat.run("x" * 40)
    chat.run("y", on_event=TextPrinter(out))
    assert "history: 1 earlier turn (2 messages) left out (max_tokens=8); the model reads 0 messages" in out.getvalue()


def test_max_tokens_counts_the_new_prompt_too() -> None:
    # The model reads the kept history and the new prompt: together within max_tokens.
    model = ScriptedProvider(["a", "b"])
    chat = Session(Agent(model), max_tokens=30)
    chat.run("x" * 60)  # 19 tokens (4 characters a token, 4 a message), its answer 4
    r = chat.run("y" * 60)  # another 19: with the first turn, 42
    read = sum(chat.count_tokens(m) for m in model.requests[1].messages)
    assert read <= 30, read
    assert [m.content for m in model.requests[1].messages] == ["y" * 60]
    (trim,) = [e for e in r.events if e.kind == "history_trimmed"]
    assert trim.dropped_turns == 1 and trim.reason == "max_tokens=30"


def test_spans_carry_the_conversation_id() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    chat = Agent(ScriptedProvider(["a", "b"]), instrument=SpanWatcher(provider)).session(id="conv-1")
    chat.run("one")
    chat.run("two")
    runs = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert [s.attributes["gen_ai.conversation.id"] for s in runs] == ["conv-1", "conv-1"]
    assert runs[1].attributes["agentnb.turn"] == 2


def test_save_and_load_continue_the_conversation(tmp_path: Any) -> None:
    chat = Agent(ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add], system="sys").session()
    chat.run("1 + 2?")
    path = os.path.join(tmp_path, "chat.json")
    chat.save(path)
    model = ScriptedProvider(["It was 3."])
    again = Session.load(path, Agent(model, tools=[add]))
    assert again.id == chat.id and again.messages == chat.messages and again.starts == chat.starts
    assert again.run("What was it?").output == "It was 3."
    assert [m.role for m in model.requests[0].messages] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "invalid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (json.dumps({"version": 2, "output": "x"}).encode(), "not a saved session"),
        (
            json.dumps(
                {"kind": "agentnb.run.session", "version": 1, "messages": [{"role": "alien"}], "turn_starts": [0]}
            ).encode(),
            "alien",
        ),
        (
            json.dumps({"kind": "agentnb.run.session", "version": 1, "messages": [], "turn_starts": [5]}).encode(),
            "turn_starts",
        ),
    ],
)
def test_a_damaged_session_file_is_a_clear_error(tmp_path: Any, content: bytes, message: str) -> None:
    path = os.path.join(tmp_path, "chat.json")
    with open(path, "wb") as f:
        f.write(content)
    with pytest.raises(TranscriptError, match=message) as info:
        Session.load(path, Agent(ScriptedProvider([])))
    assert "chat.json" in str(info.value)


def test_bounds_are_checked() -> None:
    with pytest.raises(UserError, match="max_messages"):
        Agent(ScriptedProvider([])).session(max_messages=0)


def test_a_session_run_given_a_history_says_the_session_has_its_own() -> None:
    # was: TypeError "got multiple values for keyword argument 'history'"
    chat = Agent(ScriptedProvider(["x"])).session()
    with pytest.raises(UserError, match="continue its own conversation"):
        chat.run("hi", history=[])
    assert chat.turns == 0 and chat.run("hi").output == "x"
