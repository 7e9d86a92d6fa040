"""MCP tool listings into agentnb :class:`~agentnb.tools.Tool` objects, and call results back.

Pure functions over the SDK's result objects (read by attribute, so nothing here imports
``mcp``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

from agentnb.tools import Tool, ToolContext

#: The keyword under which the loop hands an MCP tool its ToolContext (no MCP schema uses it).
CONTEXT_PARAM = "__agentnb_ctx__"
_BAD_NAME = re.compile(r"[^A-Za-z0-9_-]")


class MCPToolError(Exception):
    """A ``tools/call`` that failed: the server's ``isError`` result, a timeout, a dead server.

    The loop turns it into an error result the model reads, like any tool exception.
    """


def tool_name(name: str, prefix: str = "") -> str:
    """The agentnb name of an MCP tool: prefixed, and only characters every API accepts.

    >>> tool_name("files.read", "fs_")
    'fs_files_read'
    """
    return _BAD_NAME.sub("_", prefix + name)[:64]


def build_tool(
    spec: Any, name: str, source: str, call: Callable[[str, dict[str, Any], ToolContext], Awaitable[str]]
) -> Tool:
    """An agentnb tool for one listed MCP tool; ``call(mcp_name, arguments, ctx)`` runs it."""
    schema = dict(spec.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    remote = spec.name

    async def run(**kwargs: Any) -> str:
        ctx = kwargs.pop(CONTEXT_PARAM)
        return await call(remote, kwargs, ctx)

    description = spec.description or spec.title or f"Tool {remote!r} of the MCP server {source}."
    return Tool(name, description, schema, run, context_param=CONTEXT_PARAM, source=f"mcp:{source}")


def result_text(result: Any, ctx: ToolContext | None) -> str:
    """The text the model reads for a ``CallToolResult``; images are attached through ``ctx``.

    Text blocks are the result. Image blocks (and image blobs) are attached, so the model sees
    them on its next turn and the trace widget shows them. ``structuredContent`` is kept
    (``ToolFinished.structured``, saved with the transcript) and is the result's text when the
    server sent no text (servers are asked to send both). An ``isError`` result raises
    :class:`MCPToolError` with the server's text, which the model reads.
    """
    parts: list[str] = []
    has_text = False
    for block in result.content or ():
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
            has_text = True
        elif kind == "image":
            parts.append(_attach(ctx, block.data, block.mime_type))
        elif kind == "audio":
            parts.append(f"[audio ({block.mime_type}) returned; audio is not passed to the model]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.name}: {block.uri}]")
        elif kind == "resource":
            res = block.resource
            if getattr(res, "text", None) is not None:
                parts.append(res.text)
                has_text = True
            elif (res.mime_type or "").startswith("image/"):
                parts.append(_attach(ctx, res.blob, res.mime_type))
            else:
                parts.append(f"[binary resource {res.uri} ({res.mime_type or 'unknown type'})]")
    structured = result.structured_content
    if structured is not None:
        if ctx is not None:
            ctx.structured = structured  # kept on the ToolFinished event and in the transcript
        if not has_text:
            parts.append(json.dumps(structured, ensure_ascii=False))
    text = "\n".join(parts)
    if result.is_error:
        raise MCPToolError(text or "the server reported an error and gave no message")
    return text or "(no output)"


def _attach(ctx: ToolContext | None, data: str, mime: str | None) -> str:
    mime = mime or "image/png"
    if ctx is None:
        return f"[image ({mime}) returned]"
    ctx.attach_image(base64.b64decode(data), mime)
    return f"[image ({mime}) attached]"
