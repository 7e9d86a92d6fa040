"""Tool sources: Model Context Protocol servers (the ``mcp`` extra).

Layer: beside :mod:`agentnb.output`, above :mod:`agentnb.tools`; may import the tools,
messages and errors; only the run's callers (the notebook, the CLI) import it.

Tool *sources* live here, apart from model providers (:mod:`agentnb.providers`)::

    from agentnb.mcp import MCPServer
    server = MCPServer.stdio("python", "server.py")
    Agent("local", tools=[server]).run("...")

The ``mcp`` SDK itself is imported only when a server is built.
"""

from agentnb.mcp.convert import MCPToolError
from agentnb.mcp.server import MCPError, MCPServer

__all__ = ["MCPError", "MCPServer", "MCPToolError"]
