"""A scripted OpenAI-compatible server on 127.0.0.1, for tests and docs (standard library only).

It speaks Chat Completions (``POST /v1/chat/completions``) as JSON or, when the request says
``"stream": true``, as a server-sent-event stream. It is scripted, not clever: each request
takes the next :class:`Reply` from a queue, and every request is recorded so a test can assert
exactly what the client sent. ``rejects_tools`` makes it answer any request that carries
``tools`` with HTTP 400 and that message, as Ollama does for a model without tool support;
``ignores_tools`` makes it take them and never show them to the model, like a server whose
chat template has no place for tools (the prompt size it reports then ignores them too).

Like a real server, it counts a request's tools in the prompt size it reports: a reply's
``usage`` is the size without them. A one-token request (``max_tokens=1``: agentnb's probes of
what a server does) is answered outside the script, recorded in ``probes``.

>>> from agentnb import Agent, tool
>>> from agentnb.providers import OpenAIProvider
>>> @tool
... def add(a: int, b: int) -> int:
...     "Add two integers."
...     return a + b
>>> with ScriptedServer(rejects_tools="gemma:2b does not support tools") as server:
...     _ = server.script(text('{"name": "add", "arguments": {"a": 2, "b": 3}}'), text('{"answer": "5"}'))
...     result = Agent(OpenAIProvider("gemma:2b", base_url=server.url), [add]).run("2 + 3?")
>>> result.output, [r.body.get("tools") is not None for r in server.requests]
('5', [True, False, False])

Standalone, in its own process::

    python -m agentnb.testing.server --port 8765 [--default-text "ok"] [--rejects-tools MESSAGE]
        [--ignores-tools]

then ``POST /_script`` a JSON list of reply objects (the fields of :class:`Reply`) and read
``GET /_requests``. With ``--default-text`` an empty queue answers with that text.
"""

from __future__ import annotations

import argparse
import json
import socket
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agentnb.testing.bodies import completion_body, stream_chunks
from agentnb.testing.overflow import overflow_reply, prompt_tokens


@dataclass
class Reply:
    """One scripted answer.

    ``status`` >= 400 sends an OpenAI-style error body with ``error`` as its message.
    ``tool_calls`` entries are ``{"id", "name", "arguments"}`` with ``arguments`` as the exact
    text sent. When streamed, text and each call's arguments are cut into ``pieces``
    fragments; ``split_names`` cuts names in two as well; ``interleave`` alternates the
    fragments of parallel calls; ``chunks`` replaces all that with explicit chunk bodies;
    ``disconnect_after`` drops the connection after that many chunks (0 on a JSON reply: before
    any response). ``delay`` waits that many seconds before answering (a long one: a server that
    accepts the request and never answers); ``hold`` answers only once that event is set (a
    test acts while the reply is held: :meth:`ScriptedServer.wait_for_requests` says it came).
    """

    status: int = 200
    text: str | None = None
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    usage: tuple[int, int] | None = (11, 7)
    finish_reason: str | None = None
    error: str = ""
    error_type: str = "invalid_request_error"
    headers: dict[str, str] = field(default_factory=dict)
    pieces: int = 3
    split_names: bool = False
    interleave: bool = False
    chunks: list[dict[str, Any]] | None = None
    disconnect_after: int | None = None
    delay: float = 0.0
    body: dict[str, Any] | None = None
    hold: threading.Event | None = None


def text(content: str, **kw: Any) -> Reply:
    """A text answer."""
    return Reply(text=content, **kw)


