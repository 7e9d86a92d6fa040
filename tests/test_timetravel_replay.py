"""Replay (issue 38): a Provider made of a recording; requests checked; tools still run."""

from __future__ import annotations

import json

import pytest

import agentnb
from agentnb import Agent, ReplayMismatch, RunResult, StopRun, tool
from agentnb.errors import TranscriptError
from agentnb.providers import OpenAIProvider
from agentnb.testing import ScriptedProvider, Streamed, call, tool_chunks
from agentnb.testing.server import ScriptedServer, text, tool_calls

RAN: list[str] = []


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    return {"Paris": "sunny", "Oslo": "snow"}.get(city, "unknown")


@tool
def other(x: int) -> int:
    """Another tool."""
    return x


def recorded_over_http(stream: bool = False) -> RunResult:
    with ScriptedServer() as server:
        server.script(
            tool_calls(("lookup", {"city": "Paris"})), tool_calls(("lookup", {"city": "Oslo"})), text("Sunny; snow.")
        )
        result = Agent(OpenAIProvider("m", base_url=server.url), tools=[lookup], stream=stream).run("Paris and Oslo?")
        assert len(server.requests) == 3
    return result


def test_replay_with_the_server_stopped_answers_the_same_and_runs_the_tools(tmp_path) -> None:
    result = recorded_over_http()
    path = tmp_path / "run.json"
    result.save(path)  # the server is gone: only the file answers
    RAN.clear()
    again = Agent(agentnb.replay(path), tools=[lookup]).run("Paris and Oslo?")
    assert again.output == "Sunny; snow." and again.stop_reason == "answer"
    assert RAN == ["Paris", "Oslo"]  # the tools are the code under test: they ran again
    assert [m.content for m in again.messages if m.role == "tool"] == ["sunny", "snow"]
    assert again.cost == 0.0  # a replay costs nothing
    assert again.usage.input_tokens == result.usage.input_tokens  # the recorded token counts


def test_a_streamed_run_replays_as_the_same_stream() -> None:
    model = ScriptedProvider(
        [
            Streamed(["Looking ", "it up. ", *tool_chunks(0, "lookup", '{"city": "Paris"}', pieces=3)]),
            Streamed(["It is ", "sunny", "."]),
        ]
    )
    first = Agent(model, tools=[lookup], stream=True).run("Paris?")
    again = Agent(agentnb.replay(first), tools=[lookup], stream=True).run("Paris?")

    def deltas(r: RunResult) -> list[tuple]:
        return [
            (e.kind, e.depth, getattr(e, "text", None), getattr(e, "index", None), getattr(e, "arguments", None))
            for e in r.events
            if e.kind in ("text_delta", "tool_call_delta")
        ]

    assert deltas(again) == deltas(first) and len(deltas(first)) == 8
    assert again.output == "It is sunny."


def test_a_streamed_http_run_replays_its_deltas_in_order() -> None:
    first = recorded_over_http(stream=True)
    again = Agent(agentnb.replay(first), tools=[lookup], stream=True).run("Paris and Oslo?")
    kinds = [e.kind for e in first.events if "delta" in e.kind]
    assert kinds and [e.kind for e in again.events if "delta" in e.kind] == kinds
    assert again.output == first.output


def test_a_different_prompt_is_a_mismatch_at_step_0_naming_the_field() -> None:
    first = Agent(ScriptedProvider([call("lookup", city="Paris"), "sunny"]), tools=[lookup]).run("Paris?")
    with pytest.raises(ReplayMismatch) as info:
        Agent(agentnb.replay(first), tools=[lookup]).run("Oslo?")
    err = info.value
    assert (err.step, err.field) == (0, "messages[0].content")
    assert "'Paris?'" in str(err) and "'Oslo?'" in str(err) and err.diff == "- 'Paris?'\n+ 'Oslo?'"


def test_a_different_tool_set_is_a_mismatch_on_tools() -> None:
    first = Agent(ScriptedProvider([call("lookup", city="Paris"), "sunny"]), tools=[lookup]).run("Paris?")
    with pytest.raises(ReplayMismatch) as info:
        Agent(agentnb.replay(first), tools=[lookup, other]).run("Paris?")
    assert info.value.field == "tools" and "other" in str(info.value)


