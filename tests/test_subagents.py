"""Agents as tools: nested events, usage and limits, Stop, transcripts, printer, spans."""

from __future__ import annotations

import asyncio
import io
import itertools
import os
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentnb import Agent, StopRun, TextPrinter, ToolDecision, UsageLimits, UserError, load_transcript, tool
from agentnb.events import SubAgentEvent
from agentnb.messages import Usage
from agentnb.testing import FunctionProvider, ScriptedProvider, call
from agentnb.tracing.otel import SpanWatcher


@tool
def lookup(word: str) -> str:
    """Look a word up."""
    return f"{word}: a word"


def three_levels(watcher: Any = None) -> Agent:
    checker = Agent(
        ScriptedProvider([call("lookup", word="42"), "42 checks out"], usage=Usage(1, 1)),
        tools=[lookup],
        name="checker",
    )
    researcher = Agent(
        ScriptedProvider([call("checker", prompt="check 42"), "found 42"], usage=Usage(10, 10)),
        tools=[checker.as_tool()],
        name="researcher",
    )
    return Agent(
        ScriptedProvider([call("researcher", prompt="find the answer"), "The answer is 42."], usage=Usage(100, 100)),
        tools=[researcher.as_tool(description="Finds facts.")],
        name="writer",
        instrument=watcher,
    )


def flatten(events: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    out = []
    for e in events:
        if isinstance(e, SubAgentEvent):
            out += flatten([e.event], (*path, e.call_id))
        else:
            out.append((path, e.kind))
    return out


def test_inner_events_are_nested_live_in_order() -> None:
    seen: list[Any] = []
    r = three_levels().run("write", on_event=seen.append)
    assert r.output == "The answer is 42."
    assert tuple(seen) == r.events
    kinds = flatten(r.events)
    # the researcher's run sits between the outer tool_started and tool_finished
    started = kinds.index(((), "tool_started"))
    finished = kinds.index(((), "tool_finished"))
    inner = kinds[started + 1 : finished]
    assert inner[0] == (("call_1",), "run_started") and inner[-1] == (("call_1",), "run_finished")
    assert (("call_1", "call_1"), "tool_finished") in inner  # the checker's own tool call, two levels down
    deepest = [e for e in r.events if isinstance(e, SubAgentEvent) and isinstance(e.event, SubAgentEvent)]
    assert deepest[0].event.event.kind == "run_started" and deepest[0].event.agent == "checker"


def test_inner_usage_and_tool_calls_count_toward_the_outer_run() -> None:
    r = three_levels().run("write")
    assert r.usage == Usage(2 * (100 + 10 + 1), 2 * (100 + 10 + 1))
    assert r.tool_calls == 3  # researcher, checker, lookup


def test_the_inner_run_gets_only_the_tool_calls_the_outer_has_left() -> None:
    inner = Agent(
        ScriptedProvider([call("lookup", word="a"), call("lookup", word="b"), "done"]), tools=[lookup], name="inner"
    )
    outer = Agent(ScriptedProvider([call("inner", prompt="go"), "ok"]), tools=[inner.as_tool()], max_tool_calls=2)
    r = outer.run("go")
    finished = [e.event for e in r.events if isinstance(e, SubAgentEvent) and e.event.kind == "run_finished"]
    assert finished[0].tool_calls == 1 and finished[0].stop_reason == "limit"
    assert r.tool_calls == 2


@tool
async def note(i: int) -> str:
    """Take a note."""
    await asyncio.sleep(0)  # let the other inner run go on: the two really interleave
    return f"note {i}"


def two_busy_helpers(limits: UsageLimits, models: list[Any] | None = None) -> tuple[Agent, list[Any]]:
    """An outer agent that calls two inner agents at once; each would take 5 notes (6 requests)."""
    models = models or [ScriptedProvider([call("note", i=k) for k in range(5)] + [f"{n} done"]) for n in "ab"]
    helpers = [Agent(m, tools=[note], name=n).as_tool() for m, n in zip(models, "ab", strict=True)]
    outer = ScriptedProvider([[call("a", prompt="go"), call("b", prompt="go")], "both done"])
    return Agent(outer, tools=helpers, limits=limits), [outer, *models]


def inner_ends(r: Any) -> list[Any]:
    return [e.event for e in r.events if isinstance(e, SubAgentEvent) and e.event.kind == "run_finished"]


def test_parallel_inner_runs_share_the_outer_request_limit() -> None:
    agent, models = two_busy_helpers(UsageLimits(requests=6))  # alone, the tree would make 14
    r = agent.run("go")
    assert sum(len(m.requests) for m in models) == 6
    assert r.output == "both done" and r.stop_reason == "limit"  # the outer kept a request for its answer
    assert [e.stop_reason for e in inner_ends(r)] == ["limit", "limit"]


def test_parallel_inner_runs_share_the_outer_tool_calls() -> None:
    agent, _ = two_busy_helpers(UsageLimits(tool_calls=4))  # 2 for a and b, 2 left for their notes
    r = agent.run("go")
    notes = [e for e in r.events if isinstance(e, SubAgentEvent) and e.event.kind == "tool_finished"]
    assert len(notes) == 2 and r.tool_calls == 4  # alone, each would take 2: 6 in all
    assert r.output == "both done"


def test_parallel_inner_runs_share_the_outer_token_budget() -> None:
    def notes_while_tools_are_offered() -> FunctionProvider:
        counter = itertools.count()
        return FunctionProvider(
            lambda m, tools: call("note", i=next(counter)) if tools else "done", usage=Usage(100, 10)
        )

    models = [notes_while_tools_are_offered() for _ in "ab"]
    agent, _ = two_busy_helpers(UsageLimits(total_tokens=1000), models)  # 110 tokens a request
    r = agent.run("go")
    # Held before every request in the tree (agentnb.run.budget): alone, each helper would take 10
    # notes (1,210 tokens); together they stop within what the outer run has left.
    assert 0 < r.usage.total_tokens <= 1000 and r.overrun == ()
    limits = [e.event for e in r.events if isinstance(e, SubAgentEvent) and e.event.kind == "limit_reached"]
    assert [e.limit for e in limits] == ["total_tokens", "total_tokens"]
    assert r.stop_reason == "limit" and r.limit == "total_tokens"
    assert [e.stop_reason for e in inner_ends(r)] == ["limit", "limit"]


def test_stop_inside_the_inner_run_stops_both() -> None:
    class StopInInner:
        async def before_model(self, depth: int, request: Any) -> None:
            if any(m.content == "check 42" for m in request.messages if m.role == "user"):
                raise StopRun

        async def before_tool(self, depth: int, call: Any) -> ToolDecision:
            return ToolDecision()

    r = three_levels().run("write", controller=StopInInner())
    assert r.stop_reason == "cancelled"
    inner_ends = [k for path, k in flatten(r.events) if path and k == "run_finished"]
    assert len(inner_ends) == 2  # the checker and the researcher both ended (cancelled)


def test_cancelling_the_task_stops_the_inner_run_too() -> None:
    @tool
    async def slow() -> str:
        """Wait."""
        await asyncio.sleep(10)
        return "late"

    inner = Agent(ScriptedProvider([call("slow"), "never"]), tools=[slow], name="inner")
    outer = Agent(ScriptedProvider([call("inner", prompt="go"), "never"]), tools=[inner.as_tool()])

    async def main() -> Any:
        task = asyncio.ensure_future(outer.arun("go"))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError) as info:
            await task
        return info.value.run_result

    r = asyncio.run(main())
    assert r.stop_reason == "cancelled"
    inner_end = [e.event for e in r.events if isinstance(e, SubAgentEvent) and e.event.kind == "run_finished"]
    assert inner_end and inner_end[0].stop_reason == "cancelled"


