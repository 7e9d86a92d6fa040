"""The Anthropic Messages API's wire form for :class:`~agentnb.providers.anthropic.AnthropicProvider`:
our messages as its ``system`` text and alternating turns of blocks (:func:`to_anthropic`), and
its replies back as a :class:`~agentnb.providers.base.Completion` (:func:`parse_message`, and the
pieces a stream is read with).

>>> to_anthropic([SystemMessage("Be brief."), UserMessage("hi"), UserMessage("there")])
('Be brief.', [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}, {'type': 'text', 'text': 'there'}]}])
"""

from __future__ import annotations

import json
from typing import Any

from agentnb.messages import AssistantMessage, Image, SystemMessage, ToolMessage, Usage, UserMessage
from agentnb.providers.base import Completion

__all__ = ["parse_message", "to_anthropic"]

#: The loop's note before tool images; those images go into the tool_result blocks instead.
_ATTACHMENT_NOTE = "[Attached image(s) from tool result]"
_THINKING = ("thinking", "redacted_thinking")


# -- messages out -------------------------------------------------------------------------


def to_anthropic(messages: Any, *, tool_blocks: bool = True) -> tuple[str, list[dict[str, Any]]]:
    """Our messages as Anthropic's ``system`` text and ``messages`` list.

    System messages join the ``system`` text. Tool results become ``tool_result`` blocks in
    one user turn, and the images the loop attaches after them go inside the tool result
    (with several results: after them, in the same turn). Consecutive turns of one role
    are merged, as the API wants them alternating.

    >>> from agentnb.messages import ToolCall
    >>> system, out = to_anthropic([UserMessage("hi"), AssistantMessage(None, (ToolCall("t1", "f", {}),)),
    ...                             ToolMessage("t1", "f", "ok")])
    >>> out[2]
    {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 't1', 'content': 'ok'}]}
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"] += blocks
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if isinstance(m, SystemMessage):
            system.append(m.content)
        elif isinstance(m, UserMessage):
            results = (
                [b for b in out[-1]["content"] if b["type"] == "tool_result"]
                if out and out[-1]["role"] == "user"
                else []
            )
            if m.content == _ATTACHMENT_NOTE and m.images and len(results) == 1 and tool_blocks:
                first = results[0]
                first["content"] = [{"type": "text", "text": first["content"]}, *map(_image, m.images)]
                continue
            blocks = [_image(i) for i in m.images]
            add("user", [*blocks, {"type": "text", "text": m.content}] if m.content or not blocks else blocks)
        elif isinstance(m, AssistantMessage):
            blocks = [dict(r) for r in m.reasoning if r.get("type") in _THINKING] if tool_blocks else []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for c in m.tool_calls:
                if tool_blocks:
                    blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}})
                else:
                    args = c.raw_arguments if c.arguments is None else json.dumps(c.arguments, ensure_ascii=False)
                    blocks.append({"type": "text", "text": f"[called {c.name} with {args}]"})
            add("assistant", blocks or [{"type": "text", "text": "(no reply)"}])
        elif isinstance(m, ToolMessage):
            if tool_blocks:
                block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}
                if m.is_error:
                    block["is_error"] = True
            else:
                block = {"type": "text", "text": f"[result of {m.name}: {m.content}]"}
            add("user", [block])
        else:
            raise TypeError(f"cannot send {type(m).__name__} to the Anthropic API")
    for turn in out:  # a lone text block is sent as a plain string
        blocks = turn["content"]
        if len(blocks) == 1 and blocks[0]["type"] == "text":
            turn["content"] = blocks[0]["text"]
    return "\n\n".join(system), out


def _image(image: Image) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.mime, "data": image.b64}}


# -- responses in -------------------------------------------------------------------------


def parse_message(message: Any) -> Completion:
    """A :class:`Completion` from a ``Message``: its text, tool_use blocks and thinking blocks."""
    from agentnb.providers.base import parse_arguments

    text: list[str] = []
    calls = []
    reasoning = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            calls.append(parse_arguments(block.id, block.name, json.dumps(block.input)))
        elif block.type in _THINKING:
            reasoning.append(block.model_dump(exclude_none=True))
    usage = Usage(_input_tokens(message.usage), message.usage.output_tokens or 0)
    return Completion("".join(text) or None, tuple(calls), usage, message.stop_reason, reasoning=tuple(reasoning))


def _grow_thinking(block: dict[str, Any] | None, delta: Any) -> None:
    if block is None:
        return
    if delta.type == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta.thinking
    elif delta.type == "signature_delta":
        block["signature"] = delta.signature


def _input_tokens(u: Any) -> int:
    # Cached prompt tokens are reported apart from input_tokens; all of them were read.
    return int((u.input_tokens or 0) + (getattr(u, "cache_read_input_tokens", 0) or 0)) + int(
        getattr(u, "cache_creation_input_tokens", 0) or 0
    )
