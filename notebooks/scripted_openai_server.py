"""A tiny scripted OpenAI Chat Completions server for the notebooks (standard library only).

    python scripted_openai_server.py [--port 0]

prints ``scripted OpenAI server on http://127.0.0.1:PORT/v1`` and serves:

* ``POST /v1/chat/completions``: answers with the next queued reply (not streamed) and records
  the request body;
* ``POST /_script``: queue replies, a JSON list of ``{"text": ...}`` or
  ``{"tool_calls": [{"id": ..., "name": ..., "arguments": "<JSON text>"}]}``;
* ``GET /_requests``: the recorded request bodies, in order.

Scripted, not clever: it never looks at what it is asked.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLIES: deque[dict[str, Any]] = deque()
REQUESTS: list[Any] = []
LOCK = threading.Lock()


def completion(reply: dict[str, Any]) -> dict[str, Any]:
    calls = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in reply.get("tool_calls", ())
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text")}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # keep the notebook quiet
        pass

    def _send(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/_requests":
            with LOCK:
                self._send(200, list(REQUESTS))
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        size = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(size) or b"null")
        if self.path == "/_script":
            with LOCK:
                REPLIES.extend(body)
            self._send(200, {"queued": len(REPLIES)})
        elif self.path.endswith("/chat/completions"):
            with LOCK:
                REQUESTS.append(body)
                reply = REPLIES.popleft() if REPLIES else None
            if reply is None:
                self._send(500, {"error": {"message": "the script is empty", "type": "server_error"}})
            else:
                self._send(200, completion(reply))
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"scripted OpenAI server on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:  # the kernel shutting down
        pass


if __name__ == "__main__":
    main()
