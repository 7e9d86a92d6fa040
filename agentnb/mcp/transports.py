"""How an :class:`~agentnb.mcp.MCPServer` reaches its server: the SDK transport a session opens,
for a local process that speaks MCP over its stdin/stdout (:func:`stdio_transport`) or for
streamable HTTP (:func:`http_transport`). Each is a callable of the server (a stdio server keeps
its process's stderr on it, to quote in errors); the ``mcp`` SDK is imported when it is called.

>>> argv, label, _ = stdio_transport("npx -y @modelcontextprotocol/server-everything stdio", ())
>>> argv[:2], label
(['npx', '-y'], 'server-everything')
>>> http_transport("https://user:pw@example.com/mcp", {"Authorization": "Bearer x"})[:2]
('example.com', 'https://example.com/mcp')
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from agentnb.errors import UserError
from agentnb.mcp.naming import server_name

__all__ = ["http_transport", "stdio_transport"]

#: A transport: called with the server, it gives the SDK transport (an async context manager).
Transport = Callable[[Any], Any]


def stdio_transport(
    command: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    name: str | None = None,
) -> tuple[list[str], str, Transport]:
    """The command line, the server's name and the transport of a stdio server (see :meth:`MCPServer.stdio`)."""
    if not isinstance(command, str) or not command.strip():
        raise UserError(f"MCPServer.stdio needs a command, got {command!r}")
    argv = [command, *args] if args or os.path.exists(command) else shlex.split(command)
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    label = name or server_name(argv)  # its package or script, not a trailing argument

    def transport(server: Any) -> Any:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=dict(env or {}) or None, cwd=None if cwd is None else os.fspath(cwd)
        )
        if server._errlog is not None:  # a restart: the last run's stderr is no longer needed
            server._errlog.close()
        server._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in close()
        return stdio_client(params, errlog=server._errlog)

    return argv, label, transport


def http_transport(
    url: str, headers: Mapping[str, str] | None = None, *, name: str | None = None
) -> tuple[str, str, Transport]:
    """The server's name, its URL without credentials, and the transport of an HTTP server."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"MCPServer.http needs an http(s) URL, got {url!r}")
    label = name or parts.hostname
    hidden = dict(headers or {})
    safe_url = url if "@" not in parts.netloc else url.replace(parts.netloc.rsplit("@", 1)[0] + "@", "")

    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[Any]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        # The SDK closes only HTTP clients it made itself; this one (for the headers) is ours.
        async with (
            create_mcp_http_client(headers=hidden or None) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    def transport(server: Any) -> Any:
        return connect()

    return label, safe_url, transport
