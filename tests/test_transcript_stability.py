"""The transcripts of a suite of scripted runs, byte for byte, against stored files.

Each scenario runs an agent over a scripted model (tool calls, parallel calls, tool errors,
unknown tools and invalid arguments, deduplication, limits, approval, a step controller,
structured output and its repair, sub-agents, a handoff, streaming, direct output, a provider
error, a stop) and saves its transcript. Durations and run ids are set to constants (the only
values that differ between two runs); everything else is compared as written, so a refactoring of the loop
or a move of its modules that changed one event, one message or one field's order fails here.

After a deliberate change of the transcripts, rewrite the files and review the diff::

    AGENTNB_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_transcript_stability.py
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentnb import Agent, Approve, Deny, Edit, StopRun, ToolContext, ToolDecision, Usage, tool
from agentnb.testing import FunctionProvider, ScriptedProvider, Streamed, call, tool_chunks

SNAPSHOTS = Path(__file__).parent / "snapshots" / "transcripts"
UPDATE = os.environ.get("AGENTNB_UPDATE_SNAPSHOTS") == "1"
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


#: Fields that differ between two runs of one scenario: timings, and each run's own id (issue 38).
VARYING = {"duration": 0, "run_id": "RUN"}


def normalised(value: Any) -> Any:
    """``value`` with every ``duration`` and ``run_id`` set to a constant: what differs between runs."""
    if isinstance(value, dict):
        return {k: (VARYING[k] if k in VARYING else normalised(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def transcript(result: Any) -> str:
    return json.dumps(normalised(result.to_dict()), indent=1, sort_keys=False, ensure_ascii=False) + "\n"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def slow_upper(text: str) -> str:
    """Upper-case a text (async)."""
    await asyncio.sleep(0)
    return text.upper()


@tool
def fails(n: int) -> str:
    """A tool that raises."""
    raise ValueError(f"bad n: {n}")


@tool(allow_repeat=True)
def roll(sides: int = 6) -> int:
    """A tool whose repeats run again."""
    return sides


@tool
def report(ctx: ToolContext) -> str:
    """Attach an image and return directly."""
    ctx.attach_image(PNG)
    ctx.return_directly()
    return "the report"


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (pretend)."""
    return f"deleted {path}"


@dataclass
class City:
    name: str
    population: int


def s_text() -> Any:
    return Agent(ScriptedProvider(["Hello!"]), system="Be brief.").run("hi")


def s_tool() -> Any:
    return Agent(ScriptedProvider([call("add", a=2, b=3), "5"]), tools=[add]).run("2+3?")


def s_parallel_and_errors() -> Any:
    script = [
        [call("slow_upper", text="a"), call("fails", n=1), call("nope", x=1), call("add", a="x", b=1)],
        [call("add", {"a": 1}), call("slow_upper", text="b")],
        "done",
    ]
    return Agent(ScriptedProvider(script), tools=[add, slow_upper, fails]).run("go")


def s_dedup() -> Any:
    script = [
        [call("add", a=1, b=2), call("add", a=1, b=2), call("roll"), call("roll", sides=6)],
        [call("add", a=1, b=2), call("roll")],
        "3",
    ]
    return Agent(ScriptedProvider(script), tools=[add, roll]).run("dedup")


def s_tool_call_limit() -> Any:
    script = [[call("add", a=1, b=1), call("add", a=2, b=2), call("add", a=3, b=3)], call("add", a=4, b=4), ""]
    return Agent(ScriptedProvider(script), tools=[add], max_tool_calls=2).run("many")


def s_request_limit() -> Any:
    script = [call("add", a=1, b=1), call("add", a=2, b=2), "never"]
    return Agent(ScriptedProvider(script), tools=[add], limits={"requests": 2}).run("budget")


def s_token_limit() -> Any:
    script = [
        Streamed([*tool_chunks(0, "add", '{"a": 1, "b": 1}')], usage=Usage(50, 60)),
        "after the limit",
    ]
    return Agent(ScriptedProvider(script), tools=[add], limits={"total_tokens": 100}).run("tokens")


def s_approval() -> Any:
    answers = iter([Approve(), Deny("not that one"), Edit({"path": "/tmp/y"}), Edit({"wrong": 1})])
    script = [
        [
            call("delete", path="/tmp/a"),
            call("delete", path="/tmp/b"),
            call("delete", path="/tmp/x"),
            call("delete", path="/tmp/z"),
        ],
        "ok",
    ]
    return Agent(ScriptedProvider(script), tools=[delete], approver=lambda c: next(answers)).run("clean")


