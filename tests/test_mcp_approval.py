"""MCP tools under approval, against a real MCP server process: nothing runs without a decision.

The server's ``write`` tool writes a file, so whether the server ran a call is seen on disk,
not taken from agentnb's own events.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentnb import Agent, Approve, Deny, Edit
from agentnb.events import ApprovalDecided, ToolStarted
from agentnb.mcp import MCPServer
from agentnb.mcp import runtime as mcp_runtime
from agentnb.messages import ToolCall
from agentnb.testing import ScriptedProvider, call

DEMO = str(Path(__file__).parent / "mcp" / "demo_server.py")
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server():
    s = MCPServer.stdio(sys.executable, DEMO, timeout=10)
    try:
        yield s
    finally:
        s.close()
        mcp_runtime.close_all()


def tool_messages(model: ScriptedProvider, request: int) -> dict[str, str]:
    return {m.tool_call_id: m.content for m in model.requests[request].messages if m.role == "tool"}


def test_an_mcp_tool_needs_a_decision_and_unattended_runs_deny_it(server: MCPServer, tmp_path: Path) -> None:
    target = tmp_path / "unattended.txt"
    model = ScriptedProvider([call("write", path=str(target), text="x", id="w1"), "I could not."])
    result = Agent(model, tools=[server], requires_approval=["write"]).run("write it")
    assert not target.exists()  # the server never ran it
    assert "no one was there to give it" in tool_messages(model, 1)["w1"]
    assert [e.by for e in result.events if isinstance(e, ApprovalDecided)] == ["unattended"]
    assert not [e for e in result.events if isinstance(e, ToolStarted)]


@pytest.mark.parametrize("stream", [False, True])
def test_deny_approve_and_edit_mcp_calls_in_one_parallel_turn(server: MCPServer, tmp_path: Path, stream: bool) -> None:
    a, b, c, d = (tmp_path / n for n in ("a.txt", "b.txt", "c.txt", "d.txt"))
    model = ScriptedProvider(
        [
            [
                call("write", path=str(a), text="approved", id="a"),
                call("write", path=str(b), text="denied", id="b"),
                call("write", path=str(c), text="edited away", id="c"),
            ],
            "Done.",
        ]
    )
    decisions = {"a": Approve(), "b": Deny("not b"), "c": Edit({"path": str(d), "text": "edited"})}
    asked: list[str] = []

    def policy(call: ToolCall) -> Approve | Deny | Edit:
        asked.append(call.id)
        return decisions[call.id]

    agent = Agent(model, tools=[server], requires_approval=True, approver=policy)
    result = agent.run("write three files", stream=stream)
    assert sorted(asked) == ["a", "b", "c"]
    assert a.read_text() == "approved"
    assert not b.exists() and not c.exists()  # denied; and the edited call ran elsewhere
    assert d.read_text() == "edited"
    seen = tool_messages(model, 1)
    assert seen["a"] == f"wrote 8 characters to {a}" and seen["c"] == f"wrote 6 characters to {d}"
    assert seen["b"] == "The call was denied and not run: not b"
    started = {e.call_id for e in result.events if isinstance(e, ToolStarted)}
    assert started == {"a", "c"}
    assert result.stop_reason == "answer" and result.output == "Done."


def test_the_widget_decides_on_an_mcp_call_and_stop_runs_nothing(server: MCPServer, tmp_path: Path) -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    yes, no = tmp_path / "yes.txt", tmp_path / "no.txt"
    widget = TraceWidget()
    model = ScriptedProvider([call("write", path=str(yes), text="clicked"), "Written."])
    agent = Agent(model, tools=[server], requires_approval=True)

    async def approve() -> object:
        task = asyncio.ensure_future(agent.arun("write", on_event=widget))
        await widget.approval.next_pending()
        assert not yes.exists()  # waiting: not run
        widget.approval.approve_button.click()
        return await task

    result = asyncio.run(approve())
    assert yes.read_text() == "clicked" and result.output == "Written."

    widget = TraceWidget()
    model = ScriptedProvider([call("write", path=str(no), text="never"), "never asked"])
    agent = Agent(model, tools=[server], requires_approval=True)

    async def stop() -> object:
        task = asyncio.ensure_future(agent.arun("write", on_event=widget))
        await widget.approval.next_pending()
        widget.stop_button.click()
        return await task

    result = asyncio.run(stop())
    assert result.stop_reason == "cancelled" and not no.exists()
    assert len(model.requests) == 1
