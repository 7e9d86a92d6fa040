"""The step-through debugger, driven from Python (and through its buttons' click handlers)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agentnb import Agent, UserError, tool
from agentnb.messages import ToolMessage
from agentnb.notebook.debugger.debugger import Debugger, Pause
from agentnb.testing import ScriptedProvider, call

CALLS: list[tuple[int, int]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    CALLS.append((a, b))
    return a + b


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


def make_agent(*replies: Any, delay: float = 0.0) -> Agent:
    return Agent(ScriptedProvider(list(replies), delay=delay), tools=[add])


def drive(test: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(asyncio.wait_for(test(), 30))


def test_step_pauses_before_every_model_and_tool_call() -> None:
    async def main() -> tuple[Debugger, Any]:
        dbg = Debugger(make_agent(call("add", a=2, b=3), "5"), widget=False).start("2+3?")
        while (pause := await dbg.next_pause()) is not None:
            assert dbg.state == "paused" and dbg.pause == pause
            assert ([] if pause.depth == 0 else [(2, 3)]) == CALLS
            dbg.step()
            assert dbg.state == "running"
        return dbg, await dbg.wait()

    dbg, result = drive(main)
    assert [(p.target, p.depth) for p in dbg.pauses] == [("model", 0), ("tool", 0), ("model", 1)]
    assert dbg.pauses[1].call is not None and dbg.pauses[1].call.arguments == {"a": 2, "b": 3}
    assert result.output == "5" and result.stop_reason == "answer"
    assert dbg.state == "finished" and dbg.result is result
    assert CALLS == [(2, 3)]


def test_continue_runs_to_the_end_without_pausing() -> None:
    async def main() -> tuple[Debugger, Any]:
        dbg = Debugger(make_agent(call("add", a=1, b=1), call("add", a=2, b=2), "done"), widget=False).start("go")
        await dbg.next_pause()
        dbg.continue_()
        result = await dbg.wait()
        assert await dbg.next_pause() is None
        return dbg, result

    dbg, result = drive(main)
    assert len(dbg.pauses) == 1
    assert result.output == "done" and CALLS == [(1, 1), (2, 2)]


async def _to_tool_pause(dbg: Debugger) -> Pause:
    await dbg.next_pause()
    dbg.step()
    pause = await dbg.next_pause()
    assert pause is not None and pause.target == "tool"
    return pause


def test_skip_does_not_run_the_tool_and_tells_the_model() -> None:
    model = ScriptedProvider([call("add", a=2, b=3), "skipped it"])

    async def main() -> Any:
        dbg = Debugger(Agent(model, tools=[add]), widget=False).start("go")
        await _to_tool_pause(dbg)
        dbg.skip()
        await dbg.next_pause()
        dbg.continue_()
        return await dbg.wait()

    result = drive(main)
    assert CALLS == []
    decision = [e for e in result.events if e.kind == "step_decision"]
    assert [(d.target, d.action) for d in decision] == [("tool", "skip")]
    told = [m for m in model.last_messages if isinstance(m, ToolMessage)]
    assert "skipped" in told[0].content


def test_edit_validates_against_the_schema_then_runs_with_new_arguments() -> None:
    async def main() -> tuple[Debugger, Any, list[str]]:
        dbg = Debugger(make_agent(call("add", a=2, b=3), "ok"), widget=False).start("go")
        await _to_tool_pause(dbg)
        problems = []
        for bad in ({"a": "two", "b": 3}, {"a": 1}, "{not json", "[1, 2]"):
            with pytest.raises(UserError) as info:
                dbg.edit(bad)  # type: ignore[arg-type]
            problems.append(str(info.value))
            assert dbg.state == "paused"  # still waiting for a decision
        dbg.edit('{"a": 40, "b": 2}')  # resumes the run
        assert await dbg.next_pause() == Pause("model", 1)
        dbg.continue_()
        return dbg, await dbg.wait(), problems

    _dbg, result, problems = drive(main)
    assert problems[0] == "invalid arguments for add: a: 'two' is not of type 'integer'"
    assert "'b' is a required property" in problems[1]
    assert "not valid JSON" in problems[2]
    assert "must be a JSON object" in problems[3]
    assert CALLS == [(40, 2)]
    edit = next(e for e in result.events if e.kind == "step_decision")
    assert edit.action == "edit" and edit.arguments == {"a": 40, "b": 2}
    assert "42" in [m.content for m in result.messages if isinstance(m, ToolMessage)]


def test_stop_at_a_pause_ends_the_run_as_cancelled() -> None:
    async def main() -> Any:
        dbg = Debugger(make_agent(call("add", a=2, b=3), "never"), widget=False).start("go")
        await _to_tool_pause(dbg)
        dbg.stop()
        return await dbg.wait()

    result = drive(main)
    assert result.stop_reason == "cancelled" and CALLS == []
    assert result.events[-1].kind == "run_finished"


def test_stop_while_running_cancels_the_task() -> None:
    async def main() -> Any:
        dbg = Debugger(make_agent(*[call("add", a=i, b=0) for i in range(20)], "x", delay=0.05), widget=False)
        dbg.start("go")
        await dbg.next_pause()
        dbg.continue_()
        while len(CALLS) < 2:
            await asyncio.sleep(0.01)
        dbg.stop()
        return await dbg.wait()

    result = drive(main)
    assert result.stop_reason == "cancelled"
    assert 2 <= len(CALLS) < 20


def test_wrong_commands_say_why() -> None:
    async def main() -> list[str]:
        dbg = Debugger(make_agent("hi"), widget=False)
        errors = []
        with pytest.raises(UserError) as info:
            await dbg.next_pause()
        errors.append(str(info.value))
        dbg.start("go")
        await dbg.next_pause()
        for command in (dbg.skip, lambda: dbg.edit({"a": 1, "b": 2})):
            with pytest.raises(UserError) as info:
                command()
            errors.append(str(info.value))
        dbg.step()
        await dbg.wait()
        with pytest.raises(UserError) as info:
            dbg.step()
        errors.append(str(info.value))
        with pytest.raises(UserError):
            dbg.start("again")
        dbg.stop()  # a finished run: nothing to do
        return errors

    errors = drive(main)
    assert "has not started" in errors[0]
    assert errors[1] == errors[2]
    assert "paused before the model call at depth 0: skip and edit apply to tool calls" in errors[1]
    assert errors[3] == "the debugger is not paused (it is finished)"


def test_commands_from_another_thread_resume_the_run() -> None:
    # ipykernel 7.0-7.3 may deliver widget callbacks on a subshell thread.
    async def main() -> Any:
        dbg = Debugger(make_agent(call("add", a=2, b=3), "5"), widget=False).start("go")
        while await dbg.next_pause() is not None:
            t = threading.Thread(target=dbg.step)
            t.start()
            t.join()
        return await dbg.wait()

    assert drive(main).output == "5"


def test_without_an_event_loop_the_run_goes_on_a_background_thread() -> None:
    dbg = Debugger(make_agent("hello"), widget=False).start("go")
    assert dbg.handle is not None
    while dbg.state != "paused":
        threading.Event().wait(0.01)
    dbg.step()
    assert dbg.handle.result_blocking(10).output == "hello"


def test_buttons_drive_the_debugger_and_show_problems() -> None:
    pytest.importorskip("ipywidgets")

    async def main() -> tuple[Debugger, Any, list[str]]:
        dbg = Debugger(make_agent(call("add", a=2, b=3), "ok")).start("go")
        view = dbg.view
        await dbg.next_pause()
        assert not view.step_button.disabled and view.skip_button.disabled and view.edit_button.disabled
        assert "paused before the model call at depth 0" in view.message.value
        assert dbg.trace.status == "paused" and "paused" in dbg.trace.header_html
        # Paused before the first model call: it is not made (nor counted) yet.
        assert "model calls <b>0</b>" in dbg.trace.header_html
        assert "paused before this model call" in dbg.trace.section_html(0)
        assert "waiting for the model" not in dbg.trace.section_html(0)
        assert dbg.trace.sections[0].title == "Depth 0 · paused before the model call"
        view.step_button.click()
        assert "model calls <b>1</b>" in dbg.trace.header_html
        await dbg.next_pause()
        assert not view.skip_button.disabled and not view.edit_button.disabled
        view.edit_button.click()
        assert view.editor_box.layout.display is None
        assert view.editor.value == '{\n  "a": 2,\n  "b": 3\n}'
        view.editor.value = '{"a": 2, "b": "x"}'
        view.apply_button.click()
        shown = [view.message.value, view.problem.value]
        assert "paused before this tool call" in dbg.trace.section_html(0)
        assert dbg.state == "paused"
        view.editor.value = '{"a": 2, "b": 5}'
        view.apply_button.click()
        assert view.editor_box.layout.display == "none"
        await dbg.next_pause()
        view.continue_button.click()
        result = await dbg.wait()
        shown.append(dbg.trace.section_html(0))
        return dbg, result, shown

    dbg, _result, shown = drive(main)
    # The problem stands beside the "paused before..." line, which stays.
    assert "paused before tool call add(a=2, b=3) at depth 0" in shown[0]
    assert "invalid arguments for add: b: &#x27;x&#x27; is not of type &#x27;integer&#x27;" in shown[1]
    # Original -> edited, both shown.
    section = shown[2]
    assert "arguments edited in the debugger" in section
    old, new = section.index('class="anb-old"'), section.index("→ run with")
    assert old < new and "&quot;b&quot;: 3" in section[old:new] and "&quot;b&quot;: 5" in section[new:]
    assert CALLS == [(2, 5)]
    view = dbg.view
    # After the run: a one-line summary instead of greyed-out buttons.
    assert view.bar.layout.display == "none" and view.summary.layout.display is None
    assert "run ended: <b>answer</b> · 1 tool call · 3 pauses · 1 edit · 0 skips" in view.summary.value
    assert dbg.trace.status == "answer"
    data, meta = dbg.view._repr_mimebundle_()
    assert "1 tool call" in data["text/plain"]
    assert "run ended" in meta["agentnb"]["html"] and "Depth 1" in meta["agentnb"]["html"]
    assert "Save transcript" in dbg.trace._save.value
    assert repr(dbg) == "Debugger(state='finished')"


def test_skip_button_shows_the_decision_in_the_trace() -> None:
    pytest.importorskip("ipywidgets")

    async def main() -> Debugger:
        dbg = Debugger(make_agent(call("add", a=2, b=3), "ok")).start("go")
        await _to_tool_pause(dbg)
        dbg.view.skip_button.click()
        await dbg.next_pause()
        dbg.view.stop_button.click()
        await dbg.wait()
        return dbg

    dbg = drive(main)
    assert "skipped by the debugger" in dbg.trace.section_html(0)
    assert dbg.trace.sections[0].title.startswith("Depth 0 · add ⤼ · ")
    assert dbg.trace.status == "cancelled"
    # Stopped while paused before the model call at depth 1: shown stopped, not "asking".
    assert dbg.trace.sections[1].title == "Depth 1 · stopped"
    assert "this model call was never sent" in dbg.trace.section_html(1)  # (it was not: issue 26.5)
    assert "model calls <b>1</b>" in dbg.trace.header_html
