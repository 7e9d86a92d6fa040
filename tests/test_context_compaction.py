"""Compaction (issue 47 items 3 and 4): cheapest steps first, an event that holds what was sent,
and exact under replay, cassettes, fork and diff."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentnb import Agent, Compaction, ContextOverflow, ReplayMismatch, Session, TextPrinter, diff, replay, tool
from agentnb.context.compaction import SUMMARY_HEAD, sent_messages, shrink, turns
from agentnb.errors import ProviderError, TranscriptError, UserError
from agentnb.events import ContextCompacted, event_from_dict
from agentnb.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agentnb.notebook.trace.render import depth_html
from agentnb.notebook.trace.state import TraceState
from agentnb.providers.base import Completion, Provider
from agentnb.testing import ScriptedProvider, call
from agentnb.timetravel.canonical import canonical_messages

WINDOW = 6000  # tokens; each result below is about 2,000 (3 characters a token)


@tool
def read(n: int) -> str:
    """Read chunk n."""
    return f"chunk {n} " + "x" * 6000


def reads(n: int, answer: str = "done") -> list[object]:
    return [call("read", n=i) for i in range(n)] + [answer]


def agent(model: Provider, policy: Compaction | None = Compaction(), **kw: object) -> Agent:
    kw = {"max_result_chars": None, **kw}  # whole results (not a share of the window): the sizes below
    return Agent(model, tools=[read], context_window=WINDOW, context=policy, system="Be brief.", **kw)  # type: ignore[arg-type]


def sent(model: ScriptedProvider) -> list[list[dict]]:
    return [canonical_messages(r.messages) for r in model.requests]


def compactions(result) -> list[ContextCompacted]:
    return [e for e in result.events if e.kind == "context_compacted"]


@pytest.fixture(scope="module")
def long_run():
    """Six reads of 2,000 tokens each in a 6,000-token window: compacted twice."""
    model = ScriptedProvider(reads(6))
    return agent(model).run("Read all chunks."), model


# -- the policy and its steps ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"at": 0}, "at=0"),
        ({"at": 1.5}, "at=1.5"),
        ({"at": 0.5, "to": 0.6}, "to=0.6"),
        ({"keep": 0}, "keep"),
        ({"timeout": 0}, "timeout"),
        ({"prompt": " "}, "prompt"),
        ({"at": "high"}, "at="),
    ],
)
def test_a_bad_policy_is_refused_at_once(kw, says):
    with pytest.raises(UserError, match=says):
        Compaction(**kw)


def test_context_takes_a_policy_only():
    with pytest.raises(UserError, match=r"context= takes an agentnb\.Compaction"):
        Agent(ScriptedProvider([]), context=0.8)  # type: ignore[arg-type]


def test_steps_keep_the_head_the_newest_turn_and_calls_with_their_results():
    msgs = [SystemMessage("s"), UserMessage("first")]
    for i in range(4):
        msgs += [
            AssistantMessage(None, (ToolCall(f"c{i}", "read", {"n": i}),)),
            ToolMessage(f"c{i}", "read", "y" * 900),
        ]
    count = lambda ms: sum(len(getattr(m, "content", None) or "") for m in ms) // 3  # noqa: E731
    cut = shrink(msgs, count, 60, Compaction(clear=False))
    assert cut.steps == ("drop",)
    assert cut.messages[:2] == msgs[:2] and cut.messages[2:] == msgs[-2:]  # head, then the newest turn whole
    assert [m.role for m in cut.dropped] == ["assistant", "tool"] * 3
    assert turns(cut.messages, 2) == [(2, 4)]
    cleared = shrink(msgs, count, 800, Compaction())
    assert cleared.steps == ("clear",) and [c[0] for c in cleared.cleared] == ["c0", "c1"]  # oldest first, no more
    assert cleared.messages[-1].content == "y" * 900


def test_a_run_compacts_and_keeps_the_whole_history(long_run):
    result, model = long_run
    assert result.output == "done" and result.stop_reason == "answer"
    events = compactions(result)
    assert [(e.depth, e.steps, e.reason) for e in events] == [(3, ("clear",), "at=0.8"), (5, ("clear",), "at=0.8")]
    for e in events:
        assert e.tokens_before > 0.8 * WINDOW >= 0.5 * WINDOW >= e.tokens_after and e.window == WINDOW
    # the transcript keeps every message whole; the model got the markers
    assert len(result.messages) == 15 and all(len(m.content) > 6000 for m in result.messages if m.role == "tool")
    first = result.messages[2].tool_calls[0].id
    marker = model.requests[3].messages[3].content
    assert marker == (
        f"[Result of read (call {first}) cleared to fit the context window: 6,008 characters cut; "
        "call read again if you need it.]"
    )
    assert [c[1:] for c in events[0].cleared] == [("read", 6008)] * 2 and events[0].cleared[0][0] == first


def test_the_event_holds_what_was_sent(long_run, tmp_path):
    result, model = long_run
    path = tmp_path / "run.json"
    result.save(path)
    loaded = type(result).load(path)
    assert compactions(loaded) == compactions(result)
    last = compactions(loaded)[-1]
    assert last.messages[0] == {"history": 0}  # a message the transcript has is referred to, not copied
    base = sent_messages(last.messages, loaded.messages)
    assert last.upto == 12 and canonical_messages(base) == sent(model)[5]  # the request it compacted
    rebuilt = base + list(loaded.messages[last.upto : 14])
    assert canonical_messages(rebuilt) == sent(model)[6]  # the next request, from the transcript alone


def test_summary_by_a_given_summarizer_with_its_prompt():
    summarizer = ScriptedProvider(["Chunks 0 and 1 were all x."])
    model = ScriptedProvider(reads(4))
    policy = Compaction(clear=False, summarizer=summarizer, prompt="Summarise in one line.")
    result = agent(model, policy).run("Read all chunks.")
    (event,) = compactions(result)
    assert event.steps == ("drop", "summarize") and event.summary == "Chunks 0 and 1 were all x."
    asked = summarizer.requests[0]
    assert asked.messages[0].content == "Summarise in one line." and not asked.tools
    assert "read returned: chunk 1" in asked.messages[1].content  # the newest of what went, when it is long
    note = model.requests[3].messages[2]
    assert note.role == "user" and note.content == f"{SUMMARY_HEAD}\nChunks 0 and 1 were all x."
    assert [m.role for m in model.requests[3].messages] == ["system", "user", "user", "assistant", "tool"]


class Hangs(Provider):
    name = "hangs"

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def complete(self, request):
        self.asked.set()
        await asyncio.Event().wait()  # never answers


@pytest.mark.parametrize(
    ("summarizer", "says"),
    [
        (ScriptedProvider([ProviderError("down", status=503)]), "the summariser failed (ProviderError: down)"),
        (ScriptedProvider([""]), "the summariser returned nothing"),
        (Hangs(), "no answer within 0.2 s"),
    ],
)
def test_a_summarizer_that_fails_leaves_the_drop(summarizer, says):
    model = ScriptedProvider(reads(4))
    policy = Compaction(clear=False, summarizer=summarizer, timeout=0.2)
    result = agent(model, policy).run("Read all chunks.")
    (event,) = compactions(result)
    assert result.output == "done" and event.steps == ("drop",) and event.summary is None
    assert says in event.note and "the drop stands" in event.note
    assert [m.role for m in model.requests[3].messages] == ["system", "user", "assistant", "tool"]


def test_the_own_provider_summarizes_and_its_usage_counts():
    model = ScriptedProvider([*reads(3)[:3], Completion("The summary.", usage=_usage(50, 7)), *reads(4)[3:]])
    result = agent(model, Compaction(clear=False, summarize=True)).run("Read all chunks.")
    (event,) = compactions(result)
    assert event.summary == "The summary." and event.usage.output_tokens == 7
    assert result.usage.output_tokens >= 7 and result.output == "done"


def _usage(i: int, o: int):
    from agentnb.messages import Usage

    return Usage(i, o)


def test_what_can_never_go_is_larger_than_the_window():
    model = ScriptedProvider(["never"])
    a = Agent(model, context_window=100, context=Compaction(), system="s " * 400)
    result = a.run("hi")
    err = result.exception
    assert isinstance(err, ContextOverflow) and err.window == 100 and err.tokens > 100
    assert "the system prompt, the first user message" in str(err) or "nothing could be left out" in str(err)
    assert model.requests == [] and result.stop_reason == "error"


def test_an_unknown_window_sends_the_request_whole():
    model = ScriptedProvider(reads(4))
    result = Agent(model, tools=[read], context=Compaction()).run("Read all chunks.")
    assert compactions(result) == [] and len(model.requests[-1].messages) == 9


# -- views ------------------------------------------------------------------------------------


def test_printer_trace_and_event_json(long_run):
    result, _ = long_run
    event = compactions(result)[0]
    assert event_from_dict(json.loads(json.dumps(event.to_dict()))) == event
    lines: list[str] = []
    printer = TextPrinter(file=_Lines(lines))
    for e in result.events:
        printer(e)
    assert any("[3] context compacted (clear): " in line and "(at=0.8)" in line for line in lines)
    state = TraceState()
    for e in result.events:
        state.add(e)
    html = depth_html(state.depths[3])
    assert "<details><summary>" in html and "context compacted (clear)" in html and "read (call " in html


def test_a_summary_is_never_live_html():
    model = ScriptedProvider(reads(4))
    policy = Compaction(clear=False, summarizer=ScriptedProvider(["<script>alert(1)</script><b>x</b>"]))
    result = agent(model, policy).run("Read all chunks.")
    state = TraceState()
    for e in result.events:
        state.add(e)
    html = depth_html(state.depths[3])
    assert "<script>" not in html and "<b>x</b>" not in html and "&lt;script&gt;" in html


class _Lines:
    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def write(self, text: str) -> None:
        self.lines.extend(text.splitlines())

    def flush(self) -> None:
        pass


# -- time travel ------------------------------------------------------------------------------


def test_replay_matches_a_compacted_run_request_for_request(tmp_path):
    summarizer = ScriptedProvider(["Chunks 0 and 1: x.", "Chunks 0 to 2: x."])
    policy = Compaction(clear=False, summarizer=summarizer)
    first = agent(ScriptedProvider(reads(5)), policy).run("Read all chunks.")
    assert [e.steps for e in compactions(first)] == [("drop", "summarize"), ("drop", "summarize")]
    again = agent(replay(first), policy).run("Read all chunks.")  # the replay answers the summariser too
    assert again.output == "done" and _what(again) == _what(first) and len(summarizer.requests) == 2
    path = tmp_path / "run.json"
    first.save(path)
    assert agent(replay(str(path)), policy).run("Read all chunks.").output == "done"
    # an agent not told the window: the replay knows the one the recording compacted with
    bare = Agent(replay(first), tools=[read], context=policy, system="Be brief.", max_result_chars=None).run(
        "Read all chunks."
    )
    assert bare.output == "done" and _what(bare) == _what(first)
    with pytest.raises(ReplayMismatch, match="replay step 3: the request differs"):  # another policy: other requests
        agent(replay(first), Compaction(summarize=True)).run("Read all chunks.").raise_for_error()


def test_a_cassette_records_and_answers_the_summarizer(tmp_path):
    from agentnb import cassette

    path = tmp_path / "calls.jsonl"
    policy = Compaction(clear=False, summarizer=ScriptedProvider(["Chunks 0 and 1: x."]))
    with cassette(path, mode="once"):
        first = agent(ScriptedProvider(reads(4)), policy).run("Read all chunks.")
    offline = Compaction(clear=False, summarizer=ScriptedProvider([]))  # would fail if asked
    with cassette(path, mode="replay"):
        again = agent(ScriptedProvider([]), offline).run("Read all chunks.")
    assert again.output == "done" and _what(again) == _what(first) and _what(first)[0][3] == "Chunks 0 and 1: x."


def _what(result) -> list[tuple]:
    return [(e.depth, e.steps, e.messages, e.summary) for e in compactions(result)]


def test_a_fork_before_a_compaction_compacts_again_as_the_original_did(long_run):
    result, model = long_run
    live = ScriptedProvider(reads(6)[2:])
    fork = result.fork(2, agent=agent(live))  # step 2 sent live; the compactions at 3 and 5 come again
    assert fork.output == "done"
    assert [(e.depth, e.steps, [c[1:] for c in e.cleared]) for e in compactions(fork)] == [
        (e.depth, e.steps, [c[1:] for c in e.cleared]) for e in compactions(result)
    ]
    assert sent(live) == sent(model)[2:]


def test_a_fork_after_a_compaction_starts_from_the_compacted_messages(long_run):
    result, model = long_run
    live = ScriptedProvider(reads(6)[4:])
    fork = result.fork(4, agent=agent(live))
    assert fork.output == "done" and sent(live)[0] == sent(model)[4]  # not the whole history
    assert "cleared to fit the context window" in live.requests[0].messages[3].content


def test_diff_shows_a_compaction_as_a_step_difference(long_run):
    result, _ = long_run
    whole = agent(ScriptedProvider(reads(6)), None).run("Read all chunks.")
    d = diff(result, whole)
    assert (d.first_divergence, d.field) == (3, "context")
    assert "context compacted: clear (2 results)" in str(d)
    assert diff(result, agent(ScriptedProvider(reads(6))).run("Read all chunks.")).same


# -- sessions ---------------------------------------------------------------------------------


def test_a_session_compacts_goes_on_from_it_and_keeps_its_policy(tmp_path):
    model = ScriptedProvider([*reads(2, "one"), *reads(2, "two")])
    chat = Session(
        Agent(model, tools=[read], context_window=WINDOW, system="S", max_result_chars=None), context=Compaction(at=0.7)
    )
    chat.run("a")
    second = chat.run("b")
    assert [e.depth for e in compactions(second)] == [1, 2] and chat.compacted is not None
    path = tmp_path / "chat.json"
    chat.save(path)
    nxt = ScriptedProvider(["three"])
    again = Session.load(path, Agent(nxt, tools=[read], context_window=WINDOW, system="S", max_result_chars=None))
    assert again.compaction == Compaction(at=0.7) and again.run("c").output == "three"
    first = nxt.requests[0].messages  # the saved compaction, then the rest of the conversation
    assert "cleared to fit the context window" in first[3].content
    with_own = Session(Agent(ScriptedProvider([])), context=Compaction(summarizer=ScriptedProvider([])))
    with_own.save(path)
    with pytest.raises(TranscriptError, match="own summariser"):
        Session.load(path, Agent(ScriptedProvider([])))
    given = Compaction(summarizer=ScriptedProvider(["s"]))
    assert Session.load(path, Agent(ScriptedProvider([])), context=given).compaction is given


def test_spans_carry_a_compaction_without_its_summary():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentnb.tracing.otel import SpanWatcher

    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    policy = Compaction(clear=False, summarizer=ScriptedProvider(["secret summary text"]))
    agent(ScriptedProvider(reads(4)), policy, instrument=SpanWatcher(tracer)).run("Read all chunks.")
    found = [e for s in exporter.get_finished_spans() for e in s.events if e.name.endswith("context_compacted")]
    assert len(found) == 1 and found[0].attributes["steps"] == ("drop", "summarize")
    assert found[0].attributes["tokens_after"] < found[0].attributes["tokens_before"]
    assert "secret summary text" not in str(dict(found[0].attributes))
