"""The one retry layer, against a real scripted server: each request counted, no layer retries twice."""

from __future__ import annotations

import time

import pytest

from agentnb import Agent, TextPrinter, tool
from agentnb.events import RequestRetried
from agentnb.providers import OpenAIProvider
from agentnb.providers.retry import RetryPolicy, retry_after, retry_reason
from agentnb.testing.server import Reply, ScriptedServer, text


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def fresh(server: ScriptedServer) -> ScriptedServer:
    server.reset()
    return server


def limited(headers: dict[str, str], status: int = 429) -> Reply:
    return Reply(status=status, error="slow down", error_type="rate_limit_exceeded", headers=headers)


def retries(result) -> list[RequestRetried]:
    return [e for e in result.events if isinstance(e, RequestRetried)]


@pytest.mark.parametrize("stream", [False, True])
def test_429_retry_after_is_honoured_once(fresh: ScriptedServer, stream: bool) -> None:
    fresh.script(limited({"Retry-After": "1"}), text("hello"))
    provider = OpenAIProvider("m", base_url=fresh.url, max_retries=2)
    result = Agent(provider, stream=stream).run("hi")
    assert result.output == "hello"
    assert len(fresh.requests) == 2  # one retry, by one layer
    waited = fresh.requests[1].at - fresh.requests[0].at
    assert 0.8 <= waited <= 1.2  # the header's 1 s, within 20%
    [event] = retries(result)
    assert (event.status, event.delay, event.attempt, event.retries) == (429, 1.0, 1, 2)
    assert event.describe() == "rate limited, retrying in 1.0 s (retry 1 of 2)"


@pytest.mark.parametrize("stream", [False, True])
def test_a_retry_shows_while_it_waits(fresh: ScriptedServer, stream: bool) -> None:
    """The retry event comes out of the run's event stream as the wait begins, before the
    retried request is sent; the trace widget says so then, not after the request succeeded."""
    from agentnb.notebook.trace.widget import TraceWidget

    fresh.script(limited({"Retry-After": "2"}), text("hello"))
    widget = TraceWidget()
    seen: list[tuple[float, int, str, str]] = []

    def on_event(event: object) -> None:
        widget(event)
        if isinstance(event, RequestRetried):
            widget.flush()
            seen.append((time.monotonic(), len(fresh.requests), widget.body_html, widget.text()))

    provider = OpenAIProvider("m", base_url=fresh.url, max_retries=2)
    result = Agent(provider, stream=stream).run("hi", on_event=on_event)
    assert result.output == "hello" and len(fresh.requests) == 2
    [(at, sent, html, text_)] = seen
    assert sent == 1  # the retried request was not sent yet
    assert 1.6 <= fresh.requests[1].at - at <= 2.4  # the event came as the 2 s wait began
    assert "rate limited, retrying in 2.0 s" in html and "rate limited, retrying in 2.0 s" in text_
    kinds = [e.kind for e in result.events]
    assert kinds.count("request_retried") == 1  # shown once, not again with the completion
    assert kinds.index("model_request") < kinds.index("request_retried") < kinds.index("model_response")


def test_retry_after_ms_and_5xx_then_success(fresh: ScriptedServer) -> None:
    fresh.script(limited({"retry-after-ms": "50"}), limited({"retry-after-ms": "50"}, 503), text("ok"))
    result = Agent(OpenAIProvider("m", base_url=fresh.url, max_retries=2)).run("hi")
    assert result.output == "ok" and len(fresh.requests) == 3
    assert [(e.reason, e.delay) for e in retries(result)] == [("rate limited", 0.05), ("server error 503", 0.05)]


def test_retries_are_bounded_and_sdk_retries_are_off(fresh: ScriptedServer) -> None:
    fresh.script(*[limited({"retry-after-ms": "10"}, 500) for _ in range(5)])
    result = Agent(OpenAIProvider("m", base_url=fresh.url, max_retries=1)).run("hi")
    assert result.stop_reason == "error" and "failed after 1 retries (500)" in (result.error or "")
    assert len(fresh.requests) == 2
    assert [e.status for e in retries(result)] == [500]  # the failed run keeps its retry events
    fresh.reset()
    fresh.script(limited({"retry-after-ms": "10"}), text("never"))
    result = Agent(OpenAIProvider("m", base_url=fresh.url, max_retries=0)).run("hi")
    assert result.stop_reason == "error" and len(fresh.requests) == 1


def test_a_dropped_connection_is_retried(fresh: ScriptedServer) -> None:
    fresh.script(Reply(text="lost", disconnect_after=0), text("ok"))
    out = []
    result = Agent(OpenAIProvider("m", base_url=fresh.url)).run("hi", on_event=TextPrinter(_Lines(out)))
    assert result.output == "ok" and len(fresh.requests) == 2
    assert [e.reason for e in retries(result)] == ["connection failed"]
    assert any("connection failed, retrying in" in line for line in out)


def test_a_timeout_is_an_error_at_once_not_a_verdict_about_tools(fresh: ScriptedServer) -> None:
    # A server that accepts the request and never answers (within the timeout).
    fresh.script(*[Reply(text="late", delay=3) for _ in range(8)])
    for retries_ in (0, 2):
        fresh.requests.clear()
        provider = OpenAIProvider("m", base_url=fresh.url, timeout=1, max_retries=retries_)  # tool_calling="auto"
        start = time.monotonic()
        result = Agent(provider, tools=[add]).run("2+3?")
        assert result.stop_reason == "error" and "did not answer within 1 s" in (result.error or "")
        assert len(fresh.requests) == 1 and time.monotonic() - start < 2.5
        assert provider.route == "native"  # not switched to untooled


def test_retry_after_forms_and_what_is_retried() -> None:
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past
    assert retry_after({"retry-after-ms": "x", "retry-after": "3"}) == 3.0

    class StatusError(Exception):
        def __init__(self, status: int, headers: dict[str, str]) -> None:
            self.status_code = status
            self.response = type("R", (), {"headers": headers})()

    assert retry_reason(StatusError(400, {})) is None
    assert retry_reason(StatusError(500, {"x-should-retry": "false"})) is None
    assert retry_reason(StatusError(429, {"retry-after": "2"})) == ("rate limited", 429, 2.0)
    policy = RetryPolicy(initial=1, factor=2, max_delay=5, jitter=0.2)
    assert all(0.8 <= policy.backoff(0) <= 1.2 for _ in range(50))
    assert policy.backoff(10) <= 5 * 1.2


class _Lines:
    def __init__(self, out: list[str]) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.extend(text.splitlines())

    def flush(self) -> None:
        pass
