"""Approval of tool calls: no call that needs approval runs without a decision."""

from __future__ import annotations

import asyncio
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentnb import Agent, Approve, Deny, Edit, StopRun, ToolContext, UserError, tool
from agentnb.events import ApprovalDecided, ApprovalRequested, ToolStarted
from agentnb.printer import TextPrinter
from agentnb.run.result import RunResult
from agentnb.testing import ScriptedProvider, call


def make_tools(log: list[tuple[str, str, dict]]) -> list:
    @tool(requires_approval=True)
    def guarded(n: int, ctx: ToolContext) -> str:
        """A tool that needs approval."""
        log.append(("guarded", ctx.call_id, {"n": n}))
        return f"g{n}"

    @tool
    def named(n: int, ctx: ToolContext) -> str:
        """A tool the agent names in requires_approval (like an MCP tool)."""
        log.append(("named", ctx.call_id, {"n": n}))
        return f"m{n}"

    @tool
    def free(n: int, ctx: ToolContext) -> str:
        """A tool that needs nothing."""
        log.append(("free", ctx.call_id, {"n": n}))
        return f"f{n}"

    return [guarded, named, free]


def test_policy_approve_deny_edit_and_events() -> None:
    log: list = []
    model = ScriptedProvider(
        [
            [call("guarded", n=1, id="a"), call("guarded", n=2, id="b"), call("named", n=3, id="c")],
            call("free", n=4, id="d"),
            "done",
        ]
    )
    decisions = {"a": Approve(), "b": Deny("not 2"), "c": Edit({"n": 30})}
    agent = Agent(model, tools=make_tools(log), requires_approval=["named"], approver=lambda c: decisions[c.id])
    out = io.StringIO()
    result = agent.run("go", on_event=TextPrinter(out))
    assert sorted(log) == [("free", "d", {"n": 4}), ("guarded", "a", {"n": 1}), ("named", "c", {"n": 30})]
    decided = [e for e in result.events if isinstance(e, ApprovalDecided)]
    assert [(e.call_id, e.decision, e.reason, e.arguments) for e in decided] == [
        ("a", "approve", None, None),
        ("b", "deny", "not 2", None),
        ("c", "edit", None, {"n": 30}),
    ]
    assert all(e.by == "policy <lambda>" for e in decided)
    assert len([e for e in result.events if isinstance(e, ApprovalRequested)]) == 3
    tool_messages = {m.tool_call_id: m.content for m in model.requests[1].messages if m.role == "tool"}
    assert tool_messages["b"] == "The call was denied and not run: not 2"
    assert tool_messages["c"] == "m30"
    text = out.getvalue()
    assert "guarded denied by policy <lambda>: not 2" in text
    assert "named approved with edited arguments by policy <lambda> n=30" in text
    # saved and replayed: the decisions are in the transcript
    again = RunResult.from_dict(result.to_dict())
    assert [e for e in again.events if isinstance(e, ApprovalDecided)] == decided


def test_unattended_run_denies_with_a_clear_reason() -> None:
    log: list = []
    model = ScriptedProvider([call("guarded", n=1), "ok"])
    result = Agent(model, tools=make_tools(log)).run("go")
    assert log == []
    assert "no one was there to give it" in model.requests[1].messages[-1].content
    assert [e.by for e in result.events if isinstance(e, ApprovalDecided)] == ["unattended"]


def test_async_policy_and_invalid_edit_is_not_run() -> None:
    log: list = []

    async def policy(c):
        await asyncio.sleep(0)
        return Edit({"n": "not a number"})

    model = ScriptedProvider([call("guarded", n=1), "ok"])
    result = Agent(model, tools=make_tools(log), approver=policy).run("go")
    assert log == []
    told = model.requests[1].messages[-1].content
    # the model is not told to fix arguments it never wrote: the reviewer's change was invalid
    assert told.startswith("The call to guarded was not run: its reviewer (policy policy) changed the arguments")
    assert "Your own arguments were not the problem" in told and "Fix the arguments" not in told
    assert "not of type 'integer'" in told
    assert result.stop_reason == "answer"


