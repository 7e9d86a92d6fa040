"""The live trace widget, through its traits and children, driven by scripted providers."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

pytest.importorskip("ipywidgets")

from agentnb import Agent, RunResult, ToolContext, Usage, tool
from agentnb.events import EVENT_TYPES, CallDecision, Event
from agentnb.notebook.cells.runner import drive, start_run
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.providers.base import Completion
from agentnb.testing import ScriptedProvider, Streamed, call, tool_chunks

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2273a4a0000000049454e44ae426082"
)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def essay(topic: str) -> str:
    """Write a long text about a topic."""
    return f"{topic}: " + "lorem ipsum " * 200


@tool
def boom() -> str:
    """Always fails."""
    raise ValueError("kaboom")


@tool(allow_repeat=True)
def ticket(title: str) -> str:
    """Open a ticket."""
    return f"opened {title}"


@tool
def snapshot(ctx: ToolContext) -> str:
    """Take a picture."""
    ctx.attach_image(PNG)
    return "took a picture"


@tool(direct_output=True)
def final(text: str) -> str:
    """Answer directly."""
    return text


TOOLS = [add, essay, boom, ticket, snapshot, final]


def busy_script() -> list[Any]:
    """A run that makes the loop emit nearly every kind of event."""
    return [
        Streamed(["Let me ", "add.", *tool_chunks(0, "add", '{"a": 2, "b": 3}')], usage=Usage(50, 7)),
        [call("add", a=2, b=3), call("nope", x=1), call("add", a="two")],  # repeat, unknown, invalid
        [call("essay", topic="cats"), call("boom"), call("snapshot")],
        [call("ticket", title="t"), call("ticket", title="t")],  # allow_repeat
        Completion("All **done**: 5.", events=(CallDecision(0, "answer", "no tool fits the request"),)),
    ]


def run_with_widget(replies: list[Any], *, max_tool_calls: int = 10, **options: Any) -> tuple[TraceWidget, Any]:
    w = TraceWidget(**options)
    agent = Agent(
        ScriptedProvider(replies, usage=Usage(10, 2)), tools=TOOLS, max_tool_calls=max_tool_calls, stream=True
    )
    result = agent.run("go", on_event=w)
    return w, result


def kinds(events: Any) -> set[str]:
    return {e.kind for e in events}


def test_every_event_kind_is_shown() -> None:
    w, result = run_with_widget(busy_script())
    limited, _ = run_with_widget([call("add", a=1, b=1), "ok"], max_tool_calls=1)
    direct, _ = run_with_widget([call("final", text="straight from the tool")])
    typed = TraceWidget()  # structured output through UnTooled: output_mode and output_validation
    Agent(ScriptedProvider(['{"a": 1}'], native_tools=False), output_type=dict[str, int]).run("go", on_event=typed)
    seen = kinds(result.events) | kinds(limited.state.events) | kinds(direct.state.events) | kinds(typed.state.events)
    # step_decision comes from the debugger (tests/test_debugger.py checks its rendering);
    # reasoning_summary from the OpenAI Responses route (tests/test_openai_responses.py); the
    # route and constraint events from OpenAIProvider's untooled route (tests/test_openai_untooled.py),
    # call_repair from its re-ask of a call that broke its schema (tests/test_untooled_repair.py),
    # call_steered from a call decoded token by token on a server (tests/test_openai_steer.py),
    # calls_from_text from a native reply with its calls in the text (tests/test_text_calls.py).
    others = {
        "step_decision",
        "reasoning_summary",
        "route_switched",
        "constraint_dropped",
        "call_repair",
        "call_steered",
        "calls_from_text",
        # approvals: tests/test_approval.py (the widget as approver)
        "approval_requested",
        "approval_decided",
        # tests/test_retry.py and tests/test_fallback.py
        "guidance_skipped",  # tests/test_openai_guidance_cost.py
        "request_retried",
        "provider_answered",
        # agents as tools and sessions: tests/test_trace_nested.py
        "sub_agent",
        "history_trimmed",
        "context_compacted",  # compaction: tests/test_context_compaction.py
        "forked",  # a fork's lineage: tests/test_timetravel_fork.py
        "model_loading",  # an in-process model's first request: tests/test_lazy_model.py
        "user_interjected",  # a message to the running agent: tests/test_inbox.py
    }
    assert seen | others == set(EVENT_TYPES)

    assert w.status == "answer"
    assert sorted(w.sections) == [0, 1, 2, 3, 4]
    html = {d: w.section_html(d) for d in w.sections}
    assert "Let me add." in html[0]  # streamed text
    assert "50 in / 7 out tokens" in html[0]  # usage of the model call
    assert "&quot;a&quot;: 2,\n  &quot;b&quot;: 3" in html[1]  # pretty-printed arguments
    assert "repeat" in html[1] and "not executed again" in html[1]  # dedup skip
    fp = next(e.fingerprint for e in result.events if e.kind == "dedup")
    assert fp[:12] in html[0] and "new call" in html[0]  # fingerprint and decision
    assert "unknown tool" in html[1] and "available: add, essay" in html[1]
    assert "invalid arguments" in html[1] and "is not of type" in html[1]
    assert "show all" in html[2] and "<details>" in html[2]  # long result truncated, expandable
    assert "failed" in html[2] and "ValueError: kaboom" in html[2]
    assert 'src="data:image/png;base64,' in html[2]  # attached image inline
    assert "executed again (allow_repeat)" in html[3]
    assert re.search(r"result</span> <span class=\"anb-m\">in (&lt;)?[\d.]+ (ms|s)", html[2])  # durations
    assert "the final answer, below" in html[4] and "done" not in html[4]  # the answer is shown once
    assert "Why it answered in text" in html[4] and "no tool fits the request" in html[4]  # a provider's decision
    assert re.fullmatch(r"Depth 1 · add ↺, nope ✗, add ✗ · [\d.<]+ m?s · 12 tokens", w.sections[1].title)
    assert w.sections[2].title.startswith("Depth 2 · essay ✓, boom ✗, snapshot ✓ · ")
    assert "All <strong>done</strong>: 5." in w.answer_html.value  # sanitized Markdown, raw text one click away
    assert "<summary>raw text</summary><pre>All **done**: 5.</pre>" in w.answer_html.value
    assert "tool calls <b>9/10</b>" in w.header_html
    assert "finished" in w.header_html
    assert "tool-call limit reached" in limited.section_html(0)
    assert "limit" in limited.header_html
    assert "direct output" in direct.section_html(0)
    assert direct.answer == "straight from the tool"


def test_streamed_tool_call_shows_while_it_assembles() -> None:
    w = TraceWidget()
    w.handle(EVENT_TYPES["run_started"](0, "m", ("add",), 10, 1))
    w.handle(EVENT_TYPES["model_request"](0, 1, ("add",), "auto"))
    w.handle(EVENT_TYPES["tool_call_delta"](0, 0, "add", '{"a": 1'))
    w.flush()
    assert "streaming call #0" in w.section_html(0) and "{&quot;a&quot;: 1" in w.section_html(0)
    assert w.status == "running"
    assert w.sections[0].title == "Depth 0 · asking the model…"


def test_text_form_is_stable_and_has_no_timings() -> None:
    texts = []
    for _ in range(2):
        w, _ = run_with_widget(busy_script())
        bundle, meta = w._repr_mimebundle_()
        assert "Depth 4" in meta["agentnb"]["html"]
        assert "application/vnd.jupyter.widget-view+json" in bundle
        texts.append(bundle["text/plain"])
    assert texts[0] == texts[1]
    assert "0x" not in texts[0]
    assert not re.search(r"\d\s?(ms|s)\b", texts[0])
    assert texts[0].splitlines()[0] == "agentnb trace: answer · 5 model calls · 9/10 tool calls"
    assert "  [1] dedup" in texts[0] and "repeat, not run" in texts[0]
    assert repr(w) == texts[0].splitlines()[0]


def test_replay_from_saved_transcript(tmp_path: Any) -> None:
    live, result = run_with_widget(busy_script())
    path = tmp_path / "run.json"
    result.save(path)
    replayed = TraceWidget.replay(str(path))
    assert replayed.text() == live.text()
    assert sorted(replayed.sections) == sorted(live.sections)
    assert replayed.answer == "All **done**: 5."
    assert replayed.renders <= 2  # fed all at once: one render at the start, one at the end
    assert TraceWidget.replay(result).section_html(2) == replayed.section_html(2)


class SteppingClock:
    def __init__(self, step: float) -> None:
        self.t = 0.0
        self.step = step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def many_steps(n: int) -> list[Any]:
    return [call("add", a=i, b=1) for i in range(n)] + ["done"]


def test_throttle_bounds_renders_with_a_frozen_clock() -> None:
    w, result = run_with_widget(many_steps(50), max_tool_calls=50, clock=lambda: 0.0)
    assert len(result.events) > 300
    # The first render waits for the loop's next turn (never inside a step); this scripted run
    # never yields, so that turn comes after the run and one render shows it all.
    assert w.renders == 1
    assert w.text() == TraceWidget.replay(result).text()


def test_the_first_render_comes_while_the_model_works() -> None:
    async def main() -> tuple[int, str]:
        w = TraceWidget(clock=lambda: 0.0)
        agent = Agent(ScriptedProvider(["done"], delay=0.3))
        task = asyncio.ensure_future(agent.arun("go", on_event=w))
        await asyncio.sleep(0.15)  # the model is "working": the loop is free
        seen = (w.renders, w._header.value)
        await task
        return seen

    renders, header = asyncio.run(main())
    assert renders == 1 and "running" in header


def test_throttle_bounds_renders_with_a_moving_clock() -> None:
    clock = SteppingClock(0.01)  # every event "takes" 10 ms; at most one render per 100 ms
    w, result = run_with_widget(many_steps(50), max_tool_calls=50, clock=clock, interval=0.1)
    calls = clock.t / 0.01
    assert w.renders <= calls * 0.01 / 0.1 + 2
    assert w.renders < len(result.events) / 4
    assert sorted(w.sections) == list(range(51))


def test_old_depths_fold_away_during_long_runs() -> None:
    w, _ = run_with_widget(many_steps(8), max_tool_calls=8, open_depths=3, clock=SteppingClock(0.05))
    assert w.sections[8].open
    assert w.sections[6].open
    assert w.sections[0].open is False


def test_stop_button_cancels_the_run() -> None:
    async def main() -> tuple[Any, TraceWidget, list[Event]]:
        w = TraceWidget()
        events: list[Event] = []
        agent = Agent(ScriptedProvider(many_steps(20), delay=0.05), tools=[add], max_tool_calls=20)

        def on_event(e: Event) -> None:
            events.append(e)
            w(e)

        handle = start_run(lambda: drive(agent, "go", on_event=on_event))
        w.on_stop(handle.cancel)
        assert not w.stop_button.disabled
        while sum(e.kind == "tool_finished" for e in events) < 2:
            await asyncio.sleep(0.01)
        w.stop_button.click()
        return await handle, w, events

    result, w, events = asyncio.run(main())
    assert result.stop_reason == "cancelled"
    assert w.status == "cancelled"
    assert "stopped" in w.header_html
    assert w.stop_button.layout.display == "none"
    assert 2 <= result.tool_calls < 20
    assert events[-1].kind == "run_finished"


def test_elapsed_time_ticks_while_the_model_works() -> None:
    async def main() -> list[str]:
        w = TraceWidget()
        agent = Agent(ScriptedProvider(["slow answer"], delay=3.0))
        headers = []
        task = asyncio.ensure_future(agent.arun("go", on_event=w))
        for _ in range(2):
            await asyncio.sleep(0.7)
            headers.append(w.header_html)
        await task
        return headers

    headers = asyncio.run(main())
    # No event arrives while the model works, yet the header changed (the elapsed time).
    assert len(set(headers)) >= 2
    assert all("running" in h for h in headers)


# --- every state true --------------------------------------------------------------------------


@tool
async def slow(seconds: float) -> str:
    """Wait a while."""
    await asyncio.sleep(seconds)
    return "slept"


def _stop_when(agent: Agent, ready: Any, **options: Any) -> tuple[Any, TraceWidget]:
    """Run with a widget; click Stop as soon as ``ready(events)``."""

    async def main() -> tuple[Any, TraceWidget]:
        w = TraceWidget(**options)
        events: list[Event] = []

        def on_event(e: Event) -> None:
            events.append(e)
            w(e)

        handle = start_run(lambda: drive(agent, "go", on_event=on_event))
        w.on_stop(handle.cancel)
        while not ready(events):
            await asyncio.sleep(0.01)
        w.stop_button.click()
        result = await handle
        await asyncio.sleep(0)  # the final render runs on the next loop turn
        return result, w

    return asyncio.run(main())


def test_stop_during_a_tool_marks_it_cancelled_and_counts_agree_with_the_transcript() -> None:
    agent = Agent(ScriptedProvider([call("add", a=1, b=2), call("slow", seconds=30), "never"]), tools=[add, slow])
    result, w = _stop_when(agent, lambda ev: any(e.kind == "tool_started" and e.name == "slow" for e in ev))
    assert result.stop_reason == "cancelled"
    kept = [m for m in result.messages if m.role == "tool"]
    assert result.tool_calls == len(kept) == 1  # the dropped call is not counted
    assert "tool calls <b>1/10</b>" in w.header_html
    assert "1 unfinished tool call dropped" in w.header_html
    html = w.section_html(1)
    assert "cancelled: stopped while it ran" in html and "running…" not in html
    assert "not in the transcript and not counted" in html
    assert w.sections[1].title == "Depth 1 · slow ■"  # no time or tokens for an unfinished depth
    assert "running…" not in w.body_html and "waiting for the model" not in w.body_html


def test_stop_while_the_model_works_says_stopped() -> None:
    agent = Agent(ScriptedProvider([call("add", a=1, b=2), "late"], delay=0.3), tools=[add])
    result, w = _stop_when(agent, lambda ev: sum(e.kind == "model_request" for e in ev) == 2)
    assert result.stop_reason == "cancelled" and result.tool_calls == 1
    assert w.sections[1].title == "Depth 1 · stopped"
    assert "stopped before the model replied" in w.section_html(1)
    assert "asking the model" not in w.body_html and "waiting for the model" not in w.body_html
    assert "dropped" not in w.header_html


def test_streaming_shows_time_to_first_token_and_speed_not_waiting() -> None:
    t = [0.0]
    w = TraceWidget(clock=lambda: t[0], interval=0)
    w.handle(EVENT_TYPES["run_started"](0, "m", (), 10, 1))
    w.handle(EVENT_TYPES["model_request"](0, 1, (), "none"))
    assert "waiting for the model…" in w.section_html(0)
    for i, word in enumerate(["The ", "answer ", "is ", "four."]):
        t[0] = 0.2 + i * 0.05
        w.handle(EVENT_TYPES["text_delta"](0, word))
    html = w.section_html(0)
    assert "waiting for the model" not in html
    assert "streaming… · first token after 200 ms · ~27 tokens/s" in html  # 4 chunks in 150 ms
    w.handle(EVENT_TYPES["model_response"](0, "The answer is four.", (), Usage(20, 40), 0.6))
    html = w.section_html(0)
    assert "in 600 ms · first token after 200 ms · 100 tokens/s · 20 in / 40 out tokens" in html
    assert w.sections[0].title == "Depth 0 · 600 ms · 60 tokens"


@pytest.mark.parametrize("kind", ["route_switched", "call_repair"])
def test_a_reply_whose_usage_counts_other_replies_shows_the_streams_own_speed(kind: str) -> None:
    # usage that counts a reply streamed before this one (dropped, or asked again): its tokens
    # did not take the 150 ms this stream took, so the speed is the fragments' (4 in 150 ms)
    t = [0.0]
    w = TraceWidget(clock=lambda: t[0], interval=0)
    w.handle(EVENT_TYPES["run_started"](0, "m", (), 10, 1))
    w.handle(EVENT_TYPES["model_request"](0, 1, (), "none"))
    note = {
        "route_switched": lambda: EVENT_TYPES["route_switched"](0, "m", "untooled", "the server ignored `tools`"),
        "call_repair": lambda: EVENT_TYPES["call_repair"](0, "m", "add", {"a": "x"}, ("a: expected integer",), True),
    }[kind]()
    for i, word in enumerate(["The ", "answer ", "is ", "four."]):
        t[0] = 21.3 + i * 0.05
        w.handle(EVENT_TYPES["text_delta"](0, word))
    w.handle(note)
    w.handle(EVENT_TYPES["model_response"](0, "The answer is four.", (), Usage(200, 432), 21.5))
    html = w.section_html(0)
    assert "first token after 21.3 s · ~27 tokens/s · 200 in / 432 out tokens" in html
    assert "2160 tokens/s" not in html


def test_header_counts_model_calls_not_a_depth_number() -> None:
    w, _ = run_with_widget([call("add", a=1, b=2), "3"])
    shown = re.sub(r"<[^>]+>", "", w.header_html.split("</style>")[1])
    assert "depth" not in shown.lower() and "model calls 2" in shown
    assert "model calls <b>2</b>" in w.header_html
    assert [s.title.split(" · ")[0] for s in w.sections.values()] == ["Depth 0", "Depth 1"]


def test_paused_time_is_left_out_of_the_elapsed_time() -> None:
    from agentnb.notebook.trace.state import Pause

    t = [0.0]
    w = TraceWidget(clock=lambda: t[0], interval=0)
    w.handle(EVENT_TYPES["run_started"](0, "m", (), 10, 1))
    w.handle(EVENT_TYPES["model_request"](0, 1, (), "none"))
    w.set_pause("paused before the model call at depth 0", Pause("model", 0))
    t[0] = 60.0
    w.state.header_dirty = True  # what the ticker does every 0.5 s
    w.flush()
    assert w.status == "paused" and "model calls <b>0</b>" in w.header_html
    assert "<b>&lt;0.1 ms</b> (+1 min 0 s paused)" in w.header_html
    assert repr(w) == "agentnb trace: paused · 0 model calls · 0/10 tool calls"
    w.set_pause(None)
    t[0] = 62.0
    w.handle(EVENT_TYPES["model_response"](0, "hi", (), Usage(), 2.0))
    w.flush()
    assert "<b>2.00 s</b> (+1 min 0 s paused)" in w.header_html
    assert "model calls <b>1</b>" in w.header_html


# --- nothing lost -------------------------------------------------------------------------------


def test_prompt_system_provider_and_model_are_shown_folded_at_the_top() -> None:
    w = TraceWidget()
    Agent(ScriptedProvider(["hi"], name="gpt-test"), system="Be brief.").run("Hello <there>", on_event=w)
    ctx = w._context.value
    assert '<details class="anb-ctx">' in ctx and '<details class="anb-ctx" open' not in ctx  # folded
    assert "Prompt: Hello &lt;there&gt;" in ctx
    assert "Be brief." in ctx and "ScriptedProvider" in ctx and "gpt-test" in ctx
    assert "Earlier turns" not in ctx and "turn <b>" not in w.header_html
    assert "prompt: Hello <there>" in w.text()


def test_a_continued_conversation_shows_its_turn_and_the_earlier_turns() -> None:
    agent = Agent(ScriptedProvider(["first answer", call("add", a=1, b=2), "second answer", "third"]), tools=[add])
    first = agent.run("first question")
    second = agent.run("second question", history=first)
    w = TraceWidget(history=second)
    agent.run("third question", history=second, on_event=w)
    assert "turn <b>3</b>" in w.header_html
    ctx = w._context.value
    assert "Turn 3 · Prompt: third question" in ctx
    assert "Earlier turns (2)" in ctx
    earlier = ctx[ctx.index("Earlier turns") :]
    assert earlier.index("first question") < earlier.index("first answer") < earlier.index("second question")
    assert "1 tool result, then the answer:" in earlier and "second answer" in earlier
    assert "third question" not in earlier
    assert ", turn 3" in w.text()


# --- what people reach for ----------------------------------------------------------------------


def test_copy_buttons_save_link_and_expand_collapse() -> None:
    w, result = run_with_widget([call("essay", topic="cats"), "**done**"])
    html = w.section_html(0)
    assert html.count('class="anb-copy"') == 2  # the arguments and the result
    # A long result is previewed but copied whole.
    full = re.search(r'<pre class="anb-c">([^<]*)</pre>', html[html.index("show all") :]).group(1)
    assert len(full) == len(result.messages[2].content)
    assert 'class="anb-copy"' in w._answer_label.value and ">**done**</pre>" in w._answer_label.value
    import base64
    import json

    def saved() -> dict:
        return json.loads(base64.b64decode(w._save.value.split("base64,")[1].split('"')[0]))

    # Fed through on_event, the widget is handed the result after the last event (issue 38:
    # a fork needs its messages and agent): the link saves the whole run.
    assert w.result is result and 'download="agentnb-transcript.json"' in w._save.value
    assert saved()["output"] == "**done**" and len(saved()["messages"]) == 4
    # Fed only events (a bound method hands nothing over): the link saves the run's events,
    # which replay into the same trace (issue 26: the quickstart's first widget had no Save).
    events_fed = TraceWidget()
    Agent(ScriptedProvider([call("essay", topic="cats"), "**done**"]), tools=TOOLS).run(
        "go", on_event=events_fed.handle
    )
    assert events_fed.result is None
    events_only = json.loads(base64.b64decode(events_fed._save.value.split("base64,")[1].split('"')[0]))
    assert events_only["messages"] == [] and len(events_only["events"]) == len(events_fed.state.events)
    assert TraceWidget.replay(RunResult.from_dict(events_only)).text() == events_fed.text()
    w.expand_all(False)
    assert not any(s.open for s in w.sections.values()) and " open>" not in w.body_html
    w.collapse_button.click()
    w.expand_button.click()
    assert all(s.open for s in w.sections.values())


def test_long_runs_fold_earlier_depths_automatically() -> None:
    w, _ = run_with_widget(many_steps(9), max_tool_calls=9)
    opened = [d for d, s in w.sections.items() if s.open]
    assert opened == [6, 7, 8, 9]
    assert w.body_html.count('<details class="anb-depth"') == 10