def test_a_tool_that_now_returns_something_else_is_a_mismatch_at_the_next_step() -> None:
    first = Agent(ScriptedProvider([call("lookup", city="Paris"), "sunny"]), tools=[lookup]).run("Paris?")

    @tool(name="lookup")
    def changed(city: str) -> str:
        """The weather in a city."""
        return "rain"

    with pytest.raises(ReplayMismatch) as info:
        Agent(agentnb.replay(first), tools=[changed]).run("Paris?")
    assert (info.value.step, info.value.field) == (1, "messages[2].content")
    assert "'sunny'" in str(info.value) and "'rain'" in str(info.value)


def test_call_ids_do_not_matter() -> None:
    first = Agent(ScriptedProvider([call("lookup", city="Paris"), "sunny"]), tools=[lookup]).run("Paris?")
    data = first.to_dict()
    data["messages"][1]["tool_calls"][0]["id"] = "other_id_7"
    data["messages"][2]["tool_call_id"] = "other_id_7"
    assert Agent(agentnb.replay(RunResult.from_dict(data)), tools=[lookup]).run("Paris?").output == "sunny"


def test_a_request_past_the_end_of_the_recording_says_so() -> None:
    first = Agent(ScriptedProvider(["Hi."]), system="Be brief.").run("hello")
    agent = Agent(agentnb.replay(first), system="Be brief.")
    assert agent.run("hello").output == "Hi."
    assert agent.run("hello").output == "Hi."  # the same first request starts the replay over
    with pytest.raises(ReplayMismatch) as info:
        agent.run("Hi.", history=agent.run("hello"))
    assert (info.value.step, info.value.field) == (1, "steps")
    assert "the recording has 1 model steps" in str(info.value)


def test_a_replay_interrupted_by_stop_keeps_what_ran_and_can_be_replayed_again() -> None:
    first = Agent(
        ScriptedProvider([call("lookup", city="Paris"), call("lookup", city="Oslo"), "done"]), tools=[lookup]
    ).run("go")

    class StopAtStep2:
        async def before_model(self, depth, request):
            if depth == 2:
                raise StopRun

        async def before_tool(self, depth, call):
            return agentnb.ToolDecision()

    replayer = agentnb.replay(first)
    agent = Agent(replayer, tools=[lookup])
    stopped = agent.run("go", controller=StopAtStep2())
    assert stopped.stop_reason == "cancelled" and stopped.tool_calls == 2
    assert [m.content for m in stopped.messages if m.role == "tool"] == ["sunny", "snow"]
    assert agent.run("go").output == "done"  # nothing lost: the recording replays whole again


def test_a_transcript_from_another_version_or_corrupt_is_a_clear_error(tmp_path) -> None:
    first = Agent(ScriptedProvider(["Hi."])).run("hello")
    data = first.to_dict()
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**data, "version": 99}))
    with pytest.raises(TranscriptError, match=r"future\.json: transcript version 99 is not supported"):
        agentnb.replay(future)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data)[:-20])
    with pytest.raises(TranscriptError, match=r"broken\.json: not a transcript: invalid JSON"):
        agentnb.replay(broken)
    with pytest.raises(agentnb.UserError, match="expected a RunResult or a transcript's path"):
        agentnb.replay(42)


def test_an_old_transcript_without_run_ids_still_replays(tmp_path) -> None:
    first = Agent(ScriptedProvider(["Hi."])).run("hello")
    data = first.to_dict()
    del data["events"][0]["run_id"]  # as written before runs had ids
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    assert RunResult.load(path).run_id is None
    assert Agent(agentnb.replay(path)).run("hello").output == "Hi."


def test_a_priced_run_saves_loads_and_replays(tmp_path) -> None:
    from agentnb import Usage
    from agentnb.providers.base import Completion

    priced = Completion("Hi.", usage=Usage(12, 3, 0.0042))
    first = Agent(ScriptedProvider([priced])).run("hello")
    assert first.cost == 0.0042
    first.save(tmp_path / "priced.json")
    loaded = RunResult.load(tmp_path / "priced.json")  # a Usage with a cost in every model_response
    assert loaded.events[2].usage.cost == 0.0042 and loaded == first
    assert Agent(agentnb.replay(loaded)).run("hello").cost == 0.0


def test_a_different_output_schema_is_a_mismatch() -> None:
    first = Agent(ScriptedProvider(['{"city": "Paris"}']), output_type=dict[str, str]).run("Capital?")
    assert first.value == {"city": "Paris"}
    assert Agent(agentnb.replay(first), output_type=dict[str, str]).run("Capital?").value == {"city": "Paris"}
    with pytest.raises(ReplayMismatch) as info:
        Agent(agentnb.replay(first), output_type=dict[str, int]).run("Capital?")
    assert info.value.field == "output"
