"""A scripted OpenAI Responses-API server on 127.0.0.1, standard library only.

``POST /v1/responses`` answers a ``response`` object as JSON or, with ``"stream": true``, as
server-sent events (``response.created``, ``response.output_item.added``,
``response.output_text.delta``, ``response.function_call_arguments.delta``,
``response.reasoning_summary_text.delta``, ``response.output_item.done``,
``response.completed``). Each request takes the next :class:`Reply`; every request is
recorded.
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
    """Output items (Responses JSON) or an error; streamed text and arguments come in ``pieces``.

    ``fail`` ends the stream with ``response.failed`` carrying that message.
    """

    status: int = 200
    output: list[dict[str, Any]] = field(default_factory=list)
    usage: tuple[int, int] = (31, 12)
    error: str = ""
    pieces: int = 3
    fail: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def text(content: str, **kw: Any) -> Reply:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed"}
    item["content"] = [{"type": "output_text", "text": content, "annotations": []}]
    return Reply(output=[item], **kw)


def reasoning(rid: str, summary: str | None = None) -> dict[str, Any]:
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return {"type": "reasoning", "id": rid, "summary": parts, "encrypted_content": f"enc-{rid}"}


def calls(*specs: tuple[Any, ...], before: list[dict[str, Any]] | None = None, **kw: Any) -> Reply:
    """Function calls ``(name, arguments)`` or ``(name, arguments, call_id)``, after ``before`` items."""
    items = list(before or [])
    for n, c in enumerate(specs, 1):
        args = c[1] if isinstance(c[1], str) else json.dumps(c[1])
        cid = c[2] if len(c) > 2 else f"call_r{n}"
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": cid,
                "name": c[0],
                "arguments": args,
                "status": "completed",
            }
        )
    return Reply(output=items, **kw)


def error(status: int, message: str, **kw: Any) -> Reply:
    return Reply(status=status, error=message, headers={"retry-after-ms": "5"}, **kw)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


class ResponsesServer:
    """The server; ``url`` ends in ``/v1``."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def script(self, *replies: Reply) -> ResponsesServer:
        with self._lock:
            self.replies.extend(replies)
        return self

    def __enter__(self) -> ResponsesServer:
        threading.Thread(target=self._httpd.serve_forever, name="responses-wire", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next(self, record: Recorded) -> Reply:
        with self._lock:
            self.requests.append(record)
            return self.replies.popleft() if self.replies else text("(no reply scripted)")


def _response(body: dict[str, Any], reply: Reply, status: str = "completed") -> dict[str, Any]:
    return {
        "id": "resp_wire",
        "object": "response",
        "created_at": 1,
        "model": body.get("model", "?"),
        "status": status,
        "output": reply.output if status == "completed" else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": reply.usage[0],
            "output_tokens": reply.usage[1],
            "total_tokens": sum(reply.usage),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _cut(s: str, n: int) -> list[str]:
    size = max(1, -(-len(s) // max(n, 1)))
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


def _events(body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "response.created", "response": _response(body, reply, "in_progress")}]
    for i, item in enumerate(reply.output):
        kind = item["type"]
        empty = {**item, "status": "in_progress"}
        if kind == "message":
            empty["content"] = []
        elif kind == "function_call":
            empty["arguments"] = ""
        elif kind == "reasoning":
            empty["summary"] = []
        out.append({"type": "response.output_item.added", "output_index": i, "item": empty})
        if kind == "message":
            for piece in _cut(item["content"][0]["text"], reply.pieces):
                out.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": i,
                        "content_index": 0,
                        "delta": piece,
                    }
                )
        elif kind == "function_call":
            for piece in _cut(item["arguments"], reply.pieces):
                out.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": i,
                        "delta": piece,
                    }
                )
            out.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": i,
                    "arguments": item["arguments"],
                }
            )
        elif kind == "reasoning":
            for part in item["summary"]:
                out.append(
                    {
                        "type": "response.reasoning_summary_text.delta",
                        "item_id": item["id"],
                        "output_index": i,
                        "summary_index": 0,
                        "delta": part["text"],
                    }
                )
        out.append({"type": "response.output_item.done", "output_index": i, "item": item})
    if reply.fail is not None:
        failed = _response(body, reply, "failed")
        failed["error"] = {"code": "server_error", "message": reply.fail}
        return [*out, {"type": "response.failed", "response": failed}]
    return [*out, {"type": "response.completed", "response": _response(body, reply)}]


def _handler(server: ResponsesServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if not self.path.split("?")[0].endswith("/responses"):  # a window question (/api/show): not ours
                self._send(404, "application/json", b'{"error": "not found"}', {})
                return
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
            reply = server._next(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            if reply.status >= 400:
                payload = {"error": {"message": reply.error, "type": "invalid_request_error", "code": None}}
                self._send(reply.status, "application/json", json.dumps(payload).encode(), reply.headers)
            elif isinstance(body, dict) and body.get("stream"):
                events = _events(body, reply)
                for n, e in enumerate(events):
                    e["sequence_number"] = n
                data = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
                self._send(200, "text/event-stream", data.encode(), reply.headers)
            else:
                self._send(200, "application/json", json.dumps(_response(body, reply)).encode(), reply.headers)

        def _send(self, status: int, ctype: str, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

    return Handler
