"""Starts an MCP server, prints its pid, and exits without closing it (atexit must)."""

import asyncio
import sys

from agentnb.mcp import MCPServer

server = MCPServer.stdio(sys.executable, *sys.argv[1:])
(pid_tool,) = server.tools(include=["pid"])
print(asyncio.run(server.call("pid", {})), flush=True)
