"""The canonical form of a model request: what a replay or a cassette compares and keys on.

Two requests are the same call when their conversation, the tools on offer, the tool choice and
the output schema are the same. Call ids, timestamps and a provider's opaque reasoning items are
left out: they differ from run to run without changing what the model is asked.

>>> from agentnb.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
>>> a = [UserMessage("hi"), AssistantMessage(None, (ToolCall("call_1", "add", {"a": 1}),)),
...      ToolMessage("call_1", "add", "1")]
>>> b = [UserMessage("hi"), AssistantMessage(None, (ToolCall("x9", "add", {"a": 1}),)),
...      ToolMessage("x9", "add", "1")]
>>> canonical_messages(a) == canonical_messages(b)
True
>>> first_difference({"messages": [{"role": "user", "content": "hi"}]},
...                  {"messages": [{"role": "user", "content": "hello"}]})
('messages[0].content', "'hi'", "'hello'")
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from agentnb.context.compaction import is_cleared
from agentnb.messages import AssistantMessage, Message, ToolMessage

#: How much of each side a short diff shows.
SHORT = 160


def canonical_message(m: Message) -> dict[str, Any]:
    """One message as plain data without call ids or opaque reasoning."""
    if isinstance(m, AssistantMessage):
        d: dict[str, Any] = {"role": "assistant", "content": m.content}
        if m.tool_calls:
            d["tool_calls"] = [_call(c) for c in m.tool_calls]
        return d
    if isinstance(m, ToolMessage):
        text = m.content if not is_cleared(m) else m.content.replace(f"(call {m.tool_call_id})", "(call)", 1)
        d = {"role": "tool", "name": m.name, "content": text}  # a cleared result's marker: its id out too
        if m.is_error:
            d["is_error"] = True
        return d
    return m.to_dict()


def _call(c: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": c.name, "arguments": c.arguments}
    if c.arguments is None and c.raw_arguments is not None:
        d["raw_arguments"] = c.raw_arguments
    return d


def canonical_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Every message in its canonical form."""
    return [canonical_message(m) for m in messages]


def canonical_tool(t: Any) -> dict[str, Any]:
    """A tool as the model sees it: name, description and parameters schema."""
    return {"name": t.name, "description": t.description, "parameters": t.parameters}


def canonical_request(request: Any, model: str | None = None) -> dict[str, Any]:
    """A :class:`~agentnb.providers.Request` as plain data (the cassette's key and record)."""
    out = request.output
    return {
        "model": model,
        "messages": canonical_messages(request.messages),
        "tools": [canonical_tool(t) for t in request.tools],
        "tool_choice": request.tool_choice,
        "output": out.schema if out is not None else None,
        "settings": {k: v for k, v in sorted(request.settings.items()) if not _secret_name(k)},
    }


def _secret_name(key: str) -> bool:
    low = key.lower()
    return any(w in low for w in ("key", "token", "secret", "auth", "header", "password", "cookie"))


def request_key(canonical: dict[str, Any]) -> str:
    """A short stable hash of a canonical request (JSON with sorted keys, SHA-256)."""
    raw = json.dumps(canonical, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode("ascii")).hexdigest()[:32]


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, str, str] | None:
    """Where two canonical values first differ: ``(field path, a there, b there)``; None if equal."""
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return path or "value", short(a), short(b)
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            where = f"{path}.{k}" if path else str(k)
            if k not in a or k not in b:
                return where, short(a.get(k, "(absent)")), short(b.get(k, "(absent)"))
            found = first_difference(a[k], b[k], where)
            if found is not None:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found is not None:
                return found
        if len(a) != len(b):
            n = min(len(a), len(b))
            extra = a[n] if len(a) > n else b[n]
            shown = short(extra)
            return (
                f"{path}[{n}]",
                shown if len(a) > n else f"(none: {len(a)} items)",
                shown if len(b) > n else f"(none: {len(b)} items)",
            )
        return None
    return None if a == b else (path or "value", short(a), short(b))


def short(value: Any) -> str:
    """``value`` as compact text of at most :data:`SHORT` characters."""
    text = value if isinstance(value, str) and value.startswith("(") else None
    if text is None:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= SHORT else text[: SHORT - 1] + "…"
