"""The native track, second API: Anthropic's Messages API (``anthropic:MODEL``).

:class:`AnthropicProvider` sends our tools as ``tools``, reads ``tool_use`` blocks back
(several per turn), returns tool results as ``tool_result`` blocks (a tool's images inside
them), streams ``text_delta`` and ``input_json_delta`` events into our chunks, and turns HTTP
failures into the typed errors of :mod:`agentnb.errors` with the key redacted.

The ``anthropic`` SDK is imported only when a provider is built.

>>> p = AnthropicProvider("claude-sonnet-4-5", api_key="sk-ant-example-key")
>>> p
AnthropicProvider('claude-sonnet-4-5')
>>> p.build_request(Request([SystemMessage("Be brief."), UserMessage("hi")]))["system"]
'Be brief.'
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from agentnb.errors import (
    AuthenticationError,
    MissingDependencyError,
    ModelNotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    UserError,
)
from agentnb.messages import SystemMessage, Usage, UserMessage  # noqa: F401 (the doctests use the messages)
from agentnb.output import FINAL_TOOL, answer_from_final_tool, final_tool_description
from agentnb.providers import retry
from agentnb.providers.anthropic_wire import _THINKING, _grow_thinking, _input_tokens, parse_message, to_anthropic
from agentnb.providers.base import Chunk, Completion, CompletionAssembler, Provider, Request, TextChunk, ToolCallChunk
from agentnb.providers.openai.errors import _cause, _Secret, _server_message, _without_userinfo
from agentnb.providers.sdk_client import LoopBoundClient, option_secrets, sdk_options

__all__ = ["AnthropicProvider", "parse_message", "to_anthropic"]

#: ``max_tokens`` is required by the API; this is sent unless settings say otherwise.
DEFAULT_MAX_TOKENS = 4096


class AnthropicProvider(Provider):
    """A Claude model behind the Anthropic Messages API (or a gateway that speaks it).

    Args:
        model: the model name (``claude-sonnet-4-5``, ...).
        api_key: the key; default ``ANTHROPIC_API_KEY``. It never appears in reprs, events,
            transcripts or error messages.
        base_url: a compatible gateway's URL (default ``ANTHROPIC_BASE_URL``, else Anthropic).
        max_tokens: the reply's token limit (the API requires one); a request's
            ``settings["max_tokens"]`` wins.
        max_retries: retries of 429, 5xx / overloaded and failed connections (the SDK's
            backoff, honouring ``retry-after``).
        timeout: seconds per request.
        settings: defaults for every request (``temperature``, ``thinking``, ...).
        client_options: passed to ``anthropic.AsyncAnthropic`` (``default_headers``, ...).

    Tool choice maps ``auto`` -> ``auto``, ``required`` -> ``any``, a name -> ``tool``,
    ``none`` -> ``none``. Extended-thinking blocks are kept on the assistant message and sent
    back with its tool calls, as the API requires; they are never shown as text.
    """

    price_provider = "anthropic"  # agentnb.control.cost

    supports_native_tools = True
    supports_streaming = True
    reply_limit_setting = "max_tokens"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_retries: int = 2,
        timeout: float = 120.0,
        settings: dict[str, Any] | None = None,
        **client_options: Any,
    ) -> None:
        _sdk()
        if not isinstance(model, str) or not model:
            raise UserError(f"AnthropicProvider needs a model name, got {model!r}")
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise UserError("AnthropicProvider needs an API key: set ANTHROPIC_API_KEY or pass api_key=...")
        self.name = self.model = model
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or "").rstrip("/") or None
        self._key = _Secret(key, base_url=self.base_url, **option_secrets(client_options))
        self.max_tokens = max_tokens
        self.max_retries = max_retries
        self.timeout = timeout
        self.settings = dict(settings or {})
        self._client_options = client_options
        self._clients = LoopBoundClient(self._make_client)

    def __repr__(self) -> str:
        if self.base_url is None:
            return f"AnthropicProvider({self.model!r})"
        return f"AnthropicProvider({self.model!r}, base_url={_without_userinfo(self.base_url)!r})"

    async def aclose(self) -> None:
        """Close the HTTP connections of the current client (optional; a new one opens on use)."""
        await self._clients.aclose()

    @property
    def client(self) -> Any:
        """The ``anthropic.AsyncAnthropic`` client for the running event loop (one per loop)."""
        return self._clients.get()

    def _make_client(self) -> Any:
        sdk = _sdk()
        return sdk.AsyncAnthropic(
            api_key=self._key.value,
            base_url=self.base_url,
            max_retries=0,  # retries are agentnb.providers.retry's, never the SDK's too
            timeout=self.timeout,
            **sdk_options(sdk, self._client_options),
        )

    # -- request ------------------------------------------------------------------------

    def build_request(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` for one request.

        >>> from agentnb import tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> p = AnthropicProvider("m", api_key="k" * 12)
        >>> kw = p.build_request(Request([UserMessage("2+3?")], [add], tool_choice="required"))
        >>> kw["tool_choice"], kw["tools"][0]["input_schema"]["required"]
        ({'type': 'any'}, ['a', 'b'])
        """
        # Without tools on offer (the loop's last, text-only call) earlier tool blocks are
        # sent as text: the API wants tool definitions for any tool_use in the history.
        system, messages = to_anthropic(request.messages, tool_blocks=bool(request.tools))
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": messages}
        if system:
            kwargs["system"] = system
        if request.tools:
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
            ]
            choice = request.tool_choice
            if choice == "required":
                kwargs["tool_choice"] = {"type": "any"}
            elif choice == "none":
                kwargs["tool_choice"] = {"type": "none"}
            elif choice != "auto":
                kwargs["tool_choice"] = {"type": "tool", "name": choice}
        if request.output is not None:  # structured output: a final-answer tool (Anthropic's way)
            output = request.output
            final = {
                "name": FINAL_TOOL,
                "description": final_tool_description(output),
                "input_schema": output.wire_schema,
            }
            kwargs["tools"] = [*kwargs.get("tools", ()), final]
            if not request.tools or request.tool_choice == "none":
                kwargs["tool_choice"] = {"type": "tool", "name": FINAL_TOOL}
            elif request.tool_choice == "auto":
                kwargs["tool_choice"] = {"type": "any"}
        settings = {**self.settings, **request.settings}
        if settings:
            known = _known_params()
            kwargs.update((k, v) for k, v in settings.items() if k in known)
            extra = {k: v for k, v in settings.items() if k not in known}
            if extra:
                kwargs["extra_body"] = extra
        return kwargs

    # -- response -----------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        kwargs = self.build_request(request)
        notes: list[Any] = []
        try:
            message = await retry.send(self, lambda: self.client.messages.create(**kwargs), notes)
        except _sdk().AnthropicError as exc:
            raise self._error(exc) from None
        return retry.with_events(_final_answer(request, parse_message(message)), notes)

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        kwargs = self.build_request(request)
        assembler = CompletionAssembler()
        blocks: dict[int, dict[str, Any]] = {}  # index -> thinking block being assembled
        usage_in = usage_out = 0
        stop: str | None = None
        received = 0
        notes: list[Any] = []
        try:
            stream = await retry.send(self, lambda: self.client.messages.create(stream=True, **kwargs), notes)
            async for event in stream:
                received += 1
                kind = event.type
                if kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        piece: Chunk = TextChunk(delta.text)
                    elif delta.type == "input_json_delta":
                        piece = ToolCallChunk(event.index, arguments=delta.partial_json)
                    else:  # thinking_delta / signature_delta: kept, never shown
                        _grow_thinking(blocks.get(event.index), delta)
                        continue
                    assembler.add(piece)
                    yield piece
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        piece = ToolCallChunk(event.index, block.id, block.name)
                        assembler.add(piece)
                        yield piece
                    elif block.type in _THINKING:
                        blocks[event.index] = block.model_dump(exclude_none=True)
                elif kind == "message_start":
                    usage_in = _input_tokens(event.message.usage)
                    usage_out = event.message.usage.output_tokens or 0
                elif kind == "message_delta":
                    stop = event.delta.stop_reason or stop
                    usage_out = event.usage.output_tokens or usage_out
        except _sdk().AnthropicError as exc:
            raise self._error(exc, streaming=True) from None
        if stop is None:  # no message_delta with a stop_reason: cut off (or never a Messages stream)
            where = self.base_url or "the Anthropic API"
            what = f"after {received} events" if received else "without a single event"
            raise ProviderError(f"{where} sent a stream that ended {what} and no stop_reason; the answer is incomplete")
        reasoning = tuple(blocks[i] for i in sorted(blocks))
        done = assembler.finish(Usage(usage_in, usage_out), stop)
        final = Completion(done.text, done.tool_calls, done.usage, stop, reasoning=reasoning)
        yield retry.with_events(_final_answer(request, final), notes)

    def _error(self, exc: Exception, *, streaming: bool = False) -> ProviderError:
        """A typed agentnb error with the server's own message (and never the key)."""
        error = self._classify(exc, streaming)
        return retry.carry(exc, type(error)(self._key.redact(str(error)), status=error.status))

    def _classify(self, exc: Exception, streaming: bool) -> ProviderError:
        sdk = _sdk()
        where = self.base_url or "the Anthropic API"
        message = _server_message(exc)
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            body = exc.body if isinstance(exc.body, dict) else {}
            kind = (body.get("error") or {}).get("type") if isinstance(body.get("error"), dict) else None
            if status in (401, 403) or kind in ("authentication_error", "permission_error"):
                return AuthenticationError(f"{where} rejected the API key ({status}): {message}", status=status)
            if status == 404 or kind == "not_found_error":
                return ModelNotFoundError(
                    f"model {self.model!r} not found at {where} ({status}): {message}", status=status
                )
            retried = f"after {self.max_retries} retries ({status}): {message}"
            if status == 429 or kind == "rate_limit_error":
                return RateLimitError(f"rate limited by {where} {retried}", status=status)
            if status >= 500 or kind in ("overloaded_error", "api_error"):
                if streaming and status < 400:  # an error event inside a 200 stream
                    return ServerError(f"{where} failed mid-stream ({kind}): {message}", status=status)
                return ServerError(f"{where} failed {retried}", status=status)
            return ProviderError(f"{where} refused the request ({status}): {message}", status=status)
        if isinstance(exc, sdk.APITimeoutError):
            return ProviderError(f"{where} did not answer within {self.timeout:g} s")
        if isinstance(exc, sdk.APIConnectionError):
            if streaming:
                return ProviderError(f"the connection to {where} broke mid-stream: {_cause(exc)}")
            return ProviderError(f"could not connect to {where} ({_cause(exc)}); is the server running?")
        return ProviderError(f"{where}: {message}")


_create_params: frozenset[str] | None = None


def _known_params() -> frozenset[str]:
    global _create_params
    if _create_params is None:
        import inspect

        from anthropic.resources.messages import AsyncMessages

        _create_params = frozenset(inspect.signature(AsyncMessages.create).parameters) - {"self"}
    return _create_params


def _sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise MissingDependencyError("AnthropicProvider", "anthropic") from None
    return anthropic


def _final_answer(request: Request, completion: Completion) -> Completion:
    """A final-answer tool call (structured output) becomes the answer text."""
    if request.output is None:
        return completion
    from agentnb.events import OutputMode

    event = OutputMode(0, "tool", f"{FINAL_TOOL}({request.output.name}) tool_use")
    return answer_from_final_tool(completion, event)  # type: ignore[no-any-return]
