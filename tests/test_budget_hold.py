"""Token budgets hold before a request is sent; whatever a run went past is said, never silent."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb import Agent, RunResult, TextPrinter, Usage, UsageLimits, load_transcript, tool
from agentnb.notebook.trace.header import header_html
from agentnb.notebook.trace.state import TraceState
from agentnb.providers.base import Completion, Request, chars_estimate
from agentnb.run.budget import MIN_REPLY
from agentnb.testing import ScriptedProvider, call


@tool
def search(query: str) -> str:
    """Search the notes.

    Args:
        query: what to look for
    """
    return f"3 notes mention {query}"


class Metered(ScriptedProvider):
    """A scripted model that counts its input as it says it will and honours ``max_tokens``.

    Its replies are scripted; its usage is what a real backend would report for them: the input
    tokens its own estimate gave, and ``wants`` output tokens or the ``max_tokens`` bound.
    """

    reply_limit_setting = "max_tokens"

    def __init__(self, replies: list[Any], wants: int) -> None:
        super().__init__(replies)
        self.wants = wants

    def estimate_input_tokens(self, request: Request) -> int | None:
        return chars_estimate(request.messages, request.tools)

    def _metered(self, request: Request, completion: Completion) -> Completion:
        out = min(self.wants, request.settings.get("max_tokens", self.wants))
        used = Usage(chars_estimate(request.messages, request.tools), out)
        return Completion(completion.text, completion.tool_calls, used, completion.finish_reason)

    async def complete(self, request: Request) -> Completion:
        return self._metered(request, await super().complete(request))

    async def stream(self, request: Request) -> AsyncIterator[Any]:
        async for item in super().stream(request):
            yield self._metered(request, item) if isinstance(item, Completion) else item


@settings(max_examples=60, deadline=None)
@given(
    budget=st.integers(0, 900),
    which=st.sampled_from(["total_tokens", "input_tokens", "output_tokens"]),
    wants=st.integers(1, 60),
    calls=st.integers(0, 6),
    prompt=st.text(min_size=1, max_size=300),
)
def test_a_token_budget_holds_when_the_backend_counts_as_it_says(
    budget: int, which: str, wants: int, calls: int, prompt: str
) -> None:
    model = Metered([call("search", query=f"q{k}") for k in range(calls)] + ["done"] * 2, wants)
    limits = UsageLimits(**{which: budget})
    r = Agent(model, tools=[search], limits=limits).run(prompt)
    assert getattr(r.usage, which) <= budget, (r.usage, [len(q.messages) for q in model.requests])
    assert r.overrun == ()
    assert r.stop_reason in ("answer", "limit")
    if r.stop_reason == "limit":
        assert r.limit in (which, "tool_calls")
    assert r.output  # a text, the model's or agentnb's, never empty


def test_a_request_that_cannot_fit_is_never_sent() -> None:
    model = ScriptedProvider(["never read"])
    out = io.StringIO()
    r = Agent(model, tools=[search], limits=UsageLimits(total_tokens=50)).run("hi " * 60, on_event=TextPrinter(out))
    assert model.requests == []
    assert (r.stop_reason, r.limit, r.usage.total_tokens) == ("limit", "total_tokens", 0)
    assert r.output.startswith("[agentnb] The run reached its total_tokens limit (0 of 50 used; the next request")
    assert "so that request was not sent" in r.output
    assert r.events[-2].kind == "final_answer" and r.events[-2].by == "agentnb"


def test_the_reply_is_bounded_to_what_is_left() -> None:
    model = Metered(["done"], wants=500)
    r = Agent(model, limits=UsageLimits(total_tokens=300)).run("What is in my notes?")
    [request] = model.requests
    estimate = chars_estimate(request.messages)
    assert request.settings["max_tokens"] == 300 - estimate
    assert r.usage.total_tokens == 300 and r.overrun == ()
    # a smaller bound of the user's own is kept
    model = Metered(["done"], wants=500)
    Agent(model, settings={"max_tokens": 7}, limits=UsageLimits(total_tokens=300)).run("hi")
    assert model.requests[0].settings["max_tokens"] == 7


def test_an_overrun_is_said_in_the_result_the_printer_the_header_and_the_transcript(tmp_path) -> None:
    # A backend whose count agentnb cannot know beforehand (an estimate of 6 tokens, 426 used).
    model = ScriptedProvider(["hello"], usage=Usage(400, 26))
    out = io.StringIO()
    r = Agent(model, limits=UsageLimits(total_tokens=200, seconds=1000.0)).run("hi", on_event=TextPrinter(out))
    assert r.stop_reason == "answer" and r.overrun == (("total_tokens", 200, 426),)
    assert "run finished: answer, 0 tool calls, 426 tokens" in out.getvalue()
    assert "went past its budget: total_tokens 426 of 200 (+226)" in out.getvalue()
    state = TraceState()
    for event in r.events:
        state.add(event)
    assert "went past its budget: total_tokens 426 of 200 (+226)" in header_html(state, 1.0)
    path = tmp_path / "run.json"
    r.save(path)
    again = load_transcript(path)
    assert again.overrun == r.overrun and again == r
    assert json.loads(path.read_text())["events"][-1]["overrun"] == [["total_tokens", 200, 426]]
    assert RunResult.from_dict(r.to_dict()).overrun == r.overrun


def test_a_run_within_its_budget_reports_no_overrun() -> None:
    r = Agent(ScriptedProvider(["hello"], usage=Usage(20, 5)), limits=UsageLimits(total_tokens=200)).run("hi")
    assert r.overrun == () and r.stop_reason == "answer"
    out = io.StringIO()
    TextPrinter(out)(r.events[-1])
    assert "went past" not in out.getvalue()


@tool
def weather(city: str) -> str:
    """The current weather in a city: sky, temperature and wind, from the national weather service's
    latest observation at the city's main station, refreshed every ten minutes, in metric units, with
    the time of the observation and the station's name, for any city of more than 50,000 people."""
    return f"sunny in {city}, 24 C"


