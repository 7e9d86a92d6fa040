"""A base for the small fake OpenAI-compatible servers some tests start on 127.0.0.1.

:class:`JsonHandler` reads a JSON body and answers with JSON or with server-sent events
(``data: {...}`` lines, then ``data: [DONE]``), quietly.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["content-length"])))

    def send_json(self, payload: Any) -> None:
        self._send("application/json", json.dumps(payload).encode())

    def send_sse(self, chunks: list[dict[str, Any]]) -> None:
        lines = [*(f"data: {json.dumps(c)}" for c in chunks), "data: [DONE]"]
        self._send("text/event-stream", ("\n\n".join(lines) + "\n\n").encode())

    def _send(self, ctype: str, data: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client closed the stream early (steering does, where it changes a token)
