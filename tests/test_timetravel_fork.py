"""Fork (issue 38), counted at a real server: the recorded prefix sends no request and runs no tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import agentnb
from agentnb import Agent, RunResult, UserError, tool
from agentnb.providers import OpenAIProvider
from agentnb.testing import ScriptedProvider, call
from agentnb.testing.server import ScriptedServer, text, tool_calls

RAN: list[tuple[str, str]] = []


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(("weather", city))
    return {"Paris": "sunny", "Oslo": "snow"}.get(city, "fog")


@tool
def pack(item: str) -> str:
    """Pack an item."""
    RAN.append(("pack", item))
    return f"packed {item}"


@pytest.fixture()
def server():
    with ScriptedServer() as s:
        yield s


def three_steps(server: ScriptedServer) -> tuple[Agent, RunResult]:
    """[0] weather(Paris)  [1] weather(Oslo)  [2] the answer: 3 requests, 2 tools."""
    RAN.clear()
    server.script(
        tool_calls(("weather", {"city": "Paris"})), tool_calls(("weather", {"city": "Oslo"})), text("Sunny, then snow.")
    )
    agent = Agent(OpenAIProvider("m", base_url=server.url), tools=[weather, pack], system="Be brief.")
    result = agent.run("Paris then Oslo?")
    assert len(server.requests) == 3 and RAN == [("weather", "Paris"), ("weather", "Oslo")]
    server.reset()
    RAN.clear()
    return agent, result


def test_a_tool_result_edit_sends_only_the_steps_after_it(server) -> None:
    _, result = three_steps(server)
    server.script(text("Rain, then snow."))
    fork = result.fork(0, tool_result="rain")
    assert len(server.requests) == 1 and RAN == []  # step 1 only; step 0's tool did not run again
    assert fork.output == "Rain, then snow."
    sent = server.requests[0].body["messages"]
    assert [m.get("content") for m in sent if m["role"] == "tool"] == ["rain"]
    server.script(text("Sunny, then sleet."))
    fork = result.fork(1, tool_result="sleet")
    assert len(server.requests) == 2 and RAN == [] and fork.output == "Sunny, then sleet."
    sent = server.requests[1].body["messages"]
    assert [m.get("content") for m in sent if m["role"] == "tool"] == ["sunny", "sleet"]
    assert fork.usage.output_tokens == 7  # one live request's (the scripted server reports 7 each)


def test_a_reply_edit_sends_nothing_for_the_edited_step(server) -> None:
    _, result = three_steps(server)
    fork = result.fork(2, reply="Edited answer.")
    assert len(server.requests) == 0 and RAN == [] and fork.output == "Edited answer."
    server.script(text("After packing."))
    fork = result.fork(1, reply=[{"name": "pack", "arguments": {"item": "umbrella"}}])
    assert len(server.requests) == 1 and RAN == [("pack", "umbrella")] and fork.output == "After packing."


def test_an_arguments_edit_runs_that_call_live_and_then_the_rest(server) -> None:
    _, result = three_steps(server)
    server.script(text("Fog."))
    fork = result.fork(1, arguments={"city": "Nice"})
    assert len(server.requests) == 1 and RAN == [("weather", "Nice")]
    assert fork.output == "Fog." and fork.tool_calls == 2


def test_a_system_edit_sends_the_fork_step_live(server) -> None:
    _, result = three_steps(server)
    server.script(tool_calls(("weather", {"city": "Oslo"})), text("Snow."))
    fork = result.fork(1, system="Answer in one word.")
    assert len(server.requests) == 2 and RAN == [("weather", "Oslo")]
    assert server.requests[0].body["messages"][0] == {"role": "system", "content": "Answer in one word."}
    assert fork.lineage.edit == {"system": "Answer in one word."}


def test_another_agent_goes_on_from_the_fork_step(server) -> None:
    _, result = three_steps(server)
    other = ScriptedProvider(["Other model's answer."])
    fork = result.fork(1, agent=Agent(other, tools=[weather], system="Other prompt."))
    assert len(server.requests) == 0 and len(other.requests) == 1
    assert other.requests[0].messages[0].content == "Other prompt."
    assert fork.output == "Other model's answer." and fork.lineage.edit["system"] == "Other prompt."


def test_lineage_is_saved_and_reloaded_with_the_transcript(server, tmp_path) -> None:
    _, result = three_steps(server)
    fork = result.fork(2, reply="Edited.")
    assert (fork.lineage.parent, fork.lineage.forked_at) == (result.run_id, 2)
    assert fork.lineage.edit == {"reply": "Edited."} and fork.run_id not in (None, result.run_id)
    fork.save(tmp_path / "fork.json")
    again = RunResult.load(tmp_path / "fork.json")
    assert again.lineage == fork.lineage and again.run_id == fork.run_id
    assert [e.depth for e in again.events if e.kind == "model_request"] == [0, 1, 2]
    assert agentnb.diff(result, again).first_divergence == 2


def test_bad_edits_are_refused_with_the_reason(server) -> None:
    _, result = three_steps(server)
    for at in (3, -1):
        with pytest.raises(UserError, match=r"fork step .* is out of range: this run has steps 0 to 2"):
            result.fork(at, reply="x")
    with pytest.raises(UserError, match=r"fork step '1' is a str: a step is an int, as the trace numbers them"):
        result.fork("1", reply="x")
    with pytest.raises(UserError, match=r"no tool named 'teleport' \(tools: weather, pack\)"):
        result.fork(0, reply=[{"name": "teleport", "arguments": {}}])
    with pytest.raises(UserError, match=r"the arguments of weather fail its schema: 'city' is a required property"):
        result.fork(0, arguments={"town": "Nice"})
    with pytest.raises(UserError, match=r"no call to 'pack' at that step \(its calls: weather \(call_"):
        result.fork(0, tool_result={"pack": "x"})
    with pytest.raises(UserError, match="the model called no tool at that step"):
        result.fork(2, tool_result="x")
    with pytest.raises(UserError, match="one of reply=, arguments= and tool_result="):
        result.fork(0, reply="a", tool_result="b")
    assert len(server.requests) == 0 and RAN == []  # nothing was sent, nothing ran


def test_a_loaded_transcript_forks_with_an_agent(server, tmp_path) -> None:
    agent, result = three_steps(server)
    result.save(tmp_path / "run.json")
    loaded = RunResult.load(tmp_path / "run.json")
    with pytest.raises(UserError, match=r"loaded from a transcript\): fork it with agent="):
        loaded.fork(1, reply="x")
    server.script(text("From the loaded run."))
    fork = loaded.fork(0, tool_result="hail", agent=agent)
    assert fork.output == "From the loaded run." and len(server.requests) == 1


def test_afork_and_on_event_see_the_prefix_first() -> None:
    model = ScriptedProvider([call("weather", city="Paris"), "sunny", "edited path"])
    result = Agent(model, tools=[weather]).run("Paris?")
    seen = []
    fork = asyncio.run(agentnb.timetravel.afork(result, 0, tool_result="rain", on_event=seen.append))
    assert [e.kind for e in seen] == [e.kind for e in fork.events]
    assert [(e.kind, e.depth) for e in seen[:3]] == [("run_started", 0), ("forked", 0), ("model_request", 0)]
    assert seen[-1].kind == "run_finished" and seen[-1].depth == 1
    finished = [e for e in fork.events if e.kind == "tool_finished"]
    assert [e.result for e in finished] == ["rain"]  # the edit shows where the step is drawn
    assert asyncio.run(result.afork(0, reply="x")).output == "x"


def test_a_fork_shows_its_lineage_in_the_printer_and_the_trace_widget() -> None:
    import io

    from agentnb import TextPrinter
    from agentnb.notebook.trace.widget import TraceWidget
    from tests.untrusted_payloads import check_html

    hostile = "<img src=x onerror=\"document.title='PWN'\">"
    result = Agent(ScriptedProvider([call("weather", city="Paris"), "sunny", "after"]), tools=[weather]).run("go")
    fork = result.fork(0, tool_result=hostile)
    out = io.StringIO()
    printer = TextPrinter(out)
    for event in fork.events:
        printer(event)
    assert f"forked from run {result.run_id} at step 0: the result of weather replaced" in out.getvalue()
    widget = TraceWidget.replay(fork)
    html = widget.static_html()
    problems, visible = check_html(html)
    assert problems == [] and "forked at step 0" in visible and hostile in visible


def test_a_forcing_tool_choice_is_not_forced_again_after_step_0() -> None:
    model = ScriptedProvider([call("weather", city="Paris"), "sunny", "rain it is"])
    result = Agent(model, tools=[weather], tool_choice="required").run("Paris?")
    assert model.requests[0].tool_choice == "required" and model.requests[1].tool_choice == "auto"
    fork = result.fork(0, tool_result="rain")
    assert model.requests[2].tool_choice == "auto" and fork.output == "rain it is"


def test_a_live_step_that_repeats_a_recorded_call_is_answered_from_the_recording() -> None:
    model = ScriptedProvider([call("weather", city="Paris"), "sunny", call("weather", city="Paris"), "still rain"])
    result = Agent(model, tools=[weather]).run("Paris?")
    RAN.clear()
    fork = result.fork(0, tool_result="rain")  # the model asks for weather(Paris) again at step 1
    assert RAN == []  # not run again: the dedup knows the recorded (edited) result
    assert fork.output == "still rain"
    repeat = [m.content for m in fork.messages if m.role == "tool"][-1]
    assert "You already called weather" in repeat and "rain" in repeat and "sunny" not in repeat


def test_watchers_see_the_live_steps_at_their_depths_in_the_whole_run() -> None:
    """The live events of a fork are emitted at their depths in the whole run, so a watcher (an
    OpenTelemetry exporter) numbers them as the fork's transcript, its on_event and the widget do."""
    from agentnb.tracing.observe import unwatch, watch

    watched: list[Any] = []

    class Watcher:
        def start(self, first: Any) -> Any:
            return watched.append

    model = ScriptedProvider([call("weather", city="Paris"), call("weather", city="Oslo"), "Done.", "Hail, then fog."])
    run = Agent(model, tools=[weather]).run("Paris, then Oslo?")
    fed: list[Any] = []
    watcher = watch(Watcher())
    try:
        fork = run.fork(1, tool_result="hail", on_event=fed.append)
    finally:
        unwatch(watcher)
    live = [(e.kind, e.depth) for e in fork.events if e.depth >= 2 and e.kind != "run_started"]
    assert live and {d for _, d in live} == {2}  # step 2 is the first live one (a result edit at 1)
    assert [(e.kind, e.depth) for e in watched if e.kind != "run_started"] == live
    assert [(e.kind, e.depth) for e in fed] == [(e.kind, e.depth) for e in fork.events]
    assert fork.output == "Hail, then fog." and fork.events[-1].tool_calls == 2
