"""The OpenAI provider's second route: the Responses API (``api="responses"``).

OpenAI's reasoning models keep their reasoning across tool calls only through this API:
each reply's ``reasoning`` items are stored (opaque) on the assistant message and sent back
in front of its ``function_call`` items on the next step, and they survive a saved and
reloaded transcript. Their text is never shown; a summary, where the API gives one, becomes a
:class:`~agentnb.events.ReasoningSummary` event.

Request building and parsing live here; the client, key, retries and error mapping are
:class:`~agentnb.providers.openai.OpenAIProvider`'s.

>>> from agentnb.providers.openai import responses_provider
>>> p = responses_provider("o4-mini", api_key="sk-example-key-000")
>>> p.api, build_request(p, Request([UserMessage("hi")]))["input"]
('responses', [{'role': 'user', 'content': 'hi'}])
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any, Protocol

from agentnb.events import ReasoningSummary
from agentnb.messages import AssistantMessage, Message, SystemMessage, ToolMessage, Usage, UserMessage
from agentnb.providers.base import (
    Chunk,
    Completion,
    Request,
    TextChunk,
    ToolCallChunk,
    parse_arguments,
)
from agentnb.providers.openai.sdk import _sdk

__all__ = ["build_request", "complete", "stream"]

_create_params: frozenset[str] | None = None


class OpenAIProvider(Protocol):
    """What this route reads of :class:`~agentnb.providers.openai.OpenAIProvider` (its client,
    settings and error mapping); a protocol, so this module does not import the provider."""

    model: str
    settings: dict[str, Any]
    base_url: str | None
    _key: Any

    @property
    def client(self) -> Any: ...

    def _error(self, exc: Exception, *, streaming: bool = False) -> Exception: ...


def build_request(provider: OpenAIProvider, request: Request) -> dict[str, Any]:
    """The keyword arguments of ``responses.create`` for one request.

    >>> from agentnb import tool
    >>> from agentnb.providers.openai import responses_provider
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> p = responses_provider("m", base_url="http://127.0.0.1:1/v1")
    >>> kw = build_request(p, Request([UserMessage("2+3?")], [add], tool_choice="add"))
    >>> kw["tool_choice"], kw["tools"][0]["name"]
    ({'type': 'function', 'name': 'add'}, 'add')
    """
    kwargs: dict[str, Any] = {"model": provider.model, "input": to_input(request.messages)}
    if request.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in request.tools
        ]
        choice = request.tool_choice
        if choice in ("required", "none"):
            kwargs["tool_choice"] = choice
        elif choice != "auto":
            kwargs["tool_choice"] = {"type": "function", "name": choice}
    output = request.output
    if output is not None:  # structured output: the Responses API's json_schema text format
        strict = output.strict is not None
        schema = output.strict if strict else output.wire_schema
        kwargs["text"] = {
            "format": {"type": "json_schema", "name": output.api_name, "schema": schema, "strict": strict}
        }
    settings = {**provider.settings, **request.settings}
    if "max_tokens" in settings:  # the Chat Completions name, as users write it
        settings["max_output_tokens"] = settings.pop("max_tokens")
    if settings:
        known = _known_params()
        kwargs.update((k, v) for k, v in settings.items() if k in known)
        extra = {k: v for k, v in settings.items() if k not in known}
        if extra:
            kwargs["extra_body"] = extra
    return kwargs


def to_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our messages as Responses ``input`` items.

    >>> from agentnb.messages import ToolCall
    >>> to_input([AssistantMessage(None, (ToolCall("c1", "f", {"x": 1}),)), ToolMessage("c1", "f", "ok")])
    [{'type': 'function_call', 'call_id': 'c1', 'name': 'f', 'arguments': '{"x": 1}'}, \
{'type': 'function_call_output', 'call_id': 'c1', 'output': 'ok'}]
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            if not m.images:
                out.append({"role": "user", "content": m.content})
            else:
                parts: list[dict[str, Any]] = [{"type": "input_text", "text": m.content}]
                parts += [{"type": "input_image", "image_url": i.data_url} for i in m.images]
                out.append({"role": "user", "content": parts})
        elif isinstance(m, AssistantMessage):
            # Reasoning goes back first, in front of the calls it led to.
            out += [dict(r) for r in m.reasoning if r.get("type") == "reasoning"]
            if m.content:
                out.append({"role": "assistant", "content": m.content})
            for c in m.tool_calls:
                args = (c.raw_arguments or "") if c.arguments is None else json.dumps(c.arguments, ensure_ascii=False)
                out.append({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": args})
        elif isinstance(m, ToolMessage):
            out.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content})
        elif isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        else:
            raise TypeError(f"cannot send {type(m).__name__} to the Responses API")
    return out


async def complete(provider: OpenAIProvider, request: Request) -> Completion:
    kwargs = build_request(provider, request)
    try:
        response = await provider.client.responses.create(**kwargs)
    except _sdk().OpenAIError as exc:
        raise provider._error(exc) from None
    return _with_output_mode(request, parse_response(response))


def _with_output_mode(request: Request, completion: Completion) -> Completion:
    if request.output is None:
        return completion
    from dataclasses import replace

    from agentnb.events import OutputMode

    strict = "strict" if request.output.strict is not None else "not strict"
    event = OutputMode(0, "response_format", f"Responses text.format json_schema {request.output.name}, {strict}")
    return replace(completion, events=(*completion.events, event))


async def stream(provider: OpenAIProvider, request: Request) -> AsyncIterator[Chunk | Completion]:
    kwargs = build_request(provider, request)
    final: Any = None
    try:
        events = await provider.client.responses.create(stream=True, **kwargs)
        async for event in events:
            kind = event.type
            if kind == "response.output_text.delta":
                piece: Chunk = TextChunk(event.delta)
            elif kind == "response.function_call_arguments.delta":
                piece = ToolCallChunk(event.output_index, arguments=event.delta)
            elif kind == "response.output_item.added" and event.item.type == "function_call":
                piece = ToolCallChunk(
                    event.output_index, event.item.call_id, event.item.name, event.item.arguments or ""
                )
            elif kind in ("response.completed", "response.incomplete"):
                final = event.response
                continue
            elif kind == "response.failed":
                raise _failed(provider, event.response)
            elif kind == "error":
                raise _failed(provider, event)
            else:
                continue
            yield piece
    except _sdk().OpenAIError as exc:
        raise provider._error(exc, streaming=True) from None
    if final is None:
        from agentnb.errors import ProviderError

        raise ProviderError("the Responses stream ended without a completed response")
    # The completed response holds every item whole: it is the source of truth; the chunks
    # above were for showing progress.
    yield _with_output_mode(request, parse_response(final))


def parse_response(response: Any) -> Completion:
    """A :class:`Completion` from a ``Response``: text, function calls, reasoning items."""
    text: list[str] = []
    calls = []
    reasoning: list[dict[str, Any]] = []
    summaries: list[str] = []
    for item in response.output or ():
        kind = item.type
        if kind == "message":
            text += [part.text for part in item.content if part.type == "output_text"]
        elif kind == "function_call":
            calls.append(parse_arguments(item.call_id, item.name, item.arguments))
        elif kind == "reasoning":
            kept = item.model_dump(exclude_none=True)
            kept.pop("status", None)  # output-only field the API refuses as input
            reasoning.append(kept)
            summaries += [s.text for s in item.summary or () if getattr(s, "text", None)]
    u = response.usage
    usage = Usage(u.input_tokens or 0, u.output_tokens or 0) if u is not None else Usage()
    finish = "tool_calls" if calls else response.status
    if response.status == "incomplete" and response.incomplete_details is not None:
        finish = f"incomplete: {response.incomplete_details.reason}"
    events = (ReasoningSummary(0, "\n\n".join(summaries)),) if summaries else ()
    return Completion("".join(text) or None, tuple(calls), usage, finish, events, tuple(reasoning))


def _failed(provider: OpenAIProvider, response: Any) -> Exception:
    from agentnb.errors import ServerError

    where = provider.base_url or "the OpenAI API"
    err = getattr(response, "error", None) or response  # a failed response, or an error event
    message = getattr(err, "message", None) or "no reason given"
    return ServerError(provider._key.redact(f"{where} failed the response: {message}"))


def _known_params() -> frozenset[str]:
    global _create_params
    if _create_params is None:
        import inspect

        from openai.resources.responses import AsyncResponses

        _create_params = frozenset(inspect.signature(AsyncResponses.create).parameters) - {"self"}
    return _create_params