def test_the_debugger_steps_into_the_inner_run() -> None:
    seen: list[tuple[str, str]] = []

    class Record:
        async def before_model(self, depth: int, request: Any) -> None:
            seen.append(("model", request.messages[0].content))

        async def before_tool(self, depth: int, call: Any) -> ToolDecision:
            seen.append(("tool", call.name))
            return ToolDecision()

    three_levels().run("write", controller=Record())
    assert ("tool", "lookup") in seen and ("model", "check 42") in seen


def test_transcript_keeps_the_nested_runs(tmp_path: Any) -> None:
    r = three_levels().run("write")
    path = os.path.join(tmp_path, "run.json")
    r.save(path)
    assert load_transcript(path).events == r.events


def test_printer_indents_the_inner_runs() -> None:
    out = io.StringIO()
    three_levels().run("write", on_event=TextPrinter(out))
    lines = out.getvalue().splitlines()
    # each level gets the tool calls its caller has left: 10, then 9, then 8
    assert "  [0]   | researcher: run started: model scripted, tools checker, max 9 tool calls" in lines
    assert "  [0]   | [0]   | checker: run started: model scripted, tools lookup, max 8 tool calls" in lines
    assert any(line.startswith("  [0]   | [0]   | [0] lookup -> 42: a word") for line in lines)


def test_three_level_span_tree_matches_the_event_stream() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    r = three_levels(SpanWatcher(provider)).run("write")

    def from_events(events: Any) -> list[Any]:
        """The span tree the events describe: [name, what it says, children] per run, model
        call and tool call (a run's stop reason, a model call's tokens, a tool call's id)."""
        tree: list[Any] = []
        run: list[Any] = []
        tools: dict[str, list[Any]] = {}
        inner: dict[str, list[Any]] = {}
        for e in events:
            if e.kind == "run_started":
                tree.append([f"invoke_agent {e.agent_name}", None, run])
            elif e.kind == "run_finished":
                tree[-1][1] = e.stop_reason
            elif e.kind == "model_request":
                run.append(["chat scripted", None, []])
            elif e.kind == "model_response":
                run[-1][1] = (e.usage.input_tokens, e.usage.output_tokens)
            elif e.kind == "tool_started":
                tools[e.call_id] = []
                run.append([f"execute_tool {e.name}", e.call_id, tools[e.call_id]])
            elif e.kind == "sub_agent":
                inner.setdefault(e.call_id, []).append(e.event)
        for call_id, evs in inner.items():
            tools[call_id].extend(from_events(evs))
        return tree

    spans = exporter.get_finished_spans()
    children: dict[Any, list[Any]] = {}
    for s in spans:
        children.setdefault(s.parent.span_id if s.parent else None, []).append(s)

    def says(s: Any) -> Any:
        a = s.attributes
        op = a["gen_ai.operation.name"]
        if op == "chat":
            return (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"])
        return a["gen_ai.tool.call.id"] if op == "execute_tool" else a["agentnb.stop_reason"]

    def from_spans(parent: Any) -> list[Any]:
        kids = sorted(children.get(parent, []), key=lambda s: s.start_time)
        return [[s.name, says(s), from_spans(s.context.span_id)] for s in kids]

    assert from_spans(None) == from_events(r.events)
    assert len(spans) == 3 + 6 + 3  # three runs, six model calls, three tool calls


def test_as_tool_needs_a_name() -> None:
    with pytest.raises(UserError, match="needs a name"):
        Agent(ScriptedProvider(["x"])).as_tool()
    with pytest.raises(UserError, match="must be 1-64"):
        Agent(ScriptedProvider(["x"])).as_tool(name="bad name")
