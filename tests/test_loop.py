"""The loop's behaviours, through the public API and the scripted providers."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from agentnb import Agent, AssistantMessage, StopRun, ToolContext, ToolDecision, ToolMessage, Usage, UserMessage, tool
from agentnb.events import (
    AttachmentAdded,
    DedupDecision,
    DirectOutput,
    LimitReached,
    ModelRequest,
    RunFinished,
    TextDelta,
    ToolCallDelta,
    ToolFinished,
    ToolStarted,
    UnknownTool,
    ValidationResult,
)
from agentnb.messages import ToolCall
from agentnb.run.result import RunResult
from agentnb.testing import FunctionProvider, ScriptedProvider, Streamed, call, tool_chunks

calls_made: list[int] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    calls_made.append(a + b)
    return a + b


@tool
def fail() -> str:
    """Always raises."""
    raise RuntimeError("disk on fire")


def kinds(result: RunResult) -> list[str]:
    return [e.kind for e in result.events]


def test_call_then_answer_and_what_the_model_saw() -> None:
    model = ScriptedProvider([call("add", a=2, b=3), "It is 5."], usage=Usage(10, 2))
    result = Agent(model, tools=[add], system="Be brief.").run("2+3?")
    assert (result.output, result.stop_reason, result.tool_calls) == ("It is 5.", "answer", 1)
    assert result.usage == Usage(20, 4)
    second = model.requests[1]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool"]
    assert second.messages[3] == ToolMessage("call_1", "add", "5")
    assert [t.name for t in second.tools] == ["add"]
    assert kinds(result)[:3] == ["run_started", "model_request", "model_response"]
    assert kinds(result)[-2:] == ["final_answer", "run_finished"]


@pytest.mark.parametrize("limit", [0, 1, 3])
def test_limit_runs_exactly_max_then_asks_without_tools(limit: int) -> None:
    calls_made.clear()
    replies = [call("add", a=i, b=0) for i in range(limit + 5)]
    model = FunctionProvider(lambda messages, tools: replies.pop(0) if tools else "final words")
    result = Agent(model, tools=[add], max_tool_calls=limit).run("count")
    assert len(calls_made) == limit
    assert result.tool_calls == limit
    # max_tool_calls=0: no tool could run, and a plain answer is an answer (issue 13).
    assert result.output == "final words" and result.stop_reason == ("limit" if limit else "answer")
    assert model.requests[-1].tools == () and model.requests[-1].tool_choice == "none"
    assert len(model.requests) == limit + 1
    limits = [e for e in result.events if isinstance(e, LimitReached)]
    assert len(limits) == (1 if limit else 0)


def test_calls_beyond_the_budget_in_one_turn_are_not_run() -> None:
    calls_made.clear()
    model = ScriptedProvider([[call("add", a=1, b=1), call("add", a=2, b=2), call("add", a=3, b=3)], "ok"])
    result = Agent(model, tools=[add], max_tool_calls=2).run("go")
    assert calls_made == [2, 4]
    tool_msgs = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert tool_msgs[2].is_error and "limit" in tool_msgs[2].content
    assert model.requests[1].tools == ()


def test_unknown_tool_is_reported_and_counts() -> None:
    model = ScriptedProvider([call("sub", a=1), call("add", a=1, b=1), "2"])
    result = Agent(model, tools=[add, fail]).run("go")
    msg = model.requests[1].messages[-1]
    assert isinstance(msg, ToolMessage) and msg.is_error
    assert msg.content.startswith('Function "sub" not found. Available functions: add, fail.')
    assert result.tool_calls == 2 and result.output == "2"
    assert any(isinstance(e, UnknownTool) and e.name == "sub" for e in result.events)


def test_direct_output_by_option_and_by_context() -> None:
    @tool(direct_output=True)
    def report() -> str:
        """Make the report."""
        return "REPORT"

    @tool
    def maybe(direct: bool, ctx: ToolContext) -> str:
        """Maybe answer directly."""
        if direct:
            ctx.return_directly()
        return f"maybe {direct}"

    model = ScriptedProvider([call("report"), "never asked"])
    result = Agent(model, tools=[report]).run("report please")
    assert (result.output, result.stop_reason) == ("REPORT", "direct_output")
    assert len(model.requests) == 1 and model.remaining == 1
    assert any(isinstance(e, DirectOutput) for e in result.events)

    model = ScriptedProvider([call("maybe", direct=False), call("maybe", direct=True), "never"])
    result = Agent(model, tools=[maybe]).run("go")
    assert (result.output, result.stop_reason, len(model.requests)) == ("maybe True", "direct_output", 2)


def test_attachments_become_one_user_message_before_the_next_call() -> None:
    @tool
    def chart(ctx: ToolContext) -> str:
        """Draw a chart."""
        ctx.attach_image(b"\x89PNG1")
        ctx.attach_image(b"\x89PNG2", "image/png")
        return "drawn"

    model = ScriptedProvider([call("chart"), "I see two bars."])
    result = Agent(model, tools=[chart]).run("plot")
    last = model.requests[1].messages
    assert isinstance(last[-2], ToolMessage) and last[-2].content == "drawn"
    assert isinstance(last[-1], UserMessage)
    assert last[-1].content == "[Attached image(s) from tool result]"
    assert [i.data for i in last[-1].images] == [b"\x89PNG1", b"\x89PNG2"]
    assert len([e for e in result.events if isinstance(e, AttachmentAdded)]) == 2


def test_tool_exception_becomes_an_error_message_and_the_run_goes_on() -> None:
    model = ScriptedProvider([call("fail"), "Sorry, the tool failed."])
    result = Agent(model, tools=[fail]).run("go")
    msg = model.requests[1].messages[-1]
    assert msg == ToolMessage("call_1", "fail", "Error: fail raised RuntimeError: disk on fire", True)
    finished = next(e for e in result.events if isinstance(e, ToolFinished))
    assert finished.error == "RuntimeError: disk on fire"
    assert result.stop_reason == "answer"


def test_timeouts_for_sync_and_async_tools() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def hang() -> str:
        """Hangs."""
        release.wait(5)
        return "late"

    @tool(timeout=0.2)
    async def ahang() -> str:
        """Hangs asynchronously."""
        await asyncio.sleep(5)
        return "late"

    model = ScriptedProvider([call("hang"), call("ahang"), "gave up"])
    result = Agent(model, tools=[hang, ahang]).run("go")
    release.set()
    errors = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.content for m in errors] == [
        "Error: hang did not finish within 0.2 seconds.",
        "Error: ahang did not finish within 0.2 seconds.",
    ]
    assert all(m.is_error for m in errors) and result.output == "gave up"


def test_invalid_arguments_go_back_and_can_be_repaired() -> None:
    model = ScriptedProvider([call("add", a="two", b=3), call("add", a=2, b=3), "5"])
    result = Agent(model, tools=[add]).run("go")
    feedback = model.requests[1].messages[-1]
    assert feedback.is_error and "a: 'two' is not of type 'integer'" in feedback.content
    assert '"required":["a","b"]' in feedback.content
    validations = [e for e in result.events if isinstance(e, ValidationResult)]
    assert [v.ok for v in validations] == [False, True]
    assert result.output == "5" and result.tool_calls == 2


def test_unparseable_arguments_are_never_treated_as_empty() -> None:
    broken = ToolCall("c9", "add", None, '{"a": 1, "b": ', "arguments are not valid JSON: Expecting value")
    model = ScriptedProvider([[broken], "ok"])
    Agent(model, tools=[add]).run("go")
    feedback = model.requests[1].messages[-1]
    assert feedback.is_error and "arguments are not valid JSON" in feedback.content


def test_repeated_invalid_calls_are_bounded_by_the_limit() -> None:
    model = FunctionProvider(lambda m, tools: call("add", a="x", b=1) if tools else "stopped")
    result = Agent(model, tools=[add], max_tool_calls=4).run("go")
    assert result.tool_calls == 4 and result.stop_reason == "limit" and len(model.requests) == 5


def test_parallel_calls_run_concurrently_keep_order_and_count() -> None:
    barrier = asyncio.Event()
    arrived: list[str] = []

    @tool
    async def first() -> str:
        """First."""
        arrived.append("first")
        await asyncio.wait_for(barrier.wait(), 2)  # only finishes if `second` runs meanwhile
        return "one"

    @tool
    async def second() -> str:
        """Second."""
        arrived.append("second")
        barrier.set()
        return "two"

    @tool
    def third() -> str:
        """Third (sync, runs in a worker thread when parallel)."""
        time.sleep(0.01)
        return "three"

    model = ScriptedProvider([[call("first"), call("second"), call("third")], "done"])
    result = Agent(model, tools=[first, second, third]).run("go")
    tool_msgs = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_msgs] == ["one", "two", "three"]
    assert [m.tool_call_id for m in tool_msgs] == ["call_1", "call_2", "call_3"]
    assert result.tool_calls == 3 and sorted(arrived) == ["first", "second"]
    finished = [e.name for e in result.events if isinstance(e, ToolFinished)]
    assert finished[0] == "second" and set(finished) == {"first", "second", "third"}


def test_dedup_skips_exact_repeats_with_reordered_keys() -> None:
    calls_made.clear()
    model = ScriptedProvider([call("add", {"a": 1, "b": 2}), call("add", {"b": 2, "a": 1}), "3"])
    result = Agent(model, tools=[add]).run("go")
    assert calls_made == [3]
    decisions = [e for e in result.events if isinstance(e, DedupDecision)]
    assert [(d.seen_before, d.action) for d in decisions] == [(False, "execute"), (True, "skip")]
    assert decisions[0].fingerprint == decisions[1].fingerprint
    repeat = model.requests[2].messages[-1]
    assert "already called add with exactly these arguments" in repeat.content and "3" in repeat.content
    assert result.tool_calls == 2


def test_dedup_within_one_turn_and_allow_repeat() -> None:
    created: list[str] = []

    @tool(allow_repeat=True)
    def ticket(title: str) -> str:
        """Create a ticket."""
        created.append(title)
        return f"#{len(created)}"

    calls_made.clear()
    model = ScriptedProvider(
        [
            [call("add", a=1, b=1), call("add", b=1, a=1), call("ticket", title="x"), call("ticket", title="x")],
            "done",
        ]
    )
    result = Agent(model, tools=[add, ticket]).run("go")
    assert calls_made == [2] and created == ["x", "x"]
    actions = [e.action for e in result.events if isinstance(e, DedupDecision)]
    assert actions == ["execute", "skip", "execute", "allow_repeat"]
    msgs = [m.content for m in result.messages if isinstance(m, ToolMessage)]
    assert msgs[0] == "2" and "already called add" in msgs[1] and msgs[2:] == ["#1", "#2"]


def test_failed_calls_are_not_remembered_by_dedup() -> None:
    flaky_state = {"n": 0}

    @tool
    def flaky() -> str:
        """Fails once."""
        flaky_state["n"] += 1
        if flaky_state["n"] == 1:
            raise OSError("transient")
        return "fine"

    model = ScriptedProvider([call("flaky"), call("flaky"), "ok"])
    Agent(model, tools=[flaky]).run("go")
    assert flaky_state["n"] == 2


async def test_cancelling_the_task_keeps_completed_steps() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(10)
        return "never"

    model = ScriptedProvider([call("add", a=1, b=1), call("slow"), "never"])
    task = asyncio.ensure_future(Agent(model, tools=[add, slow]).arun("go"))
    await started.wait()
    task.cancel()
    # Cancellation propagates as asyncio expects (issue 13); the result rides on the exception.
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    result = info.value.run_result  # type: ignore[attr-defined]
    assert result.stop_reason == "cancelled"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]  # the slow step is not kept
    assert any(isinstance(e, ToolStarted) and e.name == "slow" for e in result.events)
    assert not any(isinstance(e, ToolFinished) and e.name == "slow" for e in result.events)


def test_keyboard_interrupt_in_a_tool_cancels_cleanly() -> None:
    @tool
    def interrupt() -> str:
        """Simulates Ctrl-C while running."""
        raise KeyboardInterrupt

    model = ScriptedProvider([call("interrupt"), "never"])
    result = Agent(model, tools=[interrupt]).run("go")
    assert result.stop_reason == "cancelled" and [m.role for m in result.messages] == ["user"]


def test_controller_can_skip_edit_and_stop() -> None:
    class Script:
        def __init__(self) -> None:
            self.model_pauses = 0

        async def before_model(self, depth, request):  # type: ignore[no-untyped-def]
            self.model_pauses += 1
            if depth == 3:
                raise StopRun

        async def before_tool(self, depth, call):  # type: ignore[no-untyped-def]
            return [ToolDecision("skip"), ToolDecision("run", {"a": 10, "b": 1}), ToolDecision()][depth]

    calls_made.clear()
    ctl = Script()
    model = ScriptedProvider([call("add", a=1, b=1), call("add", a=1, b=1), call("add", a=5, b=5), "never"])
    result = Agent(model, tools=[add]).run("go", controller=ctl)
    assert calls_made == [11, 10]
    assert result.stop_reason == "cancelled" and ctl.model_pauses == 4
    msgs = [m.content for m in result.messages if isinstance(m, ToolMessage)]
    assert msgs == ["The user skipped this call; it was not run.", "11", "10"]
    decisions = [(e.action, e.arguments) for e in result.events if e.kind == "step_decision"]
    # The stop before the last model call is an event too: that request was never sent.
    assert decisions == [("skip", None), ("edit", {"a": 10, "b": 1}), ("stop", None)]


def test_provider_error_stops_with_error_and_keeps_transcript() -> None:
    model = ScriptedProvider([call("add", a=1, b=1), ConnectionError("server went away")])
    result = Agent(model, tools=[add]).run("go")
    assert result.stop_reason == "error" and result.error == "ConnectionError: server went away"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
    with pytest.raises(ConnectionError):
        result.raise_for_error()


def test_script_exhaustion_is_an_error_not_a_hang() -> None:
    result = Agent(ScriptedProvider([])).run("hi")
    assert result.stop_reason == "error" and "ran out of replies" in (result.error or "")


def test_multi_turn_continues_from_a_previous_result() -> None:
    model = ScriptedProvider(["Hi Ann.", "Your name is Ann."])
    agent = Agent(model, system="sys")
    first = agent.run("I am Ann.")
    second = agent.run("What is my name?", history=first)
    assert [m.role for m in model.requests[1].messages] == ["system", "user", "assistant", "user"]
    assert second.messages[:3] == first.messages
    assert second.output == "Your name is Ann."


def test_messages_as_input_and_own_system_message() -> None:
    model = ScriptedProvider(["ok"])
    Agent(model, system="ignored").run([{"role": "system", "content": "mine"}, {"role": "user", "content": "q"}])
    assert [getattr(m, "content", None) for m in model.requests[0].messages] == ["mine", "q"]


def test_forced_tool_choice_applies_to_the_first_call_only() -> None:
    model = ScriptedProvider([call("add", a=1, b=2), "3"])
    Agent(model, tools=[add], tool_choice="add").run("go")
    assert [r.tool_choice for r in model.requests] == ["add", "auto"]


async def test_stream_yields_deltas_and_ends_with_result() -> None:
    args = '{"a": 20, "b": 22}'
    model = ScriptedProvider(
        [
            Streamed([*tool_chunks(0, "add", args, pieces=4)]),
            Streamed(["The ", "answer ", "is 42."]),
        ]
    )
    items = [item async for item in Agent(model, tools=[add]).stream("go")]
    result = items[-1]
    assert isinstance(result, RunResult) and result.output == "The answer is 42."
    deltas = [e.arguments for e in items if isinstance(e, ToolCallDelta)]
    assert "".join(deltas) == args and len(deltas) == 4
    assert [e.text for e in items if isinstance(e, TextDelta)] == ["The ", "answer ", "is 42."]
    assert isinstance(items[-2], RunFinished) and items[-2].stop_reason == "answer"
    assert list(result.events) == items[:-1]


async def test_sync_run_works_inside_a_running_event_loop() -> None:
    # As in a Jupyter cell: the loop is already running.
    result = Agent(ScriptedProvider([call("add", a=1, b=1), "2"]), tools=[add]).run("go")
    assert result.output == "2"


def test_on_event_sees_events_live_and_transcript_round_trips(tmp_path) -> None:  # type: ignore[no-untyped-def]
    seen: list[str] = []

    @tool
    def pic(ctx: ToolContext) -> str:
        """Picture."""
        ctx.attach_image(b"\x89PNG")
        return "ok"

    model = ScriptedProvider([[call("pic"), call("nope")], "done"], usage=Usage(3, 4))
    result = Agent(model, tools=[pic]).run("go", on_event=lambda e: seen.append(e.kind))
    assert seen == kinds(result)
    path = tmp_path / "run.json"
    result.save(path)
    loaded = RunResult.load(path)
    assert loaded == result
    assert isinstance(loaded.messages[-1], AssistantMessage)
    assert loaded.messages[-2].images[0].data == b"\x89PNG"


def test_model_request_events_show_tools_withdrawn_at_the_limit() -> None:
    model = ScriptedProvider([call("add", a=1, b=1), "done"])
    result = Agent(model, tools=[add], max_tool_calls=1).run("go")
    reqs = [e for e in result.events if isinstance(e, ModelRequest)]
    assert [(r.tools, r.tool_choice) for r in reqs] == [(("add",), "auto"), ((), "none")]


def test_unreadable_call_attempt_tells_the_model_why() -> None:
    attempt = ToolCall("c1", "", None, '{"name": "add", "arguments": {"a": 1,', "unterminated JSON object")
    model = ScriptedProvider([[attempt], "ok"])
    result = Agent(model, tools=[add]).run("go")
    feedback = model.requests[1].messages[-1]
    assert feedback.is_error
    assert feedback.content == "Your tool call could not be read: unterminated JSON object. Available functions: add."
    assert result.tool_calls == 1


def test_ctrl_c_while_a_cell_waits_cancels_the_run() -> None:
    # Inside a running loop (a Jupyter cell), run() waits on a worker thread; Ctrl-C arrives
    # in the waiting thread and must cancel the run, not abandon it.
    import os
    import signal

    started = threading.Event()

    @tool
    async def slow() -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(10)
        return "never"

    def interrupt() -> None:
        # Only once the tool runs (the cell is then waiting); never while pytest itself runs.
        if started.wait(60):
            os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C / kernel interrupt

    async def cell() -> RunResult:  # like a Jupyter cell: a loop is running, run() is sync
        return Agent(model, tools=[add, slow]).run("go")

    model = ScriptedProvider([call("add", a=1, b=1), call("slow"), "never"])
    loop = asyncio.new_event_loop()
    # The handler a kernel has (earlier tests may have installed others).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        result = loop.run_until_complete(cell())
    finally:
        signal.signal(signal.SIGINT, previous)
        loop.close()
    assert result.stop_reason == "cancelled"
    assert [m.role for m in result.messages] == ["user", "assistant", "tool"]
