"""FallbackProvider against real scripted servers: the step moves on, the circuit opens, requests are counted."""

from __future__ import annotations

import io

import pytest

from agentnb import Agent, TextPrinter, tool
from agentnb.errors import AuthenticationError, ServerError
from agentnb.events import ProviderAnswered
from agentnb.providers import OpenAIProvider
from agentnb.providers.fallback import FallbackProvider
from agentnb.testing import ScriptedProvider, Streamed, call
from agentnb.testing.server import Reply, ScriptedServer


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(scope="module")
def servers():
    with ScriptedServer() as down, ScriptedServer(default_text="from the backup") as up:
        yield down, up


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def answered(result) -> list[ProviderAnswered]:
    return [e for e in result.events if isinstance(e, ProviderAnswered)]


def test_a_refusing_primary_costs_at_most_one_request_per_step_once_open(servers) -> None:
    down, up = servers  # `down` answers every request with a 500 (no retry asked)
    down.reset()
    up.reset()
    clock = Clock()
    primary = OpenAIProvider("a", base_url=down.url)
    backup = OpenAIProvider("b", base_url=up.url)
    agent = Agent(FallbackProvider([primary, backup], failures=2, cooldown=30, clock=clock))
    per_step = []
    for _ in range(6):
        before = len(down.requests)
        result = agent.run("hi")
        assert result.output == "from the backup"
        per_step.append(len(down.requests) - before)
    assert per_step == [1, 1, 0, 0, 0, 0]  # the circuit opened after 2 failures
    assert "circuit is open" in answered(result)[0].passed[0][1]
    clock.now += 31  # cooled down: one trial request, which fails and opens it again
    for _ in range(3):
        before = len(down.requests)
        agent.run("hi")
        per_step.append(len(down.requests) - before)
    assert per_step[6:] == [1, 0, 0]


def test_a_429_storm_past_the_retries_falls_back_and_is_shown(servers) -> None:
    down, up = servers
    down.reset()
    up.reset()
    storm = Reply(status=429, error="slow down", error_type="rate_limit_exceeded", headers={"retry-after-ms": "10"})
    down.script(*[storm] * 3)
    primary = OpenAIProvider("a", base_url=down.url, max_retries=2)
    backup = OpenAIProvider("gpt-4o-mini", base_url=up.url)
    backup.price_as = "openai"
    out = io.StringIO()
    result = Agent([primary, backup], tools=[add]).run("hi", on_event=TextPrinter(out))
    assert result.output == "from the backup"
    assert len(down.requests) == 3 and len(up.requests) == 1  # 1 + 2 retries, then the backup
    [event] = answered(result)
    assert (event.provider, event.index) == ("gpt-4o-mini", 1)
    assert event.passed[0][0] == "a" and "rate limited" in event.passed[0][1]
    assert "answered by gpt-4o-mini (after a: rate limited" in out.getvalue()
    retried = [e for e in result.events if e.kind == "request_retried"]
    assert [(e.provider, e.attempt) for e in retried] == [("a", 1), ("a", 2)]
    assert result.cost is not None and result.cost > 0  # priced as the provider that answered


def test_only_some_failures_fall_back() -> None:
    bad_key = ScriptedProvider([AuthenticationError("bad key", status=401)], name="a")
    never = ScriptedProvider(["never"], name="b")
    result = Agent(FallbackProvider([bad_key, never])).run("hi")
    assert result.stop_reason == "error" and "bad key" in (result.error or "") and never.requests == []
    both = FallbackProvider(
        [
            ScriptedProvider([ServerError("down", status=503)], name="a"),
            ScriptedProvider([ServerError("also down", status=502)]),
        ]
    )
    result = Agent(both).run("hi")
    assert result.stop_reason == "error" and "a: down; scripted: also down" in (result.error or "")


def test_streaming_falls_back_before_the_first_chunk_and_tools_work() -> None:
    primary = ScriptedProvider([ServerError("down", status=500)] * 2, name="a")
    backup = ScriptedProvider([call("add", a=2, b=3), Streamed(["it is ", "5"])], name="b")
    result = Agent(FallbackProvider([primary, backup]), tools=[add], stream=True).run("2+3?")
    assert result.output == "it is 5" and result.tool_calls == 1
    assert [e.provider for e in answered(result)] == ["b", "b"]


def test_widget_shows_who_answered() -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    w = TraceWidget()
    primary = ScriptedProvider([ServerError("down", status=503)], name="primary")
    Agent(FallbackProvider([primary, ScriptedProvider(["ok"], name="backup")])).run("hi", on_event=w)
    assert "answered by backup" in w.body_html and "primary: down" in w.body_html
