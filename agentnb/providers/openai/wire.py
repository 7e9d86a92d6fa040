"""The wire format of Chat Completions: our messages out, the server's replies in.

Pure conversions, no HTTP: :mod:`agentnb.providers.openai` sends what these build.

>>> to_openai(UserMessage("hi"))
{'role': 'user', 'content': 'hi'}
"""

from __future__ import annotations

import json
from typing import Any

from agentnb.errors import ProviderError
from agentnb.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentnb.providers.base import Completion, ToolCallChunk, parse_arguments

__all__ = ["as_posted", "as_sent", "known_params", "parse_completion", "to_openai"]

_create_params: frozenset[str] | None = None


# -- messages out -------------------------------------------------------------------------


def to_openai(message: Message) -> dict[str, Any]:
    """One message in Chat Completions form.

    >>> to_openai(ToolMessage("call_1", "add", "5"))
    {'role': 'tool', 'tool_call_id': 'call_1', 'content': '5'}
    """
    if isinstance(message, UserMessage):
        if not message.images:
            return {"role": "user", "content": message.content}
        parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
        parts += [{"type": "image_url", "image_url": {"url": i.data_url}} for i in message.images]
        return {"role": "user", "content": parts}
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [_call_out(c) for c in message.tool_calls]
        return out
    if isinstance(message, ToolMessage):
        # An error result goes as it is: its text already tells the model what went wrong.
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    raise TypeError(f"cannot send {type(message).__name__} to an OpenAI-compatible server")


def _call_out(call: ToolCall) -> dict[str, Any]:
    # Arguments that were not valid JSON go back verbatim, so the model sees what it wrote.
    raw = call.raw_arguments or ""
    arguments = raw if call.arguments is None else json.dumps(call.arguments, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


# -- responses in -------------------------------------------------------------------------


def parse_completion(response: Any) -> Completion:
    """A :class:`Completion` from a chat completion (first choice): the body's bytes as the
    server sent them, its JSON as a dict, or the SDK's ``ChatCompletion``.

    >>> body = b'{"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}'
    >>> c = parse_completion(body)
    >>> c.text, c.usage.input_tokens, c.finish_reason
    ('hi', 3, 'stop')
    """
    if isinstance(response, (bytes, bytearray)):
        try:
            response = json.loads(response)
        except ValueError:
            response = response.decode("utf-8", "replace")
    if isinstance(response, str):  # a body that is not JSON
        raise ProviderError(f"a body that is not a chat completion: {response[:60]!r}")
    if isinstance(response, dict):
        return _from_json(response)
    usage = _usage(response.usage) if response.usage is not None else Usage()
    if not response.choices:
        raise ProviderError("a response with no choices")
    choice = response.choices[0]
    message = choice.message
    calls = tuple(
        parse_arguments(tc.id, tc.function.name, tc.function.arguments)
        for tc in message.tool_calls or ()
        if getattr(tc, "function", None) is not None
    )
    return Completion(message.content or None, calls, usage, choice.finish_reason)


def _from_json(body: dict[str, Any]) -> Completion:
    """:func:`parse_completion` of the JSON body itself (no SDK model built: ~0.1 ms a call)."""
    u = body.get("usage")
    usage = Usage(u.get("prompt_tokens") or 0, u.get("completion_tokens") or 0) if isinstance(u, dict) else Usage()
    choices = body.get("choices")
    if not choices:
        raise ProviderError("a response with no choices")
    choice = choices[0]
    message = choice["message"]
    calls = tuple(
        parse_arguments(tc.get("id"), fn.get("name") or "", fn.get("arguments"))
        for tc in message.get("tool_calls") or ()
        if isinstance(fn := tc.get("function"), dict)
    )
    return Completion(message.get("content") or None, calls, usage, choice.get("finish_reason"))


def _tool_call_chunk(tc: Any, ids: dict[int, tuple[str | None, str]]) -> ToolCallChunk:
    fn = tc.function
    name = fn.name if fn is not None else None
    seen_id, seen_name = ids.get(tc.index, (None, ""))
    # Some servers repeat the id and whole name in every delta; OpenAI sends them once and
    # others split the name. A repeat of both is not a new fragment.
    if name and tc.id and tc.id == seen_id and name == seen_name:
        name = None
    ids[tc.index] = (tc.id or seen_id, seen_name + (name or ""))
    return ToolCallChunk(tc.index, tc.id, name, (fn.arguments or "") if fn is not None else "")


def _usage(u: Any) -> Usage:
    return Usage(u.prompt_tokens or 0, u.completion_tokens or 0)


# -- sending ------------------------------------------------------------------------------


def as_sent(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``create()`` arguments with the messages and tools moved into ``extra_body``.

    The SDK re-walks every message against its TypedDicts on each call (about 140 us per
    message measured here: 14 ms per request for a 100-message transcript, see
    benchmarks/openai_overhead.py). Ours are already wire-ready JSON, and ``extra_body`` is sent
    as it is, overriding the empty placeholder list; the bytes on the wire are the same.
    """
    heavy = {k: kwargs[k] for k in ("messages", "tools") if k in kwargs}
    out = {k: v for k, v in kwargs.items() if k != "tools"}
    out["messages"] = []
    out["extra_body"] = {**kwargs.get("extra_body", {}), **heavy}
    return out


#: ``create()`` arguments that are request options of the SDK, not body fields.
_OPTIONS = {"extra_headers": "headers", "extra_query": "params", "timeout": "timeout"}


def as_posted(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``create()`` arguments as ``client.post``'s JSON body and request options.

    A non-streamed request goes out through the SDK's ``post`` (its auth, headers, errors and
    timeouts), or on the request it prepared for the first one (:mod:`.posting`), and comes back
    as the body's bytes: the SDK's own request transform and its ``ChatCompletion`` model are
    skipped (0.3 ms of client CPU a call measured here, benchmarks/eval_throughput.py);
    :func:`parse_completion` reads the JSON.

    >>> as_posted({"model": "m", "messages": [], "extra_body": {"top_k": 5}, "timeout": 3})
    ({'model': 'm', 'messages': [], 'top_k': 5}, {'timeout': 3})
    """
    body = {k: v for k, v in kwargs.items() if k not in _OPTIONS and k != "extra_body"}
    body.update(kwargs.get("extra_body") or {})
    options = {_OPTIONS[k]: kwargs[k] for k in _OPTIONS if kwargs.get(k) is not None}
    return body, options


def known_params() -> frozenset[str]:
    global _create_params
    if _create_params is None:
        import inspect

        from openai.resources.chat.completions import AsyncCompletions

        names = set(inspect.signature(AsyncCompletions.create).parameters) - {"self"}
        _create_params = frozenset(names)
    return _create_params
