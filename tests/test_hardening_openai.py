"""Bad answers from an OpenAI-compatible server (issue 13), from a raw socket server on 127.0.0.1.

Each test scripts the exact bytes the server sends (cut-off streams, HTML pages, garbage JSON,
bodies cut short) and checks that the run ends with a ProviderError that says what happened,
and that the API key appears nowhere, not even in the exception chain.
"""

from __future__ import annotations

import json
import socket
import threading
import traceback
from collections import deque
from collections.abc import Iterator

import pytest

from agentnb import Agent, ProviderError
from agentnb.providers.openai import OpenAIProvider

KEY = "sk-raw-0123456789-very-secret"


class RawServer:
    """Answers each HTTP request with the next scripted raw bytes, then closes the socket."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)  # so the serving thread sees close() quickly
        self.replies: deque[bytes] = deque()
        self.requests: list[bytes] = []
        self._stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(10)
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    piece = conn.recv(65536)
                    if not piece:
                        break
                    data += piece
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")), 0
                )
                while len(body) < length:
                    piece = conn.recv(65536)
                    if not piece:
                        break
                    body += piece
                if b"/chat/completions" not in head.split(b"\r\n", 1)[0]:  # a window question (/props, ...)
                    reply = _http(404, "text/plain", b"not found")  # as a real server answers it
                else:
                    self.requests.append(body)
                    reply = self.replies.popleft() if self.replies else _http(500, "text/plain", b"no reply scripted")
                try:
                    conn.sendall(reply)
                except OSError:
                    pass

    def close(self) -> None:
        self._stop = True
        self.sock.close()
        self.thread.join(5)


def _http(status: int, ctype: str, body: bytes, *, length: int | None = None) -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n"
    return head.encode() + body


def _sse(*events: dict | str) -> bytes:
    body = b"".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n".encode() for e in events)
    head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    return head.encode() + body


def _chunk(content: str | None = None, finish: str | None = None) -> dict:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}],
    }


@pytest.fixture
def raw() -> Iterator[RawServer]:
    server = RawServer()
    yield server
    server.close()


def _agent(url: str, stream: bool) -> Agent:
    return Agent(OpenAIProvider("m", api_key=KEY, base_url=url, max_retries=0, timeout=5), stream=stream)


def _check_error(result, *phrases: str) -> None:  # type: ignore[no-untyped-def]
    assert result.stop_reason == "error", result
    assert isinstance(result.exception, ProviderError), repr(result.exception)
    text = "".join(traceback.format_exception(result.exception))
    assert KEY not in text and KEY not in (result.error or "")
    chained, seen = [], result.exception
    while seen is not None and len(chained) < 20:
        chained.append(seen)
        seen = seen.__cause__ or seen.__context__
    assert len(chained) == 1, chained  # nothing chained: the SDK's error can hold the key
    for phrase in phrases:
        assert phrase in (result.error or ""), result.error


def test_a_stream_cut_off_before_finish_is_an_error(raw: RawServer) -> None:
    raw.replies.append(_sse(_chunk("The answer is"), _chunk(" 4")))  # no finish_reason, no [DONE]
    result = _agent(raw.url, True).run("hi")
    _check_error(result, "after 2 chunks", "incomplete")
    assert result.partial_output == "The answer is 4" and result.output == ""


def test_an_html_page_to_a_streaming_request_is_an_error(raw: RawServer) -> None:
    raw.replies.append(_http(200, "text/html", b"<html><body>Welcome to nginx</body></html>"))
    _check_error(_agent(raw.url, True).run("hi"), "without a single chunk", "base_url")


def test_an_html_page_to_a_plain_request_is_an_error(raw: RawServer) -> None:
    raw.replies.append(_http(200, "text/html", b"<html><body>Welcome to nginx</body></html>"))
    _check_error(_agent(raw.url, False).run("hi"), "not a chat completion", "nginx")


@pytest.mark.parametrize(
    "body",
    [b'{"choices": "nope"', b'{"id": 1}', b'"just a string"', b"[1, 2, 3]", b'{"choices": [{"message": 5}]}'],
)
def test_garbage_json_is_a_provider_error(raw: RawServer, body: bytes) -> None:
    raw.replies.append(_http(200, "application/json", body))
    _check_error(_agent(raw.url, False).run("hi"), "sent")


def test_garbage_stream_chunks_are_a_provider_error(raw: RawServer) -> None:
    raw.replies.append(_sse("{not json", "[DONE]"))
    _check_error(_agent(raw.url, True).run("hi"), "sent")


def test_a_refused_connection_says_could_not_connect(raw: RawServer) -> None:
    url = raw.url
    raw.close()
    for stream in (True, False):
        _check_error(_agent(url, stream).run("hi"), "could not connect")


def test_a_body_cut_off_without_streaming_says_so(raw: RawServer) -> None:
    raw.replies.append(_http(200, "application/json", b'{"id": "x", "choi', length=500))
    result = _agent(raw.url, False).run("hi")
    _check_error(result, "broke before the response was complete")
    assert "could not connect" not in (result.error or "")


def test_the_key_echoed_by_the_server_is_not_in_the_exception_chain(raw: RawServer) -> None:
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}})
    for stream in (False, True):
        raw.replies.append(_http(401, "application/json", body.encode()))
        result = _agent(raw.url, stream).run("hi")
        _check_error(result, "rejected the API key")


def test_a_provider_error_raised_from_none_keeps_no_hidden_context() -> None:
    from agentnb.providers.base import Completion, Provider

    class Leaky(Provider):
        name = "leaky"

        async def complete(self, request):  # type: ignore[no-untyped-def]
            try:
                raise RuntimeError(f"SDK error with {KEY}")
            except RuntimeError:
                raise ProviderError("the server refused the request") from None
            return Completion("never")

    result = Agent(Leaky()).run("hi")
    assert result.exception is not None and result.exception.__context__ is None
    assert KEY not in "".join(traceback.format_exception(result.exception))