class Controller:
    async def before_model(self, depth: int, request: Any) -> None:
        if depth == 2:
            raise StopRun

    async def before_tool(self, depth: int, call: Any) -> ToolDecision:
        if call.arguments == {"a": 0, "b": 0}:
            return ToolDecision("skip")
        if call.arguments == {"a": 9, "b": 9}:
            return ToolDecision(arguments={"a": 1, "b": 1})
        return ToolDecision()


def s_controller_stop() -> Any:
    script = [[call("add", a=0, b=0), call("add", a=9, b=9)], call("add", a=5, b=5), "unreached"]
    return Agent(ScriptedProvider(script), tools=[add]).run("steer", controller=Controller())


def s_structured_output() -> Any:
    script = ['{"name": "Paris"}', '{"name": "Paris", "population": 2100000}']
    return Agent(ScriptedProvider(script), output_type=City).run("a city")


def s_structured_output_invalid() -> Any:
    return Agent(ScriptedProvider(["no json", "still none"]), output_type=City, max_output_retries=1).run("a city")


def s_subagents() -> Any:
    inner = Agent(ScriptedProvider([call("add", a=1, b=2), "inner: 3"]), tools=[add], name="calc")
    script = [[call("calc", prompt="1+2"), call("add", a=4, b=4)], "outer: 3 and 8"]
    return Agent(ScriptedProvider(script), tools=[inner.as_tool(description="Calculates."), add]).run("nest")


def s_handoff() -> Any:
    from agentnb import handoff

    expert = Agent(ScriptedProvider(["the expert answers"]), name="expert")
    script = [call("transfer_to_expert"), "unused"]
    return Agent(ScriptedProvider(script), tools=[handoff(expert)]).run("hand over")


def s_streaming() -> Any:
    script = [
        Streamed(["Let me ", "add. ", *tool_chunks(0, "add", '{"a": 20, "b": 22}')], usage=Usage(12, 7)),
        Streamed(["The sum ", "is 42."], usage=Usage(30, 5)),
    ]
    return Agent(ScriptedProvider(script), tools=[add], stream=True).run("20+22")


def s_direct_output() -> Any:
    return Agent(ScriptedProvider([call("report"), "unused"]), tools=[report, add]).run("report")


def s_provider_error() -> Any:
    script = [call("add", a=1, b=1), RuntimeError("the server went away")]
    return Agent(ScriptedProvider(script), tools=[add]).run("fail")


def s_function_provider_no_tools_offered() -> Any:
    def reply(messages: list[Any], tools: list[Any]) -> Any:
        return call("add", a=1, b=2) if tools else f"{len(messages)} messages, no tools"

    return Agent(FunctionProvider(reply), tools=[add], tool_choice="required", max_tool_calls=1).run("fn")


SCENARIOS: dict[str, Callable[[], Any]] = {
    name[2:]: fn for name, fn in sorted(globals().items()) if name.startswith("s_") and callable(fn)
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_transcript_is_unchanged(name: str) -> None:
    got = transcript(SCENARIOS[name]())
    path = SNAPSHOTS / f"{name}.json"
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"no stored transcript {path.name}: run with AGENTNB_UPDATE_SNAPSHOTS=1")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    assert got == path.read_text(encoding="utf-8")


async def _through_the_generator(cfg: Any, state: Any, sink: Callable[[Any], Any]) -> None:
    """``drive`` (arun's driver) replaced by the async generator ``Agent.stream`` uses."""
    from contextlib import aclosing

    from agentnb.run.loop import run_loop

    async with aclosing(run_loop(cfg, state)) as events:
        async for event in events:
            sink(event)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_both_drivers_write_the_same_transcript(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop's two drivers (events by call for ``arun``, an async generator for ``stream``)
    run the same phases: every scenario's transcript is the stored one through either."""
    monkeypatch.setattr("agentnb.run.streaming.drive", _through_the_generator)
    path = SNAPSHOTS / f"{name}.json"
    assert transcript(SCENARIOS[name]()) == path.read_text(encoding="utf-8")


def test_the_normalisation_touches_durations_only() -> None:
    """Two runs of one scenario differ in durations and run ids alone, so the files compare exactly."""
    a, b = s_parallel_and_errors().to_dict(), s_parallel_and_errors().to_dict()
    assert normalised(a) == normalised(b)
    assert normalised({"x": {"duration": 1.5, "y": [{"duration": 2}]}}) == {
        "x": {"duration": 0, "y": [{"duration": 0}]}
    }
