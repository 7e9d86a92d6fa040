"""A small MCP server for the tests, on the SDK's own server class (FastMCP in mcp 1.x).

Run as ``python demo_server.py [stdio | http PORT] [--name NAME]``.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import time
import zlib
from typing import TypedDict

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError


class Weather(TypedDict):
    city: str
    temp_c: int


def tiny_png() -> bytes:
    """A valid 1x1 red PNG, built by hand so the server needs no imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


def build(name: str) -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def echo(text: str) -> str:
        """Repeat the text back."""
        return f"echo: {text}"

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def picture() -> Image:
        """A tiny red picture."""
        return Image(data=tiny_png(), format="png")

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails with the reason."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def slow(seconds: float) -> str:
        """Sleep, then answer."""
        time.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def die() -> str:
        """The server process exits in the middle of this call."""
        sys.stdout.flush()
        os._exit(3)

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of one HTTP request header ('-' when absent or not over HTTP)."""
        request = ctx.request_context.request
        headers = getattr(request, "headers", None) or {}
        return str(headers.get(name, "-"))

    @server.tool()
    def garbage() -> str:
        """Writes a line that is not JSON-RPC onto the protocol stream, then answers."""
        sys.stdout.write("this is not json {{{\n")
        sys.stdout.flush()
        return "answered after garbage"

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    @server.tool()
    def where() -> str:
        """The server's working directory and its AGENTNB_TEST variable."""
        return f"{os.getcwd()} {os.environ.get('AGENTNB_TEST', '-')}"

    @server.tool()
    def write(path: str, text: str) -> str:
        """Write text to a file (a side effect a test can see)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return f"wrote {len(text)} characters to {path}"

    @server.tool()
    def weather(city: str) -> Weather:
        """Current weather, as structured data."""
        return Weather(city=city, temp_c=12)

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", nargs="?", default="stdio", choices=["stdio", "http"])
    parser.add_argument("port", nargs="?", type=int, default=0)
    parser.add_argument("--name", default="demo")
    parser.add_argument("--stubborn", action="store_true", help="keep running after stdin closes")
    args = parser.parse_args()
    server = build(args.name)
    if args.transport == "stdio":
        server.run()
        if args.stubborn:  # only a terminate/kill from the client ends it now
            time.sleep(600)
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