def test_a_tool_name_for_approval_that_the_agent_lacks_is_an_error() -> None:
    # a typo let the tool it meant run without approval, silently
    log: list = []
    with pytest.raises(UserError, match=r"does not have: 'name' \(its tools: "):
        Agent(ScriptedProvider(["x"]), tools=make_tools(log), requires_approval=["name"])
    agent = Agent(ScriptedProvider(["x"]), tools=make_tools(log), requires_approval="named")  # one name
    assert agent.requires_approval == frozenset({"named"})


def test_bad_approver_and_bad_decision_are_user_errors() -> None:
    with pytest.raises(UserError, match="approver must be"):
        Agent(ScriptedProvider(["x"]), approver=42)
    with pytest.raises(UserError, match="requires_approval"):
        Agent(ScriptedProvider(["x"]), requires_approval=[1])
    log: list = []
    agent = Agent(ScriptedProvider([call("guarded", n=1)]), tools=make_tools(log), approver=lambda c: True)
    with pytest.raises(UserError, match=r"return agentnb\.Approve"):
        agent.run("go")
    assert log == []


def test_widget_approves_denies_and_edits_from_python() -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    log: list = []
    w = TraceWidget()
    model = ScriptedProvider([call("guarded", n=1, id="a"), call("guarded", n=2, id="b"), call("guarded", n=3), "ok"])
    agent = Agent(model, tools=make_tools(log))

    async def main() -> RunResult:
        task = asyncio.ensure_future(agent.arun("go", on_event=w))  # the widget is the approver
        pending = await w.approval.next_pending()
        assert (pending.id, w.status) == ("a", "paused")
        assert "Approve this tool call?" in w.approval.label.value
        w.approval.approve_button.click()
        await w.approval.next_pending()
        w.approval.reason.value = "not that one"
        w.approval.deny_button.click()
        await w.approval.next_pending()
        w.approval.arguments.value = '{"n": "x"}'
        w.approval.edit_button.click()  # invalid: shown, the call still waits
        assert "invalid arguments" in w.approval.error.value and w.approval.pending is not None
        w.approval.arguments.value = '{"n": 33}'
        w.approval.edit_button.click()
        done = await task
        # every call answered (here by code; by hand in a notebook): waiting for another one says
        # the run has ended at once, where it waited until its timeout
        t0 = asyncio.get_running_loop().time()
        with pytest.raises(UserError, match="the run has ended: no tool call will wait for approval"):
            await w.approval.next_pending(timeout=20)
        assert asyncio.get_running_loop().time() - t0 < 1
        return done

    result = asyncio.run(main())
    assert [a for _, _, a in log] == [{"n": 1}, {"n": 33}]
    assert model.requests[2].messages[-1].content == "The call was denied and not run: not that one"
    assert [e.by for e in result.events if isinstance(e, ApprovalDecided)] == ["widget"] * 3
    assert "denied" in w.body_html and "approved with edited arguments" in w.body_html
    from agentnb.notebook.trace.render import depth_html

    denied = depth_html(w.state.depths[1])  # in the order it happened: checked, then denied
    assert denied.index("✓ valid") < denied.index("dedup") < denied.index("✗ denied")


def test_stop_while_waiting_ends_the_run_and_nothing_runs() -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    log: list = []
    w = TraceWidget()
    agent = Agent(ScriptedProvider([call("guarded", n=1), "never"]), tools=make_tools(log))

    async def main() -> RunResult:
        task = asyncio.ensure_future(agent.arun("go", on_event=w))
        await w.approval.next_pending()
        w.stop_button.click()
        return await task

    result = asyncio.run(main())
    assert result.stop_reason == "cancelled" and log == []
    assert w.approval.layout.display == "none"


# --- the property: zero executions without a decision -------------------------------------------

