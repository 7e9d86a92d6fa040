"""Steering a running agent (issue 48 item 1): agentnb.Inbox, the user_interjected event and its views.

The runs that need a reply held while a message is sent use a real ScriptedServer (HTTP on
127.0.0.1, shared by the module): its ``Reply(hold=...)`` keeps step 0's reply back until the test
has sent; every wait is for a state (a request arrived, a run ended), never for a time.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentnb import Agent, Inbox, InboxClosedError, TextPrinter, UserError, load_transcript, replay, tool
from agentnb.errors import ProviderError
from agentnb.events import UserInterjected, event_from_dict
from agentnb.messages import ToolMessage, UserMessage
from agentnb.printer import format_event
from agentnb.providers.openai import OpenAIProvider
from agentnb.testing import ScriptedProvider, call
from agentnb.testing.server import ScriptedServer, text, tool_calls

HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script> $\\alpha$ \x1b[31mred"


@tool
def lookup(year: int) -> str:
    """The sales table of a year."""
    return f"{year}: 10 units"


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def wire(server: ScriptedServer) -> ScriptedServer:
    server.reset()
    return server


def wire_agent(server: ScriptedServer) -> Agent:
    return Agent(OpenAIProvider("wire", base_url=server.url, api_key="none"), tools=[lookup])


def held_first(server: ScriptedServer, *calls: tuple[Any, ...]) -> threading.Event:
    """Script a step-0 reply of ``calls`` held until the returned event is set, then an answer."""
    held = threading.Event()
    first = tool_calls(*(calls or (("lookup", {"year": 2023}),)))
    first.hold = held
    server.script(first, text("done"))
    return held


def roles(body: dict[str, Any]) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in body["messages"]]


# --- delivery ------------------------------------------------------------------------------


def test_a_message_sent_from_another_thread_while_the_reply_is_held_reaches_the_next_request(
    wire: ScriptedServer,
) -> None:
    held = held_first(wire, ("lookup", {"year": 2023}, "c1"), ("lookup", {"year": 2024}, "c2"))  # two calls
    inbox = Inbox()
    out: list[Any] = []
    runner = threading.Thread(target=lambda: out.append(wire_agent(wire).run("Sales?", inbox=inbox)))
    runner.start()
    wire.wait_for_requests(1)  # step 0 waits on its held reply
    sender = threading.Thread(target=inbox.send, args=("also check the 2024 column",))
    sender.start()
    sender.join()
    assert inbox.pending == 1 and inbox.state == "running"
    held.set()
    second = wire.wait_for_requests(2)
    runner.join()
    # after both results of the step (never between a call and its result), as a user message
    assert roles(second.body)[-3:] == [
        ("tool", "2023: 10 units"),
        ("tool", "2024: 10 units"),
        ("user", "also check the 2024 column"),
    ]
    assert "also check" not in str(wire.requests[0].body["messages"])
    result = out[0]
    said = [e for e in result.events if e.kind == "user_interjected"]
    assert said == [UserInterjected(1, "also check the 2024 column")]
    kinds = [e.kind for e in result.events]
    assert kinds.index("user_interjected") == kinds.index("model_request", kinds.index("tool_finished")) - 1
    assert inbox.delivered == [(1, "also check the 2024 column")] and inbox.state == "ended (answer)"


def test_a_message_sent_from_an_asyncio_task_reaches_arun(wire: ScriptedServer) -> None:
    held = held_first(wire)
    inbox = Inbox()

    async def steer() -> None:
        await asyncio.to_thread(wire.wait_for_requests, 1)
        inbox.send("in euros, please")
        held.set()

    async def main() -> Any:
        run = asyncio.create_task(wire_agent(wire).arun("Sales?", inbox=inbox))
        await steer()
        return await run

    result = asyncio.run(main())
    assert roles(wire.bodies[1])[-1] == ("user", "in euros, please")
    assert result.messages[3] == UserMessage("in euros, please")


def test_stream_and_a_session_take_an_inbox() -> None:
    inbox = Inbox()
    inbox.send("before the start")  # sent before the run starts: before its first request

    async def events() -> list[Any]:
        agent = Agent(ScriptedProvider(["ok"]))
        return [e async for e in agent.stream("hi", inbox=inbox)]

    items = asyncio.run(events())
    assert [e.kind for e in items[:3]] == ["run_started", "user_interjected", "model_request"]
    assert [m.content for m in items[-1].messages[:2]] == ["hi", "before the start"]

    model = ScriptedProvider(["one", "two"])
    chat = Agent(model).session()
    chat.run("first")
    second = Inbox()
    second.send("and be brief")
    chat.run("second", inbox=second)
    assert [m.content for m in chat.messages] == ["first", "one", "second", "and be brief", "two"]


def test_a_message_that_comes_while_the_model_answers_is_read_before_the_run_ends() -> None:
    inbox = Inbox()
    model = ScriptedProvider(["my answer", "my answer, in euros"])

    def sink(event: Any) -> None:  # the person types while the final request is out
        if event.kind == "model_request" and event.depth == 0:
            inbox.send("in euros")

    r = Agent(model).run("Sales?", inbox=inbox, on_event=sink)
    assert r.output == "my answer, in euros" and len(model.requests) == 2
    assert [(m.role, m.content) for m in model.requests[1].messages] == [
        ("user", "Sales?"),
        ("assistant", "my answer"),
        ("user", "in euros"),
    ]


# --- the inbox's rules ---------------------------------------------------------------------


def test_sending_after_the_run_ended_says_how_it_ended() -> None:
    answered = Inbox()
    Agent(ScriptedProvider(["ok"])).run("hi", inbox=answered)
    with pytest.raises(InboxClosedError, match=r"run has ended \(answer\)"):
        answered.send("too late")

    failed = Inbox()
    r = Agent(ScriptedProvider([ProviderError("down", status=503)])).run("hi", inbox=failed)
    assert r.stop_reason == "error"
    with pytest.raises(InboxClosedError, match=r"ended \(failed\)"):
        failed.send("too late")

    stopped = Inbox()

    @tool
    def slow() -> str:
        """Work, then stop the run from inside (as Stop would)."""
        stopped.send("never read")
        raise KeyboardInterrupt

    r = Agent(ScriptedProvider([call("slow"), "x"]), tools=[slow]).run("hi", inbox=stopped)
    assert r.stop_reason == "cancelled"
    with pytest.raises(InboxClosedError, match=r"ended \(stopped\)"):
        stopped.send("too late")
    assert stopped.undelivered == ("never read",)  # kept, not dropped silently


def test_one_inbox_feeds_one_run() -> None:
    inbox = Inbox()
    seen: list[str] = []

    @tool
    def nested() -> str:
        """Start a second run on the same inbox while the first one goes on."""
        try:
            Agent(ScriptedProvider(["inner"])).run("again", inbox=inbox)
        except UserError as exc:
            seen.append(str(exc))
        return "ok"

    Agent(ScriptedProvider([call("nested"), "done"]), tools=[nested]).run("go", inbox=inbox)
    assert seen and "already feeds a run" in seen[0]
    with pytest.raises(UserError, match="run has ended"):
        Agent(ScriptedProvider(["x"])).run("reuse", inbox=inbox)
    with pytest.raises(UserError, match="non-empty string"):
        Inbox().send("  ")


# --- the record: transcript, replay, fork --------------------------------------------------


@pytest.fixture(scope="module")
def steered() -> Any:
    """A run steered twice: before step 1 and before step 2."""
    inbox = Inbox()

    @tool
    def table(year: int) -> str:
        """The sales table of a year."""
        inbox.send(f"note {year}")
        return f"{year}: 10"

    model = ScriptedProvider([call("table", year=2023), call("table", year=2024), "done"])
    r = Agent(model, tools=[table]).run("Sales?", inbox=inbox)
    assert [(e.depth, e.text) for e in r.events if e.kind == "user_interjected"] == [(1, "note 2023"), (2, "note 2024")]
    return r


def test_the_transcript_keeps_the_message(steered: Any, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    steered.save(path)
    again = load_transcript(path)
    assert again.events == steered.events and again.messages == steered.messages
    e = UserInterjected(3, HOSTILE)
    assert event_from_dict(e.to_dict()) == e
    with pytest.raises(ValueError, match=r"user_interjected\.text"):
        event_from_dict({"kind": "user_interjected", "depth": 1, "text": 5})


def test_a_replay_reinjects_the_messages_where_they_went_in(steered: Any) -> None:
    @tool
    def table(year: int) -> str:
        """The sales table of a year."""
        return f"{year}: 10"

    again = Agent(replay(steered), tools=[table]).run("Sales?")  # requests must match step by step
    assert again.output == "done" and again.messages == steered.messages
    assert [e for e in again.events if e.kind == "user_interjected"] == [
        e for e in steered.events if e.kind == "user_interjected"
    ]


def test_a_fork_from_a_later_step_carries_the_message_and_one_from_before_does_not(steered: Any) -> None:
    agent = steered.agent
    agent.provider = ScriptedProvider(["forked"] * 4)
    later = steered.fork(1, reply="from step 1")
    assert UserMessage("note 2023") in later.messages and UserMessage("note 2024") not in later.messages
    assert [e.depth for e in later.events if e.kind == "user_interjected"] == [1]
    before = steered.fork(0, reply="from step 0")
    assert not any(isinstance(m, UserMessage) and m.content.startswith("note") for m in before.messages)
    assert not any(e.kind == "user_interjected" for e in before.events)
    edited = steered.fork(0, tool_result="edited")  # step 0 recorded with its result edited; 1 live
    assert ToolMessage("call_1", "table", "edited") in edited.messages
    assert not any(isinstance(m, UserMessage) and m.content.startswith("note") for m in edited.messages)


# --- the views -----------------------------------------------------------------------------


def test_the_printer_shows_the_message_as_text() -> None:
    assert format_event(UserInterjected(2, "also 2024")) == "  [2] you said (to the running agent): also 2024"
    out = io.StringIO()
    TextPrinter(out)(UserInterjected(1, HOSTILE))
    assert "\x1b" not in out.getvalue() and "you said" in out.getvalue()


def test_the_trace_shows_hostile_text_escaped_where_it_went_in_and_its_box_sends() -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    w = TraceWidget(show_on_start=False)
    shown: list[Any] = []

    @tool
    def table(year: int) -> str:
        """The sales table of a year."""
        shown.append((w.steer.layout.display, w.steer.button.disabled))
        w.steer.text.value = HOSTILE
        w.steer.button.click()  # as the browser's click arrives
        return f"{year}: 10"

    model = ScriptedProvider([call("table", year=2023), "done"])
    r = Agent(model, tools=[table]).run("Sales?", on_event=w)  # the widget gets an inbox of its own
    assert shown == [(None, False)]  # shown, usable, while the run went on
    assert model.requests[1].messages[-1] == UserMessage(HOSTILE)
    assert w.steer.layout.display == "none" and w.steer.button.disabled  # gone once the run ended
    html = w.section_html(1)
    assert html.index("you said") < html.index("Model call")  # before the request it went into
    for view in (html, w.static_html()):
        assert "&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;" in view
        assert "<img src=x" not in view and "<script>alert" not in view
    assert "tex2jax_ignore" in w.static_html()
    assert "you said (to the running agent)" in w.text()
    w.steer.text.value = "after the end"
    w.steer.button.click()
    assert "run has ended (answer)" in w.steer.note.value and w.steer.text.value == "after the end"
    assert r.stop_reason == "answer"
