"""The context gauge (issue 47 item 2) and the tool-result cap relative to the window (item 6).

Each ``model_request`` carries its size in tokens and the model's window: exact with the
in-process tokenizer, else estimated from characters and corrected by the usage each reply
reports (clamped, so 0 or absurd usage cannot poison it). The printer, the trace header,
``RunResult.context`` and ``Session.context`` read it from the events.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from agentnb import Agent, RunResult, tool
from agentnb.context.gauge import ContextGauge, context_report
from agentnb.context.size import MAX_SCALE, MIN_SCALE, CharCount, count_request
from agentnb.events import ModelRequest, RunStarted
from agentnb.messages import AssistantMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentnb.notebook.trace.header import header_html
from agentnb.notebook.trace.state import TraceState
from agentnb.printer import format_event
from agentnb.providers.base import Completion, Provider, Request, chars_estimate
from agentnb.providers.window import Window
from agentnb.testing import ScriptedProvider

BIG = "y" * 2_000


@tool
def read() -> str:
    """Read the file."""
    return BIG


def requests_of(result: RunResult) -> list[ModelRequest]:
    return [e for e in result.events if isinstance(e, ModelRequest)]


def estimate_of(request: Request) -> int:
    return chars_estimate(request.messages, request.tools)


def run_reporting(*inputs: int | None) -> tuple[ScriptedProvider, RunResult]:
    """A run of one tool call per reported input usage, then an answer (reporting the last)."""
    replies: list[Any] = []
    for i, n in enumerate(inputs[:-1]):
        replies.append(Completion(None, (ToolCall(f"c{i}", "read", {}),), Usage(n or 0, 5)))
    replies.append(Completion("done", (), Usage(inputs[-1] or 0, 5)))
    model = ScriptedProvider(replies)
    return model, Agent(model, tools=[read], max_tool_calls=10, context_window=100_000).run("go")


def test_estimate_is_corrected_by_the_usage_each_reply_reports() -> None:
    model, result = run_reporting(None, None, None)  # pass 1: what the estimates are
    raw = [estimate_of(r) for r in model.requests]
    sizes = [e.context_tokens for e in requests_of(result)]
    assert sizes == raw and not any(e.context_exact for e in requests_of(result))  # no usage: as estimated
    model, result = run_reporting(2 * raw[0], 3 * raw[1], 1)
    sizes = [e.context_tokens for e in requests_of(result)]
    assert sizes[0] == raw[0]  # nothing reported yet
    assert sizes[1] == math.ceil(raw[1] * 2.0)  # scaled by the first reply's ratio
    assert sizes[2] == math.ceil(raw[2] * 3.0)  # then by the second's


def test_zero_or_absurd_usage_cannot_poison_the_estimate() -> None:
    model, _ = run_reporting(None, None, None)
    raw = [estimate_of(r) for r in model.requests]
    _, result = run_reporting(10**12, 0, 1)
    sizes = [e.context_tokens for e in requests_of(result)]
    assert sizes[1] == math.ceil(raw[1] * MAX_SCALE)  # absurd: clamped
    assert sizes[2] == math.ceil(raw[2] * MAX_SCALE)  # 0 reported: nothing learnt
    g = ContextGauge(ScriptedProvider([]), None)
    g.measure(Request([UserMessage("x" * 300)]))
    g.learn(Usage(1, 1))
    assert g.corrector.scale == MIN_SCALE


def test_the_count_keeps_up_with_a_conversation_changed_in_place() -> None:
    messages: list[Any] = [UserMessage("a" * 90), AssistantMessage("b" * 30), UserMessage("c" * 60)]
    count = CharCount()
    assert count.tokens(messages) == chars_estimate(messages)
    messages.append(ToolMessage("c1", "read", "d" * 900))
    assert count.tokens(messages) == chars_estimate(messages)
    messages[3] = ToolMessage("c1", "read", "[result cut]")  # compacted: counted again
    assert count.tokens(messages) == chars_estimate(messages)
    del messages[1:3]
    assert count.tokens(messages) == chars_estimate(messages)


@pytest.fixture(scope="module")
def tiny_provider() -> Any:
    pytest.importorskip("transformers")
    from agentnb.providers.hf import TransformersProvider
    from tests.tiny_model import build_tiny

    model, tokenizer = build_tiny()
    return TransformersProvider(model, tokenizer, max_new_tokens=3)


def test_exact_with_the_in_process_tokenizer(tiny_provider: Any) -> None:
    agent = Agent(tiny_provider, tools=[read], max_tool_calls=1)
    result = agent.run("Read the file and say what is in it.")
    asked = requests_of(result)
    replies = [e for e in result.events if e.kind == "model_response"]
    assert asked and all(e.context_exact for e in asked)
    assert [e.context_tokens for e in asked] == [r.usage.input_tokens for r in replies]  # as the model read it
    assert asked[0].context_window == 4096  # the tiny model's config
    assert count_request(agent.provider, Request([UserMessage("hello")]))[1] is True


def test_the_window_is_asked_once_per_provider_and_a_failing_one_is_unknown() -> None:
    class Counting(ScriptedProvider):
        asked = 0

        async def find_context_window(self) -> Window:
            type(self).asked += 1
            return Window(8192, "server:/props")

    model = Counting(["one", "two"])
    agent = Agent(model)
    first, second = agent.run("a"), agent.run("b")
    assert Counting.asked == 1
    assert first.context.window == second.context.window == 8192

    class Broken(ScriptedProvider):
        async def context_window(self) -> Window:
            raise RuntimeError("the server fell over")

    result = Agent(Broken(["fine"])).run("a")
    assert result.output == "fine" and result.context.window is None and result.context.peak


def test_event_fields_round_trip_through_a_transcript(tmp_path: Any) -> None:
    model = ScriptedProvider([Completion(None, (ToolCall("c1", "read", {}),), Usage(900, 5)), "done"])
    result = Agent(model, tools=[read], context_window=4096).run("go")
    path = tmp_path / "run.json"
    result.save(path)
    loaded = RunResult.load(path)
    assert requests_of(loaded) == requests_of(result)
    assert loaded.context == result.context
    assert result.context.window == 4096 and result.context.peak == max(result.context.requests)
    assert len(result.context.requests) == 2
    old = result.to_dict()  # a transcript from before the gauge: no such fields
    for e in old["events"]:
        for key in ("context_tokens", "context_window", "context_exact"):
            e.pop(key, None)
    before = RunResult.from_dict(old)
    assert before.context.peak is None and before.context.requests == (None, None)
    assert str(before.context) == "context not measured"


def test_printer_line_says_the_size_and_the_window() -> None:
    line = format_event(ModelRequest(2, 5, ("read",), "auto", 7_000, 10_000, False))
    assert line == "  [2] ask model (5 messages, 1 tool, choice auto; context ~7k / 10k (70%))"
    line = format_event(ModelRequest(0, 1, (), "none", 512, None, True))
    assert line == "  [0] ask model (1 message, no tools; context 512, window unknown)"
    assert format_event(ModelRequest(0, 1, (), "none")) == "  [0] ask model (1 message, no tools)"


@pytest.mark.parametrize(
    ("tokens", "colour"), [(6_900, "ok"), (7_000, "amber"), (8_999, "amber"), (9_000, "red"), (9_900, "red")]
)
def test_header_gauge_turns_amber_at_70_and_red_at_90_percent(tokens: int, colour: str) -> None:
    s = TraceState()
    s.add(RunStarted(0, "scripted", (), 10, 1))
    s.add(ModelRequest(0, 1, (), "auto", 1_200, 10_000, True))
    s.add(ModelRequest(1, 3, (), "auto", tokens, 10_000, True))
    html = header_html(s, None)
    assert f"anb-gauge-{colour}" in html
    assert f"context <b>{tokens / 1000:.1f}k".replace(".0k", "k") in html and "/ 10k" in html
    assert "step 1: 1,200; step 2: " in html  # each step's size, on hover
    gauge = html.split('class="anb-gauge')[1].split("</span>")[0]
    assert ("#cf222e" in gauge) == (colour == "red") and ("#9a6700" in gauge) == (colour == "amber")


def test_header_says_an_unknown_window_and_never_a_share() -> None:
    s = TraceState()
    s.add(ModelRequest(0, 1, (), "auto", 1_234, None, False))
    html = header_html(s, None)
    gauge = html.split('class="anb-gauge')[1].split("</span>")[0]
    assert "context <b>~1.2k</b> (window unknown)" in gauge and "%" not in gauge.split(">", 1)[1]
    assert "anb-gauge" not in header_html(TraceState(), None)  # nothing measured: no gauge


def test_tool_results_are_cut_to_a_quarter_of_a_small_window_and_kept_whole(tmp_path: Any) -> None:
    model = ScriptedProvider([Completion(None, (ToolCall("c1", "read", {}),)), "done"])
    result = Agent(model, tools=[read], context_window=400).run("go")
    seen = model.requests[1].messages[-1].content
    cap = 400 // 4 * 3  # a quarter of the window, three characters a token
    assert "characters cut: the result had 2000 characters" in seen
    assert seen.count("y") == cap
    path = tmp_path / "run.json"
    result.save(path)
    loaded = RunResult.load(path)
    finished = [e for e in loaded.events if e.kind == "tool_finished"]
    assert finished[0].result == BIG  # the transcript keeps the whole result
    # an unknown window: the fixed cap (20,000 characters), which this result is within
    model = ScriptedProvider([Completion(None, (ToolCall("c1", "read", {}),)), "done"])
    Agent(model, tools=[read]).run("go")
    assert model.requests[1].messages[-1].content == BIG
    # the user's own bound wins over the window
    model = ScriptedProvider([Completion(None, (ToolCall("c1", "read", {}),)), "done"])
    Agent(model, tools=[read], context_window=400, max_result_chars=None).run("go")
    assert model.requests[1].messages[-1].content == BIG


def test_session_says_the_conversations_size_between_runs() -> None:
    chat = Agent(ScriptedProvider([Completion("Hello, Ada.", (), Usage(20, 4)), "Ada."]), context_window=2048).session()
    assert chat.context is None
    first = chat.run("I am Ada.")
    size = chat.context
    assert size is not None and size.window == 2048
    assert size.tokens == first.context.peak + 4  # the last request and its reply's reported tokens
    chat.run("Who am I?")
    assert chat.context is not None and chat.context.tokens > size.tokens


def test_context_report_of_events_without_requests() -> None:
    report = context_report([])
    assert (report.window, report.peak, report.requests, report.fraction) == (None, None, (), None)


def test_a_provider_that_cannot_count_is_estimated() -> None:
    class Refuses(Provider):
        counts_tokens = True

        async def complete(self, request: Request) -> Completion:
            return Completion("ok")

        def estimate_input_tokens(self, request: Request) -> int | None:
            raise ValueError("no tokenizer today")

    tokens, exact = count_request(Refuses(), Request([UserMessage("x" * 30)]))
    assert (tokens, exact) == (16, False)
    assert asyncio.run(Refuses().context_window()).tokens is None


def test_chat_spans_carry_the_size_and_the_window() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agentnb.tracing.otel import SpanWatcher

    exporter, spans = InMemorySpanExporter(), TracerProvider()
    spans.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        result = Agent(ScriptedProvider(["hi"]), context_window=2048, instrument=SpanWatcher(spans)).run("hello")
        chat = next(s for s in exporter.get_finished_spans() if s.name.startswith("chat"))
        assert chat.attributes["agentnb.context.tokens"] == result.context.peak
        assert chat.attributes["agentnb.context.window"] == 2048
    finally:
        spans.shutdown()
