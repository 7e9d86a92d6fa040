"""A small MCP server for notebook 09 and the docs, written with the MCP SDK's own server class.

It ships inside agentnb, so a notebook that uses it runs from any folder, and it imports only
the MCP SDK, so it runs as a plain script: ``python -m agentnb.mcp.demo_server`` or
``python path/to/demo_server.py`` (MCP over stdin/stdout); add ``http 8000`` for streamable
HTTP at http://127.0.0.1:8000/mcp. From agentnb::

    from agentnb.mcp import MCPServer, demo_server
    server = MCPServer.stdio("python", demo_server.__file__, name="demo")
"""

from __future__ import annotations

import struct
import sys
import zlib
from typing import Annotated

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

server = MCPServer("demo")

WEATHER = {"oslo": "4 °C, light snow", "paris": "12 °C, cloudy", "cairo": "27 °C, sunny"}


@server.tool()
def weather(city: Annotated[str, Field(description="the city name, e.g. Paris")]) -> str:
    """Current weather in a city."""
    found = WEATHER.get(city.strip().lower())
    if found is None:
        raise ToolError(f"no weather station in {city!r}; known cities: Oslo, Paris, Cairo")
    return f"{city.strip().title()}: {found}"


@server.tool()
def bar_chart(values: list[float]) -> Image:
    """Draw a bar chart of a few positive numbers and return it as a PNG image."""
    return Image(data=_bars(values), format="png")


def _bars(values: list[float], height: int = 60, bar: int = 12) -> bytes:
    """A PNG bar chart drawn pixel by pixel (no imaging library needed)."""
    top = max([v for v in values if v > 0] or [1.0])
    width = max(1, len(values)) * (bar + 4) + 4
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")  # filter type 0
        for x in range(width):
            i, off = divmod(x - 4, bar + 4)
            inside = x >= 4 and off < bar and i < len(values) and (height - y) <= values[i] / top * (height - 4)
            row += b"\x09\x69\xda" if inside else b"\xff\xff\xff"
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    head = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", head)
        + chunk(b"IDAT", zlib.compress(b"".join(rows)))
        + chunk(b"IEND", b"")
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
