"""The limit's last turn always ends in text (issue 27 item 3).

A server that answers every request with a tool call, even with no tools offered: after the
limit and the one extra ask, the run ends with a text written by agentnb (marked as such) that
says what happened and lists the tool results, never with ``output == ""``. The server is a
real process (``python -m agentnb.testing.server``) on a free port.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator

import pytest
from server_process import free_port, wait_until_up

from agentnb import Agent, UsageLimits, tool
from agentnb.events import FinalAnswer
from agentnb.providers import OpenAIProvider
from agentnb.testing import ScriptedProvider, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def always_calls(n: int) -> list[dict[str, object]]:
    """``n`` replies that are all calls (a module's tests share the server: queue exactly what a run takes)."""
    return [
        {"tool_calls": [{"id": f"call_{k}", "name": "add", "arguments": json.dumps({"a": k, "b": 1})}]}
        for k in range(n)
    ]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentnb.testing.server", "--port", str(port)], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_until_up(proc, url, log, "scripted server", timeout=60)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def script(url: str, replies: list[dict[str, object]]) -> None:
    data = json.dumps(replies).encode()
    req = urllib.request.Request(f"{url}/_script", data, {"content-type": "application/json"})
    urllib.request.urlopen(req, timeout=10).close()


def requests(url: str) -> list[dict[str, object]]:
    with urllib.request.urlopen(f"{url}/_requests", timeout=10) as r:
        return [x["body"] for x in json.load(r) if x["path"].endswith("/chat/completions")]


def final(result) -> FinalAnswer:  # type: ignore[no-untyped-def]
    return next(e for e in result.events if isinstance(e, FinalAnswer))


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_a_server_that_never_stops_calling_ends_with_agentnb_text(server: str, stream: bool) -> None:
    before = len(requests(server))
    script(server, always_calls(4))
    agent = Agent(OpenAIProvider("wire", base_url=server, api_key="sk-test"), tools=[add], max_tool_calls=2)
    result = agent.run("add things", stream=stream)
    assert result.stop_reason == "limit" and result.tool_calls == 2
    assert result.output.startswith("[agentnb] The model gave no answer in text")
    assert "the tool-call limit (2)" in result.output and "written by agentnb, not by the model" in result.output
    assert "- add(a=0, b=1) -> 1" in result.output and "- add(a=1, b=1) -> 2" in result.output
    assert final(result).by == "agentnb" and final(result).text == result.output
    sent = requests(server)[before:]
    assert len(sent) == 4  # two steps with tools, the last turn without, the one extra ask
    assert [bool(b.get("tools")) for b in sent] == [True, True, False, False]


@pytest.mark.slow
@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_a_requests_budget_with_no_request_left_ends_with_agentnb_text(server: str, stream: bool) -> None:
    before = len(requests(server))
    script(server, always_calls(3))
    agent = Agent(OpenAIProvider("wire", base_url=server, api_key="sk-test"), tools=[add])
    result = agent.run("add things", stream=stream, limits=UsageLimits(requests=3))
    assert (result.stop_reason, result.limit, result.tool_calls) == ("limit", "requests", 2)
    assert result.output.startswith("[agentnb] The run reached its requests limit (3 of 3)"), result.output
    assert "written by agentnb, not by the model" in result.output
    assert "- add(a=0, b=1) -> 1" in result.output and "- add(a=1, b=1) -> 2" in result.output
    assert final(result).by == "agentnb" and final(result).text == result.output
    sent = requests(server)[before:]
    assert [bool(b.get("tools")) for b in sent] == [True, True, False]  # the budget: 3 requests, no more


@pytest.mark.slow
def test_tool_choice_none_with_a_server_that_calls_anyway(server: str) -> None:
    script(server, always_calls(2))
    agent = Agent(OpenAIProvider("wire", base_url=server, api_key="sk-test"), tools=[add], tool_choice="none")
    result = agent.run("add things")
    assert result.output.startswith("[agentnb]") and "tool_choice='none'" in result.output
    assert "No tool produced a result." in result.output and result.tool_calls == 0
    assert final(result).by == "agentnb"


def test_a_model_answer_is_still_the_model_s() -> None:
    model = ScriptedProvider([call("add", a=1, b=2), call("add", a=3, b=4), "It is 3."])
    result = Agent(model, tools=[add], max_tool_calls=1).run("go")
    assert result.output == "It is 3." and result.stop_reason == "limit" and final(result).by == "model"


def test_structured_output_is_not_validated_against_agentnb_text() -> None:
    model = ScriptedProvider([call("add", a=1, b=2), call("add", a=3, b=4), call("add", a=5, b=6)])
    result = Agent(model, tools=[add], max_tool_calls=1, output_type=int).run("go")
    assert result.stop_reason == "limit" and result.value is None
    assert result.output.startswith("[agentnb]") and "add(a=1, b=2) -> 3" in result.output
    assert len(model.requests) == 3  # no repair request for a text the model did not write
