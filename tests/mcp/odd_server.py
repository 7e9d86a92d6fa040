"""An MCP server with tools shaped unlike a Python function's: a dotted name, model
parameters ($ref into $defs), no description."""

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("odd")


class Point(BaseModel):
    x: float
    y: float


@server.tool(name="geo.distance")
def distance(a: Point, b: Point) -> float:
    return ((a.x - b.x) ** 2 + (a.y - b.y) ** 2) ** 0.5


@server.tool(name="geo/origin")
def origin() -> Point:
    return Point(x=0, y=0)


if __name__ == "__main__":
    server.run()