def tool_calls(*calls: tuple[Any, ...], content: str | None = None, **kw: Any) -> Reply:
    """Tool calls, each ``(name, arguments)`` or ``(name, arguments, id)``; ``arguments`` is
    a dict (sent as JSON) or a string (sent verbatim, e.g. broken JSON)."""
    out = []
    for n, c in enumerate(calls, 1):
        name, args = c[0], c[1]
        cid = c[2] if len(c) > 2 else f"call_w{n}"
        out.append({"id": cid, "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)})
    return Reply(text=content, tool_calls=out, **kw)


def error(status: int, message: str, *, retry_after_ms: int | None = 5, **kw: Any) -> Reply:
    """An error status; ``retry_after_ms`` keeps the SDK's retry backoff short in tests."""
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    kinds = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_exceeded"}
    return Reply(status=status, error=message, error_type=kinds.get(status, "server_error"), headers=headers, **kw)


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)  # when it arrived (time.monotonic())


class ScriptedServer:
    """The server; ``url`` is the base URL to give the client (ends in ``/v1``).

    Args:
        port: the port on 127.0.0.1 (0: any free one).
        default_text: the answer when the queue is empty (default: HTTP 500, no retry).
        rejects_tools: answer every request that carries ``tools`` with HTTP 400 and this
            message (no scripted reply is used), like Ollama for a model without tools.
        ignores_tools: take ``tools`` without a word and leave them out of the prompt.
        window: refuse a prompt of more tokens than this (HTTP 400, no reply used) in OpenAI's or
            llama.cpp's words (``overflow``; :mod:`agentnb.testing.overflow` counts the tokens).
    """

    def __init__(
        self,
        port: int = 0,
        *,
        default_text: str | None = None,
        rejects_tools: str | None = None,
        ignores_tools: bool = False,
        window: int | None = None,
        overflow: str = "openai",
        chars_per_token: float = 4.0,
    ) -> None:
        if overflow not in ("openai", "llamacpp"):
            raise ValueError(f"overflow must be 'openai' or 'llamacpp', not {overflow!r}")
        self.window, self.overflow, self.chars_per_token = window, overflow, chars_per_token
        #: The prompt size of each chat request, as counted against ``window`` (in order).
        self.sizes: list[int] = []
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.probes: list[Recorded] = []
        self.default_text = default_text
        self.rejects_tools = rejects_tools
        self.ignores_tools = ignores_tools
        #: Other paths' answers (``answer``): path -> (status, JSON payload or raw text, hangs).
        self.answers: dict[str, tuple[int, Any, bool]] = {}
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Reply) -> ScriptedServer:
        """Queue replies, answered in order."""
        with self._lock:
            self.replies.extend(replies)
        return self

    def answer(self, path: str, payload: Any, *, status: int = 200, hang: bool = False) -> ScriptedServer:
        """Answer ``path`` (``"/props"``, ``"/v1/models"``, ``"/api/show"``...) with ``payload``
        (JSON, or a ``str`` sent as is), or never answer (``hang``: until the server stops)."""
        self.answers[path] = (status, payload, hang)
        return self

    def reset(self) -> None:
        with self._lock:
            self.replies.clear()
            self.requests.clear()
            self.probes.clear()

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the chat requests, in order."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> Recorded:
        """Wait until ``n`` chat requests have arrived (a state, not a time); the ``n``-th.
        TimeoutError after ``timeout`` seconds."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(f"{len(self.requests)} of {n} requests arrived within {timeout:g} s")
            return self.requests[n - 1]

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="openai-wire", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, record: Recorded) -> Reply:
        body = record.body if isinstance(record.body, dict) else {}
        probe = 1 in (body.get("max_tokens"), body.get("max_completion_tokens"))
        if probe and not (self.rejects_tools is not None and body.get("tools")):
            with self._lock:
                self.probes.append(record)
            return self._sized(Reply(text=".", finish_reason="length", usage=(11, 1)), body)
        return self._sized(self._scripted(record), body)

    def _sized(self, reply: Reply, body: dict[str, Any]) -> Reply:
        """``reply`` with the request's tools counted in its prompt size (unless ignored)."""
        if reply.usage is None or not body.get("tools") or self.ignores_tools:
            return reply
        return replace(reply, usage=(reply.usage[0] + len(json.dumps(body["tools"])) // 4, reply.usage[1]))

    def _scripted(self, record: Recorded) -> Reply:
        with self._lock:
            self.requests.append(record)
            self._arrived.notify_all()
            if self.window is not None and isinstance(record.body, dict):
                size = prompt_tokens(record.body, self.chars_per_token)
                self.sizes.append(size)
                if size > self.window:
                    said, body = overflow_reply(size, self.window, self.overflow)
                    return Reply(status=400, error=said, body=body)
            if self.rejects_tools is not None and isinstance(record.body, dict) and record.body.get("tools"):
                return Reply(status=400, error=self.rejects_tools, error_type="api_error")
            if self.replies:
                return self.replies.popleft()
        if self.default_text is not None:
            return Reply(text=self.default_text)
        # No retry: a test that runs out of replies should fail at once and say why.
        return Reply(status=500, error="wire server: no scripted reply left", headers={"x-should-retry": "false"})


# -- HTTP ---------------------------------------------------------------------------------


class _Writer(BaseHTTPRequestHandler):
    """Writing a JSON response or an event stream (a reply that may break off on purpose)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else headers and body wait out a 40 ms delayed ACK

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        try:
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            self.close_connection = True

    def _sse(self, chunks: list[dict[str, Any]], reply: Reply) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        for n, event in enumerate(events):
            if reply.disconnect_after is not None and n >= reply.disconnect_after:
                # Drop the socket without the final zero-length chunk: a broken stream.
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Writer):
        def _answered(self) -> bool:
            found = server.answers.get(self.path.rstrip("/"))
            if found is None:
                return False
            self.rfile.read(int(self.headers.get("content-length") or 0))
            status, payload, hang = found
            if hang:
                server._released.wait()
                self.close_connection = True
                return True
            self._json(status, payload)
            return True

        def do_GET(self) -> None:
            if self._answered():
                return
            if self.path.rstrip("/").endswith("/_requests"):
                self._json(200, [asdict(r) for r in server.requests])
            elif self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "wire", "object": "model", "owned_by": "test"}]})
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            if self._answered():
                return
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
            if self.path.rstrip("/").endswith("/_script"):
                if not isinstance(body, list) or not all(isinstance(r, dict) for r in body):
                    self._json(400, {"error": {"message": "POST /_script takes a JSON list of reply objects"}})
                    return
                try:
                    replies = [Reply(**r) for r in body]
                except TypeError as exc:
                    self._json(400, {"error": {"message": f"not a reply: {exc}"}})
                    return
                server.script(*replies)
                self._json(200, {"queued": len(replies)})
                return
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            record = Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            reply = server._next(record)
            model = body.get("model", "wire") if isinstance(body, dict) else "wire"
            if reply.delay:
                time.sleep(reply.delay)
            while reply.hold is not None and not reply.hold.wait(0.05) and not server._released.is_set():
                pass  # held until the test lets it go (or the server stops)
            if reply.disconnect_after == 0 and not (isinstance(body, dict) and body.get("stream")):
                self.connection.shutdown(socket.SHUT_RDWR)  # a dropped connection: no response at all
                self.close_connection = True
                return
            if reply.status >= 400:
                err = {"message": reply.error, "type": reply.error_type, "param": None, "code": None}
                self._json(reply.status, reply.body or {"error": err}, reply.headers)
            elif isinstance(body, dict) and body.get("stream"):
                include = bool((body.get("stream_options") or {}).get("include_usage"))
                self._sse(stream_chunks(reply, model, include), reply)
            else:
                self._json(200, completion_body(reply, model), reply.headers)

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--default-text", default=None, help="answer with this text when no reply is queued")
    parser.add_argument("--rejects-tools", default=None, metavar="MESSAGE", help="answer requests with tools: 400")
    parser.add_argument("--ignores-tools", action="store_true", help="take tools, leave them out of the prompt")
    args = parser.parse_args(argv)
    server = ScriptedServer(
        args.port, default_text=args.default_text, rejects_tools=args.rejects_tools, ignores_tools=args.ignores_tools
    )
    print(f"OpenAI-wire server on {server.url}  (POST /_script, GET /_requests)", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
