"""The summariser's request: the dropped turns as text, the policy's prompt, a bounded reply.

The summary request is a model request like the loop's own: it goes through the run's provider
(or the policy's ``summarizer``) and is recorded on the
:class:`~agentnb.events.ContextCompacted` event, so that a replay or a cassette answers it too.
A summariser that fails, hangs past the policy's ``timeout`` or returns nothing gives no summary
and a note saying why; the caller keeps the cheaper steps.

>>> from agentnb.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
>>> print(render([UserMessage("Find the mean."), AssistantMessage(None, (ToolCall("c1", "read", {"f": "a.csv"}),)),
...               ToolMessage("c1", "read", "1,2,3")]))
user: Find the mean.
assistant called read({"f": "a.csv"})
read returned: 1,2,3
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from agentnb.messages import AssistantMessage, Message, SystemMessage, ToolMessage, Usage, UserMessage
from agentnb.providers.base import Request

#: The most characters of one message the summariser reads (its start and end).
MESSAGE_CHARS = 4000


def render(messages: Sequence[Message], most: int = 48_000) -> str:
    """``messages`` as plain text for the summariser, each bounded, the whole at most ``most``
    characters (the newest part kept when it is longer)."""
    lines: list[str] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            if m.content:
                lines.append(f"assistant: {_bounded(m.content)}")
            for c in m.tool_calls:
                args = json.dumps(c.arguments, ensure_ascii=False, default=str) if c.arguments is not None else "?"
                lines.append(f"assistant called {c.name}({_bounded(args)})")
        elif isinstance(m, ToolMessage):
            lines.append(f"{m.name} {'failed' if m.is_error else 'returned'}: {_bounded(m.content)}")
        else:
            lines.append(f"{m.role}: {_bounded(getattr(m, 'content', '') or '')}")
    text = "\n".join(lines)
    return text if len(text) <= most else "…" + text[-(most - 1) :]


def _bounded(text: str) -> str:
    if len(text) <= MESSAGE_CHARS:
        return text
    half = MESSAGE_CHARS // 2
    return f"{text[:half]} […{len(text) - MESSAGE_CHARS:,} characters…] {text[-half:]}"


def summary_request(prompt: str, dropped: Sequence[Message], settings: dict[str, Any], most: int) -> Request:
    """The request that asks for a summary of ``dropped``."""
    body = render(dropped, most)
    return Request((SystemMessage(prompt), UserMessage(body)), (), "none", settings)


async def ask_summary(provider: Any, request: Request, timeout: float) -> tuple[str | None, Usage, str]:
    """``(summary, usage, note)``: the summary (None when there is none) and why not."""
    try:
        done = await asyncio.wait_for(provider.complete(request), timeout)
    except asyncio.TimeoutError:
        return None, Usage(), f"the summariser gave no answer within {timeout:g} s: the drop stands"
    except Exception as exc:  # any failure of the summariser: the cheaper steps stand
        return None, Usage(), f"the summariser failed ({type(exc).__name__}: {str(exc)[:200]}): the drop stands"
    text = (done.text or "").strip()
    if not text:
        return None, done.usage, "the summariser returned nothing: the drop stands"
    return text, done.usage, ""
