"""The OpenAI provider's requests on aiohttp connections (agentnb.providers.aiohttp_transport).

Real sockets throughout: a scripted server, a closed port, a server that never answers.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import ssl
import time
import warnings

import pytest

from agentnb import Agent
from agentnb.errors import ProviderError
from agentnb.events import RequestRetried
from agentnb.messages import UserMessage
from agentnb.providers import OpenAIProvider
from agentnb.providers.base import Request
from agentnb.testing.server import Reply, ScriptedServer, text, tool_calls

pytest.importorskip("aiohttp")


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def fresh(server: ScriptedServer) -> ScriptedServer:
    server.reset()
    return server


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once the socket is closed


def test_the_provider_sends_through_aiohttp_and_reads_the_body_itself(fresh: ScriptedServer) -> None:
    fresh.script(tool_calls(("add", {"a": 1, "b": 2})), text("3"))
    provider = OpenAIProvider(
        "m", base_url=fresh.url, api_key="sk-probe-0000", settings={"extra_headers": {"X-Probe": "yes"}, "top_k": 4}
    )

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    result = Agent(provider, tools=[add]).run("1+2?")
    assert result.output == "3" and result.tool_calls == 1
    assert result.usage.output_tokens == 14  # 7 per reply, read from the JSON body
    assert type(provider.client._client._transport).__name__ == "AiohttpTransport"

    async def tls() -> object:  # HTTPS is verified against the HTTP library's own CA bundle
        return provider.client._client._transport._live_session().connector._ssl

    context = asyncio.run(tls())
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    first = fresh.requests[0]
    assert first.headers.get("x-probe") == "yes" and first.headers.get("authorization") == "Bearer sk-probe-0000"
    assert first.body["top_k"] == 4 and first.body["tools"][0]["function"]["name"] == "add"
    assert "extra_headers" not in first.body and first.body["messages"][0]["content"] == "1+2?"


@pytest.mark.parametrize("stream", [False, True])
def test_a_closed_port_is_a_connection_error_at_once_not_a_timeout(stream: bool) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    start = time.monotonic()
    result = Agent(OpenAIProvider("m", base_url=url, max_retries=0, timeout=60), stream=stream).run("hi")
    assert time.monotonic() - start < 5
    assert result.stop_reason == "error"
    assert "could not connect" in (result.error or "") and "did not answer" not in (result.error or "")
    # with retries: retried as a failed connection (not a timeout, which is never retried)
    result = Agent(OpenAIProvider("m", base_url=url, max_retries=2, timeout=60), stream=stream).run("hi")
    reasons = [e.reason for e in result.events if isinstance(e, RequestRetried)]
    assert reasons == ["connection failed", "connection failed"] and "could not connect" in (result.error or "")


def test_a_server_that_never_answers_is_a_timeout(fresh: ScriptedServer) -> None:
    fresh.script(Reply(text="late", delay=3))
    start = time.monotonic()
    with pytest.raises(ProviderError, match=r"did not answer within 0\.5 s"):
        asyncio.run(
            OpenAIProvider("m", base_url=fresh.url, timeout=0.5, max_retries=2).complete(Request([UserMessage("hi")]))
        )
    assert time.monotonic() - start < 2.5 and len(fresh.requests) == 1


def test_runs_on_fresh_loops_leave_no_unclosed_session_behind(fresh: ScriptedServer, caplog) -> None:
    fresh.script(text("one"), text("two"), text("three"))
    provider = OpenAIProvider("m", base_url=fresh.url)
    agent = Agent(provider)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.DEBUG, logger="asyncio"):
        warnings.simplefilter("always")
        transports = _transports_of_three_runs(agent, provider)
        assert len(transports) == 3  # one client per loop
        assert all(t._session is None for t in transports)  # Agent.run closed them before its loop closed
        del transports
        del agent, provider
        gc.collect()
    unclosed = [str(w.message) for w in caught if "nclosed" in str(w.message)]
    unclosed += [r.getMessage() for r in caplog.records if "nclosed" in r.getMessage()]
    assert not [m for m in unclosed if "session" in m or "connector" in m], unclosed


def _transports_of_three_runs(agent: Agent, provider: OpenAIProvider) -> list:
    used: dict[int, object] = {}  # each run's transport, seen from inside the run

    def seen(event: object) -> None:
        transport = provider.client._client._transport
        used[id(transport)] = transport

    assert [agent.run("hi", on_event=seen).output for _ in range(3)] == ["one", "two", "three"]  # a loop each
    return list(used.values())
