"""The JSON bodies :class:`~agentnb.testing.server.ScriptedServer` answers with: a chat
completion, or the chunks of a streamed one, from a scripted
:class:`~agentnb.testing.server.Reply`.

>>> from agentnb.testing.server import Reply
>>> completion_body(Reply(text="hi"), "wire")["choices"][0]["message"]
{'role': 'assistant', 'content': 'hi'}
"""

from __future__ import annotations

from typing import Any


def completion_body(reply: Any, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in reply.tool_calls
        ]
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    body: dict[str, Any] = {
        "id": "chatcmpl-wire",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
    }
    if reply.usage is not None:
        body["usage"] = _usage(reply.usage)
    return body


def stream_chunks(reply: Any, model: str, include_usage: bool) -> list[dict[str, Any]]:
    """The chunk bodies of a streamed reply, in order (without the final ``[DONE]``)."""
    if reply.chunks is not None:
        return reply.chunks

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-wire",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": piece}) for piece in _cut(reply.text or "", reply.pieces) if piece]
    per_call = []
    for i, c in enumerate(reply.tool_calls):
        names = _cut(c["name"], 2) if reply.split_names else [c["name"]]
        args = _cut(c["arguments"], reply.pieces)
        frags: list[dict[str, Any]] = [
            {"index": i, "id": c["id"], "type": "function", "function": {"name": names[0], "arguments": ""}}
        ]
        frags += [{"index": i, "function": {"name": n}} for n in names[1:]]
        frags += [{"index": i, "function": {"arguments": a}} for a in args if a]
        per_call.append(frags)
    if reply.interleave:
        ordered = [f for row in _zip_longest(per_call) for f in row]
    else:
        ordered = [f for frags in per_call for f in frags]
    out += [chunk({"tool_calls": [f]}) for f in ordered]
    out.append(chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")))
    if include_usage and reply.usage is not None:
        out.append({**chunk({}), "choices": [], "usage": _usage(reply.usage)})
    return out


def _usage(u: tuple[int, int]) -> dict[str, int]:
    return {"prompt_tokens": u[0], "completion_tokens": u[1], "total_tokens": u[0] + u[1]}


def _cut(s: str, pieces: int) -> list[str]:
    size = max(1, -(-len(s) // max(1, pieces)))
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


def _zip_longest(rows: list[list[Any]]) -> list[list[Any]]:
    width = max((len(r) for r in rows), default=0)
    return [[r[k] for r in rows if k < len(r)] for k in range(width)]