def weather_model() -> Metered:
    """The local weather run's shape: a tool step of 170-odd tokens (most of it the tool's
    schema), then an answer of about 60 (the conversation without the schema, the call, its result)."""
    return Metered([call("weather", city="Paris"), "It is sunny in Paris, 24 C."], wants=21)


def test_a_budget_that_fits_a_tool_step_and_an_answer_gets_both() -> None:
    model = weather_model()
    out = io.StringIO()
    r = Agent(model, tools=[weather], limits=UsageLimits(total_tokens=300)).run(
        "What is the weather in Paris?", on_event=TextPrinter(out)
    )
    first = model.requests[0]
    step = chars_estimate(first.messages, first.tools)  # what the tool step reads: 150-odd tokens
    assert 2 * (step + MIN_REPLY) > 300  # a second request of its size would not fit: held back before
    assert [len(q.tools) for q in model.requests] == [1, 0]
    assert r.tool_calls == 1 and r.output == "It is sunny in Paris, 24 C."
    assert r.usage.total_tokens <= 300 and r.overrun == ()
    # the tool step's reply is bounded so that it leaves the answer's part, not all that is left
    assert first.settings["max_tokens"] < 300 - step - MIN_REPLY
    # the answer came from a request without tools: said
    assert r.without_tools == "total_tokens"
    assert "answered without tools: its total_tokens budget left no room for a tool step" in out.getvalue()


def test_a_budget_that_fits_the_answer_only_sends_no_tools() -> None:
    model = weather_model()
    r = Agent(model, tools=[weather], limits=UsageLimits(total_tokens=200)).run("What is the weather in Paris?")
    assert model.requests[0].tools == () and r.tool_calls == 0
    assert r.usage.total_tokens <= 200 and r.without_tools == "total_tokens"


def test_a_model_using_40_tokens_a_request_gets_a_tool_step_and_an_answer_in_150() -> None:
    # The first estimate (from characters, the tool's schema included) is far above what the model
    # uses; the answer's part is estimated from the request without tools, not from a copy of it.
    model = ScriptedProvider([call("search", query="budget"), "Three notes mention it."], usage=Usage(20, 20))
    r = Agent(model, tools=[search], limits=UsageLimits(total_tokens=150)).run("What do my notes say?")
    assert model.requests[0].tools != () and r.tool_calls == 1
    assert r.output == "Three notes mention it." and r.usage.total_tokens == 80


def test_an_answer_written_without_tools_is_said_in_the_header_and_the_transcript(tmp_path) -> None:
    r = Agent(weather_model(), tools=[weather], limits=UsageLimits(total_tokens=200)).run("Weather in Paris?")
    state = TraceState()
    for event in r.events:
        state.add(event)
    said = "answered without tools: its total_tokens budget left no room for a tool step"
    assert said in header_html(state, 1.0)
    path = tmp_path / "run.json"
    r.save(path)
    assert load_transcript(path).without_tools == "total_tokens"
    assert json.loads(path.read_text())["events"][-1]["without_tools"] == "total_tokens"


def test_an_answer_with_its_tools_on_offer_is_not_marked() -> None:
    out = io.StringIO()
    r = Agent(weather_model(), tools=[weather], limits=UsageLimits(total_tokens=10_000)).run(
        "Weather in Paris?", on_event=TextPrinter(out)
    )
    assert r.stop_reason == "answer" and r.without_tools is None and "without tools" not in out.getvalue()
    # the tool-call limit is the usual end of a tool run, not a budget taking the tools away
    r = Agent(weather_model(), tools=[weather], max_tool_calls=1).run("Weather in Paris?")
    assert (r.stop_reason, r.limit, r.without_tools) == ("limit", "tool_calls", None)
