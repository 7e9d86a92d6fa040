"""Listing an MCP server's tools, and following its ``notifications/tools/list_changed``.

A server may add or remove tools while it runs and say so. Before the 2026-07-28 protocol it
sends the notification on the session (the client's message handler sees it); from 2026-07-28
on it sends it only on a ``subscriptions/listen`` stream the client opens. :func:`follow` does
both; :class:`~agentnb.mcp.MCPServer` marks its listing stale on either, lists again on its
next use, and bumps its ``tools_version`` so an agent offers the new tools from its next step.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

#: A paginator that never ends cannot hang a listing.
MAX_PAGES = 100


async def list_all(client: Any) -> list[Any]:
    """Every tool the server lists (all pages)."""
    listing: list[Any] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        listing += page.tools
        cursor = page.next_cursor
        if not cursor:
            break
    return listing


def message_handler(on_change: Callable[[], None], on_error: Callable[[Exception], None] | None = None) -> Any:
    """A client ``message_handler`` that calls ``on_change`` on a tools ``list_changed``, and
    ``on_error`` with what the transport could not read (a line on stdout that is not JSON-RPC)."""
    from mcp_types import ToolListChangedNotification

    async def handle(message: Any) -> None:
        if isinstance(message, ToolListChangedNotification):
            on_change()
        elif isinstance(message, Exception) and on_error is not None:
            on_error(message)
        await asyncio.sleep(0)

    return handle


def unreadable(exc: Exception) -> str:
    """What a server wrote that is not a protocol message, said for the person who wrote it.

    >>> unreadable(ValueError("Invalid JSON"))
    'it wrote what is not an MCP message (ValueError: Invalid JSON); a stdio server may write only protocol messages to stdout (log to stderr)'
    """
    errors = getattr(exc, "errors", None)
    try:
        first = errors()[0] if callable(errors) else None
    except Exception:  # not pydantic's
        first = None
    if isinstance(first, dict) and "input" in first:
        what = repr(str(first["input"])[:80])
    else:
        what = f"({type(exc).__name__}: {str(exc)[:80]})"
    return f"it wrote what is not an MCP message {what}; a stdio server may write only protocol messages to stdout (log to stderr)"


def follow(client: Any, on_change: Callable[[], None]) -> asyncio.Task[None] | None:
    """On a 2026-07-28 session whose server offers tool change events: a task that listens for
    them (cancel it before the session closes); None where the message handler hears them."""
    from mcp.client.subscriptions import ListenNotSupportedError

    session = client.session
    tools = getattr(getattr(session, "server_capabilities", None), "tools", None)
    if not getattr(tools, "list_changed", False):
        return None

    async def listen() -> None:
        # A server that drops the stream, or refuses it, only loses the updates.
        with contextlib.suppress(ListenNotSupportedError, Exception):
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    on_change()

    try:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    except ImportError:  # pragma: no cover - an SDK that names it elsewhere: try; a refusal is quiet
        modern: Any = (session.protocol_version,)
    else:
        modern = MODERN_PROTOCOL_VERSIONS
    if session.protocol_version not in modern:
        return None
    return asyncio.get_running_loop().create_task(listen())
