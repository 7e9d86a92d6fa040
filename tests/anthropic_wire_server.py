"""A scripted Anthropic Messages-API server on 127.0.0.1, standard library only.

``POST /v1/messages`` answers JSON, or, when the request says ``"stream": true``, a
server-sent-event stream in Anthropic's event format (``message_start``,
``content_block_start`` / ``_delta`` / ``_stop``, ``message_delta``, ``message_stop``, with
``ping`` events in between). Each request takes the next :class:`Reply`; every request is
recorded so a test can assert exactly what the client sent.

    with MessagesServer() as server:
        server.script(tool_use(("add", {"a": 1})), text("3"))
        provider = AnthropicProvider("claude-x", base_url=server.url, api_key="k")
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer: content blocks (Anthropic JSON), or an error status.

    Streamed, each text block's text and each tool_use input's JSON are cut into ``pieces``;
    ``stream_error`` sends an ``error`` event after the first block instead of finishing;
    ``cut_after`` ends the stream cleanly after that many events (no ``message_stop``).
    """

    status: int = 200
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    usage: tuple[int, int] = (21, 9)
    error_type: str = "invalid_request_error"
    error: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    pieces: int = 3
    stream_error: str | None = None
    cut_after: int | None = None


def text(content: str, **kw: Any) -> Reply:
    return Reply(content=[{"type": "text", "text": content}], **kw)


def tool_use(*calls: tuple[Any, ...], content: str | None = None, thinking: str | None = None, **kw: Any) -> Reply:
    """Tool calls ``(name, input)`` or ``(name, input, id)``."""
    blocks: list[dict[str, Any]] = []
    if thinking is not None:
        blocks.append({"type": "thinking", "thinking": thinking, "signature": "sig-" + thinking[:4]})
    if content is not None:
        blocks.append({"type": "text", "text": content})
    for n, c in enumerate(calls, 1):
        blocks.append({"type": "tool_use", "id": c[2] if len(c) > 2 else f"toolu_{n}", "name": c[0], "input": c[1]})
    return Reply(content=blocks, stop_reason="tool_use", **kw)


def error(status: int, message: str, error_type: str = "api_error", **kw: Any) -> Reply:
    # retry-after-ms keeps the SDK's retry backoff short in tests.
    return Reply(status=status, error=message, error_type=error_type, headers={"retry-after-ms": "5"}, **kw)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


class MessagesServer:
    """The server; ``url`` is the base URL to give the SDK (no ``/v1``: the SDK adds it)."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def script(self, *replies: Reply) -> MessagesServer:
        with self._lock:
            self.replies.extend(replies)
        return self

    def __enter__(self) -> MessagesServer:
        threading.Thread(target=self._httpd.serve_forever, name="anthropic-wire", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, record: Recorded) -> Reply:
        with self._lock:
            self.requests.append(record)
            return self.replies.popleft() if self.replies else text("(no reply scripted)")


def _message(body: dict[str, Any], reply: Reply) -> dict[str, Any]:
    return {
        "id": "msg_wire",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "?"),
        "content": reply.content,
        "stop_reason": reply.stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]},
    }


def _cut(s: str, n: int) -> list[str]:
    size = max(1, -(-len(s) // max(n, 1)))
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


def _events(body: dict[str, Any], reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    start = _message(body, reply)
    start.update(content=[], stop_reason=None, usage={"input_tokens": reply.usage[0], "output_tokens": 1})
    out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(reply.content):
        out.append(("ping", {"type": "ping"}))
        kind = block["type"]
        if kind == "text":
            first, deltas = (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": p} for p in _cut(block["text"], reply.pieces)],
            )
        elif kind == "tool_use":
            first = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"]) if block["input"] else ""
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _cut(raw, reply.pieces)] if raw else []
        else:  # thinking
            first = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        out.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}))
        out += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        out.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        if reply.stream_error is not None:
            err = {"type": "error", "error": {"type": "overloaded_error", "message": reply.stream_error}}
            return [*out, ("error", err)]
    delta = {"type": "message_delta", "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None}}
    delta["usage"] = {"output_tokens": reply.usage[1]}
    return [*out, ("message_delta", delta), ("message_stop", {"type": "message_stop"})]


def _handler(server: MessagesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = server._next(Recorded(self.path, headers, body))
            if reply.status >= 400:
                payload = {"type": "error", "error": {"type": reply.error_type, "message": reply.error}}
                self._send(reply.status, "application/json", json.dumps(payload).encode(), reply.headers)
            elif isinstance(body, dict) and body.get("stream"):
                events = _events(body, reply)[: reply.cut_after]
                chunks = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events)
                self._send(200, "text/event-stream", chunks.encode(), reply.headers)
            else:
                self._send(200, "application/json", json.dumps(_message(body, reply)).encode(), reply.headers)

        def _send(self, status: int, ctype: str, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    return Handler