DECISIONS = st.sampled_from(["approve", "deny", "edit", "bad_edit", "stop", "cancel"])
CALL = st.tuples(st.sampled_from(["guarded", "named", "free", "nosuch"]), st.integers(0, 3))
TURN = st.lists(CALL, min_size=1, max_size=3)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    turns=st.lists(TURN, min_size=1, max_size=4),
    decisions=st.lists(DECISIONS, min_size=12, max_size=12),
    max_tool_calls=st.integers(0, 6),
    stream=st.booleans(),
    attended=st.booleans(),
)
def test_no_execution_without_a_decision(turns, decisions, max_tool_calls, stream, attended) -> None:
    log: list = []
    script: list = []
    for t, turn in enumerate(turns):
        script.append([call(name, n=n, id=f"t{t}c{i}") for i, (name, n) in enumerate(turn)])
    script.append("done")
    queue = list(decisions)
    made: dict[str, object] = {}

    async def policy(c):
        what = queue.pop(0) if queue else "approve"
        if what == "stop":
            raise StopRun("stopped")
        if what == "cancel":
            raise asyncio.CancelledError
        decision = {
            "approve": Approve(),
            "deny": Deny("no"),
            "edit": Edit({"n": 99}),
            "bad_edit": Edit({"n": "x"}),
        }[what]
        made[c.id] = decision
        return decision

    agent = Agent(
        ScriptedProvider(script),
        tools=make_tools(log),
        requires_approval=["named"],
        approver=policy if attended else None,
        max_tool_calls=max_tool_calls,
    )

    async def main() -> RunResult:
        try:
            return await agent.arun("go", stream=stream, on_cancel="return")
        except asyncio.CancelledError as exc:  # a policy that raised CancelledError itself
            return exc.run_result  # type: ignore[attr-defined]

    result = asyncio.run(main())
    decided = {e.call_id: e for e in result.events if isinstance(e, ApprovalDecided)}
    started = [e for e in result.events if isinstance(e, ToolStarted)]
    assert len(started) == len(log)
    for name, call_id, arguments in log:
        if name == "free":
            continue
        d = decided.get(call_id)
        assert d is not None, f"{call_id} ran without a decision"
        assert d.decision in ("approve", "edit")
        if d.decision == "edit":
            assert arguments == d.arguments == {"n": 99}
        if attended:
            assert made[call_id].action == d.decision  # type: ignore[attr-defined]
        else:
            pytest.fail("an unattended run executed a call that needed approval")


def test_cli_prompts_at_the_terminal_and_denies_unattended() -> None:
    import os
    import subprocess
    import sys

    from agentnb.testing.server import ScriptedServer, text, tool_calls

    def run(stdin: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], list]:
        with ScriptedServer() as server:
            server.script(
                tool_calls(("calculator", {"expression": "2 * 3"}), ("weekday", {"date": "2024-01-01"})),
                text("done"),
            )
            args = ["run", "go", "--provider", "openai:m", "--base-url", server.url, "--no-stream"]
            args += ["--tools", "agentnb.demo_tools:calculator,weekday", "--require-approval", "calculator,weekday"]
            out = subprocess.run(
                [sys.executable, "-m", "agentnb", *args, *extra],
                input=stdin,
                capture_output=True,
                text=True,
                env={**os.environ, "OPENAI_API_KEY": "sk-test-000000000"},
                timeout=120,
            )
            return out, server.bodies

    out, bodies = run('e {"expr": 1}\ne {"expression": "4 * 5"}\nd not on mondays\n', "--approval", "ask")
    assert out.returncode == 0, out.stderr
    assert out.stderr.count("needs approval") == 3  # the bad edit was asked again
    tool_messages = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "20"
    assert tool_messages[1]["content"] == "The call was denied and not run: not on mondays"
    assert "calculator approved with edited arguments by terminal" in out.stdout
    out, bodies = run("")  # stdin is not a terminal: unattended, denied
    tool_messages = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert all("no one was there" in m["content"] for m in tool_messages)
