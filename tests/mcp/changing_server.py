"""An MCP server whose tools change: ``unlock`` adds a tool ``secret`` and ``lock`` removes it,
each followed by a ``notifications/tools/list_changed`` (on a ``subscriptions/listen`` stream
for a 2026-07-28 client, on the session for an earlier one).

Run as ``python changing_server.py``.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing")


def secret(word: str) -> str:
    """Tell the secret for a word."""
    return f"the secret of {word} is 42"


async def _changed(ctx: Context) -> None:
    await ctx.notify_tools_changed()  # listen streams (2026-07-28 clients)
    if ctx.request_context.protocol_version < "2026":  # an earlier client hears it on the session
        await ctx.session.send_tool_list_changed()


@server.tool()
async def unlock(ctx: Context) -> str:
    """Add the tool secret."""
    if "secret" not in [t.name for t in await server.list_tools()]:
        server.add_tool(secret)
    await _changed(ctx)
    return "unlocked"


@server.tool()
async def lock(ctx: Context) -> str:
    """Remove the tool secret."""
    if "secret" in [t.name for t in await server.list_tools()]:
        server.remove_tool("secret")
    await _changed(ctx)
    return "locked"


if __name__ == "__main__":
    server.run()
