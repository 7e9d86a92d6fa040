"""OpenAIProvider(rank_tools=True): the tool picked first from a server's prompt log-probabilities.

Against small real HTTP servers on 127.0.0.1: one that answers ``/v1/completions`` with echoed
log-probabilities the way llama-cpp-python's server does, and agentnb.testing's scripted server,
which has no such endpoint.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentnb import Agent, tool
from agentnb.events import CallDecision, ConstraintDropped, ToolStarted
from agentnb.providers import OpenAIProvider
from agentnb.testing import ScriptedServer
from agentnb.testing.server import text


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class EchoServer:
    """``/v1/completions``: the prompt echoed as two tokens (the head, then the rest) plus one
    generated token; the rest scores -1.0 under a head that mentions "Multiply", else -5.0.
    ``/v1/chat/completions``: the queued replies, in order."""

    def __init__(self) -> None:
        self.completions: list[dict] = []
        self.chats: list[dict] = []
        self.replies: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if self.path.endswith("/completions") and not self.path.endswith("/chat/completions"):
                    outer.completions.append(body)
                    prompt = body["prompt"]
                    cut = prompt.rindex('"') + 1  # the [[pick]] text ends with a quote
                    score = -1.0 if "Multiply" in prompt[:cut] else -5.0
                    logprobs = {
                        "tokens": [prompt[:cut], prompt[cut:], "!"],
                        "text_offset": [0, cut, len(prompt)],
                        "token_logprobs": [None, score, -9.0],
                        "top_logprobs": None,
                    }
                    choice = {"index": 0, "text": prompt + "!", "logprobs": logprobs, "finish_reason": "length"}
                    payload = {"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice]}
                else:
                    outer.chats.append(body)
                    content = outer.replies.pop(0)
                    if body.get("stream"):  # UnTooled streams from the provider: SSE
                        self.sse(content)
                        return
                    message = {"role": "assistant", "content": content}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    payload = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
                self.send_json(payload)

            def sse(self, content: str) -> None:
                head = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}
                deltas = [({"role": "assistant", "content": content}, None), ({}, "stop")]
                lines = [
                    "data: " + json.dumps({**head, "choices": [{"index": 0, "delta": d, "finish_reason": f}]})
                    for d, f in deltas
                ]
                data = ("\n\n".join([*lines, "data: [DONE]"]) + "\n\n").encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def send_json(self, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> EchoServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def echo():
    with EchoServer() as s:
        yield s


def provider(url: str, **options) -> OpenAIProvider:
    return OpenAIProvider("m", base_url=url, tool_calling="untooled", max_retries=0, timeout=20, **options)


def test_the_best_ranked_tool_is_alone_in_the_envelope_and_the_ranking_is_an_event(echo):
    echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42."]
    p = provider(echo.url, rank_tools=True)
    r = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("What is 6 times 7?")
    assert r.error is None and r.output == "42."
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"a": 6, "b": 7}]
    # one scoring request per tool, the query after each tool's [[pick]] text, echoed
    assert len(echo.completions) == 2 and all(b["echo"] and b["logprobs"] == 1 for b in echo.completions)
    assert all(b["prompt"].endswith('"What is 6 times 7?') for b in echo.completions)
    schema = echo.chats[0]["response_format"]["json_schema"]["schema"]
    assert "anyOf" not in schema and schema["properties"]["name"] == {"const": "mul"}
    decisions = [e for e in r.events if isinstance(e, CallDecision)]
    assert len(decisions) == 1 and decisions[0].tool == "mul"
    assert decisions[0].ranking == (("mul", -1.0), ("add", -5.0))  # the generated token left out
    # the same request again: the scores are remembered
    echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42."]
    Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("What is 6 times 7?")
    assert len(echo.completions) == 2


def test_without_rank_tools_or_with_one_tool_nothing_is_scored(echo):
    echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42.", '{"name": "mul", "arguments": {}}']
    r = Agent(provider(echo.url), [add, mul], tool_choice="required", max_tool_calls=1).run("6 times 7?")
    assert r.error is None and not echo.completions
    assert "anyOf" in echo.chats[0]["response_format"]["json_schema"]["schema"]
    Agent(provider(echo.url, rank_tools=True), [mul], tool_choice="required", max_tool_calls=1).run("6 x 7?")
    assert not echo.completions


def test_a_server_without_prompt_logprobs_is_asked_once_and_every_tool_stays():
    with ScriptedServer() as server:  # no /v1/completions: 404
        p = provider(server.url, rank_tools=True)
        server.script(text('{"name": "mul", "arguments": {"a": 6, "b": 7}}'), text("42."))
        r = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("6 times 7?")
        assert r.error is None and r.output == "42."
        dropped = [e for e in r.events if isinstance(e, ConstraintDropped)]
        assert len(dropped) == 1 and dropped[0].mechanism == "tool ranking by prompt logprobs"
        assert "anyOf" in server.bodies[0]["response_format"]["json_schema"]["schema"]
        server.script(text('{"name": "add", "arguments": {"a": 1, "b": 2}}'), text("3."))
        again = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("1 plus 2?")
        assert not any(isinstance(e, ConstraintDropped) for e in again.events)
        assert sum(r.path.endswith("/completions") and "chat" not in r.path for r in server.requests) == 0
