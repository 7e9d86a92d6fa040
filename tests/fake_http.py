"""A base for the small fake OpenAI-compatible servers some tests start on 127.0.0.1.

:class:`JsonHandler` reads a JSON body and answers with JSON or with server-sent events
(``data: {...}`` lines, then ``data: [DONE]``), quietly; :class:`Served` runs a handler on
127.0.0.1 in a thread, as a context manager, and stops it on exit.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class Served:
    """``handler`` served on a free port of 127.0.0.1; ``url`` is its ``/v1`` base URL."""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):  # the subclass itself
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
