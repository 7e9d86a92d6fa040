"""The native track: OpenAI Chat Completions, and every server that speaks it.

:class:`OpenAIProvider` sends our tools as ``tools``, reads tool calls back (several per
turn), streams text and tool-call deltas, and turns HTTP failures into the typed errors of
:mod:`agentnb.errors`. ``base_url`` points it at any OpenAI-compatible server (Ollama, vLLM,
LM Studio, llama.cpp, ``transformers serve``); see ``docs/native.md``.

The ``openai`` SDK is imported here only, when a provider is built, so ``import agentnb``
works without it.

>>> p = OpenAIProvider("qwen2.5", base_url="http://localhost:11434/v1")
>>> p
OpenAIProvider('qwen2.5', base_url='http://localhost:11434/v1')
>>> p.build_request(Request([UserMessage("hi")]))["messages"]
[{'role': 'user', 'content': 'hi'}]
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentnb.errors import (
    AuthenticationError,
    MissingDependencyError,
    ModelNotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    UserError,
)
from agentnb.events import OutputMode
from agentnb.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, Usage, UserMessage
from agentnb.output import FINAL_TOOL, answer_from_final_tool, final_tool_description
from agentnb.providers.base import (
    Chunk,
    Completion,
    CompletionAssembler,
    Provider,
    Request,
    TextChunk,
    ToolCallChunk,
    parse_arguments,
)

__all__ = ["OpenAIProvider"]

#: Local servers ignore the key but the SDK insists on one (vLLM's documented placeholder).
PLACEHOLDER_KEY = "EMPTY"
_create_params: frozenset[str] | None = None
#: Converted messages kept per provider (a few runs' worth); the cache empties when full.
_WIRE_CACHE_SIZE = 4096


class _Secret:
    """Holds the API key so that no repr, ``vars()`` dump or log line can show it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<secret>"

    def redact(self, text: str) -> str:
        # Short strings are no secret worth hiding, and replacing them would garble the text.
        return text.replace(self.value, "***") if len(self.value) >= 8 else text


class OpenAIProvider(Provider):
    """A model behind the OpenAI Chat Completions API (or any server that speaks it).

    Args:
        model: the model name the server knows (``gpt-4o-mini``, ``qwen2.5:7b``, ...).
        api_key: the key; default ``OPENAI_API_KEY``. Without a key and with a ``base_url`` (a
            local server) a placeholder is sent. The key never appears in reprs, events,
            transcripts or error messages.
        base_url: the server's ``/v1`` URL; default ``OPENAI_BASE_URL``, else OpenAI.
        max_retries: retries of rate-limited, 5xx and failed connections, with exponential
            backoff (the SDK's; it honours ``Retry-After``).
        timeout: seconds per request.
        stream_usage: ask for token usage at the end of streams
            (``stream_options={"include_usage": True}``); dropped automatically when a server
            rejects it.
        settings: defaults for every request (``temperature``, ``max_tokens``, ...); a
            request's own settings win. Keys the SDK does not know go in the JSON body as they
            are (e.g. vLLM's ``top_k``).
        output_mode: how a run's ``output_type`` is asked for: ``"response_format"`` (a
            ``json_schema`` response format, strict where the schema allows; the default) or
            ``"tool"`` (a final-answer tool the model calls with the value). A server that
            refuses ``response_format`` is switched to ``"tool"`` once, visibly (an
            :class:`~agentnb.events.OutputMode` event says which, every step).
        api: ``"chat"`` (Chat Completions, the default, what compatible servers speak) or
            ``"responses"`` (OpenAI's Responses API, which reasoning models need to keep their
            reasoning across tool calls; see :mod:`agentnb.providers.openai_responses`).
        client_options: passed to ``openai.AsyncOpenAI`` (``organization``,
            ``default_headers``, ``http_client``, ...).

    >>> OpenAIProvider("m", api_key="sk-secret", base_url="http://127.0.0.1:8000/v1").name
    'm'
    """

    supports_native_tools = True
    supports_streaming = True

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 120.0,
        stream_usage: bool = True,
        settings: dict[str, Any] | None = None,
        output_mode: str = "response_format",
        api: str = "chat",
        **client_options: Any,
    ) -> None:
        _sdk()  # fail now, with the extra to install, rather than at the first call
        if api not in ("chat", "responses"):
            raise UserError(f"api must be 'chat' or 'responses', not {api!r}")
        self.api = api
        if not isinstance(model, str) or not model:
            raise UserError(f"OpenAIProvider needs a model name, got {model!r}")
        self.name = model
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/") or None
        if self.base_url is not None and urlsplit(self.base_url).scheme not in ("http", "https"):
            shown = _without_userinfo(self.base_url)
            raise UserError(f"base_url {shown!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if self.base_url is None:
                raise UserError(
                    "OpenAIProvider needs an API key: set OPENAI_API_KEY or pass api_key=...; "
                    "for a local server pass base_url=... (no key needed)"
                )
            key = PLACEHOLDER_KEY
        self._key = _Secret(key)
        self.max_retries = max_retries
        self.timeout = timeout
        self.stream_usage = stream_usage
        self.settings = dict(settings or {})
        if output_mode not in ("response_format", "tool"):
            raise UserError(f"output_mode must be 'response_format' or 'tool', not {output_mode!r}")
        self.output_mode = output_mode
        self._output_note = ""  # why output_mode changed, for the next OutputMode event
        self._client_options = client_options
        self._client: Any = None
        # Messages are immutable and a run's transcript only grows, so each one is converted
        # once: id -> (message, wire form). Keeping the message alive keeps its id unique.
        self._wire: dict[int, tuple[Message, dict[str, Any]]] = {}
        self._client_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def __repr__(self) -> str:
        api = ", api='responses'" if self.api == "responses" else ""
        if self.base_url is None:
            return f"OpenAIProvider({self.model!r}{api})"
        return f"OpenAIProvider({self.model!r}, base_url={_without_userinfo(self.base_url)!r}{api})"

    async def aclose(self) -> None:
        """Close the HTTP connections of the current client (optional; a new one opens on use)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    # -- the client ---------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client for the running event loop.

        An HTTP connection pool belongs to the event loop that opened it, and ``Agent.run``
        drives each run on a fresh loop outside Jupyter, so a new loop gets a new client.
        """
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._client is None or (self._client_loop is not None and self._client_loop() is not loop):
            sdk = _sdk()
            options = dict(self._client_options)
            # The SDK's own HTTP client schedules its close on whatever loop is running when it
            # is garbage-collected: a client left behind by a finished Agent.run would then fail
            # noisily ("Event loop is closed") inside the next run. The plain one does not.
            options.setdefault("http_client", sdk.DefaultAsyncHttpxClient())
            self._client = sdk.AsyncOpenAI(
                api_key=self._key.value,
                base_url=self.base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
                **options,
            )
            self._client_loop = weakref.ref(loop) if loop is not None else None
        return self._client

    # -- request ------------------------------------------------------------------------

    def build_request(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one request.

        >>> from agentnb import tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> p = OpenAIProvider("m", base_url="http://127.0.0.1:1/v1")
        >>> kw = p.build_request(Request([UserMessage("2+3?")], [add], tool_choice="add"))
        >>> kw["tool_choice"], kw["tools"][0]["function"]["name"]
        ({'type': 'function', 'function': {'name': 'add'}}, 'add')
        """
        kwargs: dict[str, Any] = {"model": self.model, "messages": [self._to_wire(m) for m in request.messages]}
        if request.tools:
            kwargs["tools"] = [t.openai_schema() for t in request.tools]
            choice = request.tool_choice
            if choice in ("required", "none"):
                kwargs["tool_choice"] = choice
            elif choice != "auto":  # "auto" is the API's default: leaving it out suits more servers
                kwargs["tool_choice"] = {"type": "function", "function": {"name": choice}}
        if request.output is not None:
            structured_output(kwargs, request, self.output_mode)
        settings = {**self.settings, **request.settings} if self.settings else request.settings
        if settings:
            known = _known_params()
            extra = {k: v for k, v in settings.items() if k not in known}
            kwargs.update((k, v) for k, v in settings.items() if k in known)
            if extra:
                kwargs["extra_body"] = {**kwargs.get("extra_body", {}), **extra}
        return kwargs

    def _to_wire(self, message: Message) -> dict[str, Any]:
        hit = self._wire.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        if len(self._wire) >= _WIRE_CACHE_SIZE:
            self._wire.clear()
        out = to_openai(message)
        self._wire[id(message)] = (message, out)
        return out

    # -- response -----------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        if self.api == "responses":
            from agentnb.providers import openai_responses

            return await openai_responses.complete(self, request)
        kwargs = self.build_request(request)
        try:
            try:
                response = await self.client.chat.completions.create(**_as_sent(kwargs))
            except _sdk().BadRequestError as exc:
                if not self._refused_output(request, kwargs, exc):
                    raise
                kwargs = self.build_request(request)
                response = await self.client.chat.completions.create(**_as_sent(kwargs))
            failure = None
        except _sdk().OpenAIError as exc:
            failure = self._error(exc)
        except ValueError as exc:  # a 200 whose body is not JSON
            failure = self._garbage(f"a body that is not JSON ({exc})")
        if failure is None:
            try:
                return self._finish_output(request, parse_completion(response))
            except ProviderError as exc:
                failure = self._garbage(str(exc))
            except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
                failure = self._garbage(f"a body that is not a chat completion ({type(exc).__name__}: {exc})")
        # Raised here, outside the except blocks: the SDK's exception (which can hold the key
        # in its request or response) is neither the cause nor the context of ours.
        raise failure

    def _refused_output(self, request: Request, kwargs: dict[str, Any], exc: Exception) -> bool:
        """A server that refuses ``response_format`` gets the final-answer tool from now on."""
        if "response_format" not in kwargs:
            return False
        message = _server_message(exc)
        if not any(word in message.lower() for word in ("response_format", "json_schema", "response format")):
            return False
        self.output_mode = "tool"
        self._output_note = f"the server refused response_format ({message[:120]}); switched to a final-answer tool"
        return True

    def _finish_output(self, request: Request, completion: Completion) -> Completion:
        if request.output is None:
            return completion
        return final_output(completion, request, self.output_mode, self._output_note)

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        if self.api == "responses":
            from agentnb.providers import openai_responses

            async for item in openai_responses.stream(self, request):
                yield item
            return
        kwargs = self.build_request(request)
        kwargs["stream"] = True
        if self.stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        assembler = CompletionAssembler()
        ids: dict[int, tuple[str | None, str]] = {}  # index -> (id, name so far)
        usage = Usage()
        finish: str | None = None
        received = 0
        failure: ProviderError | None = None
        try:
            stream = await self._open_stream(kwargs, request)
            async for chunk in stream:
                received += 1
                if chunk.usage is not None:
                    usage = _usage(chunk.usage)
                for choice in chunk.choices[:1]:
                    finish = choice.finish_reason or finish
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        piece = TextChunk(delta.content)
                        assembler.add(piece)
                        yield piece
                    for tc in delta.tool_calls or ():
                        part = _tool_call_chunk(tc, ids)
                        assembler.add(part)
                        yield part
        except _sdk().OpenAIError as exc:
            failure = self._error(exc, streaming=received > 0)
        except (ValueError, AttributeError, TypeError, KeyError, IndexError) as exc:  # garbage chunks
            failure = self._garbage(f"a stream that is not chat completion chunks ({type(exc).__name__}: {exc})")
        if failure is None and finish is None:
            # No finish_reason: the stream was cut off (or was never one: an HTML page, say).
            what = f"after {received} chunks" if received else "without a single chunk"
            failure = self._garbage(f"a stream that ended {what} and no finish_reason; the answer is incomplete")
        if failure is not None:
            raise failure  # outside the except blocks: no SDK exception (or key) chained to it
        yield self._finish_output(request, assembler.finish(usage, finish))

    def _garbage(self, what: str) -> ProviderError:
        where = self.base_url or "the OpenAI API"
        hint = " (is base_url the server's OpenAI-compatible /v1 URL?)" if self.base_url else ""
        return ProviderError(self._key.redact(f"{where} sent {what}{hint}"))

    async def _open_stream(self, kwargs: dict[str, Any], request: Request | None = None) -> Any:
        sdk = _sdk()
        try:
            return await self.client.chat.completions.create(**_as_sent(kwargs))
        except sdk.BadRequestError as exc:
            if request is not None and self._refused_output(request, kwargs, exc):
                options = {k: kwargs[k] for k in ("stream", "stream_options") if k in kwargs}
                kwargs.clear()
                kwargs.update(self.build_request(request), **options)
                return await self._open_stream(kwargs)
            if "stream_options" not in kwargs or "stream_options" not in _server_message(exc):
                raise
        # This server does not take stream_options: stop asking for usage.
        self.stream_usage = False
        del kwargs["stream_options"]
        return await self.client.chat.completions.create(**_as_sent(kwargs))

    def _error(self, exc: Exception, *, streaming: bool = False) -> ProviderError:
        """A typed agentnb error with the server's own message (and never the key)."""
        error = self._classify(exc, streaming)
        text = self._key.redact(str(error))
        return error if text == str(error) else type(error)(text, status=error.status)

    def _classify(self, exc: Exception, streaming: bool) -> ProviderError:
        sdk = _sdk()
        where = self.base_url or "the OpenAI API"
        message = _server_message(exc)
        if isinstance(exc, sdk.APIStatusError):
            status = exc.status_code
            if status in (401, 403):
                return AuthenticationError(f"{where} rejected the API key ({status}): {message}", status=status)
            if status == 404:
                hint = "check the model name, and that base_url ends in /v1"
                text = f"model {self.model!r} not found at {where} (404): {message} ({hint})"
                return ModelNotFoundError(text, status=status)
            retried = f"after {self.max_retries} retries ({status}): {message}"
            if status == 429:
                return RateLimitError(f"rate limited by {where} {retried}", status=status)
            if status >= 500:
                return ServerError(f"{where} failed {retried}", status=status)
            return ProviderError(f"{where} refused the request ({status}): {message}", status=status)
        if isinstance(exc, sdk.APITimeoutError):
            return ProviderError(f"{where} did not answer within {self.timeout:g} s")
        if isinstance(exc, sdk.APIConnectionError):
            if streaming:  # chunks had arrived
                return ProviderError(f"the connection to {where} broke mid-stream: {_cause(exc)}")
            if _never_connected(exc):
                return ProviderError(f"could not connect to {where} ({_cause(exc)}); is the server running?")
            return ProviderError(f"the connection to {where} broke before the response was complete: {_cause(exc)}")
        return ProviderError(f"{where}: {message}")


# -- structured output --------------------------------------------------------------------


def structured_output(kwargs: dict[str, Any], request: Request, mode: str) -> None:
    """Ask for ``request.output`` in ``kwargs``: a json_schema response format, or a final-answer tool."""
    output = request.output
    assert output is not None
    schema = output.strict if output.strict is not None else output.wire_schema
    if mode == "response_format":
        spec = {"name": output.api_name, "schema": schema, "strict": output.strict is not None}
        kwargs["response_format"] = {"type": "json_schema", "json_schema": spec}
        return
    function: dict[str, Any] = {"name": FINAL_TOOL, "description": final_tool_description(output), "parameters": schema}
    if output.strict is not None:
        function["strict"] = True
    kwargs["tools"] = [*kwargs.get("tools", ()), {"type": "function", "function": function}]
    # The answer must come through the tool: a call is required (the named one when no other
    # tool is on offer, e.g. at the tool-call limit).
    if not request.tools or request.tool_choice == "none":
        kwargs["tool_choice"] = {"type": "function", "function": {"name": FINAL_TOOL}}
    elif request.tool_choice == "auto":
        kwargs["tool_choice"] = "required"


def final_output(completion: Completion, request: Request, mode: str, note: str = "") -> Completion:
    """The completion with a final-answer tool call turned into the answer text, and an OutputMode event."""
    output = request.output
    assert output is not None
    strict = "strict" if output.strict is not None else "not strict: the schema has optional or free-form parts"
    if mode == "response_format":
        event = OutputMode(0, "response_format", f"json_schema {output.name}, {strict}")
    else:
        event = OutputMode(0, "tool", f"{FINAL_TOOL}({output.name}), {strict}" + (f"; {note}" if note else ""))
    return answer_from_final_tool(completion, event)


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
    """A :class:`Completion` from a ``ChatCompletion`` (first choice)."""
    if isinstance(response, (str, bytes)):  # the SDK hands back a body that is not JSON as text
        preview = response[:60] if isinstance(response, str) else response[:60].decode("utf-8", "replace")
        raise ProviderError(f"a body that is not a chat completion: {preview!r}")
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


# -- helpers ------------------------------------------------------------------------------


def _sdk() -> Any:
    try:
        import openai
    except ImportError:
        raise MissingDependencyError("OpenAIProvider", "openai") from None
    return openai


def _as_sent(kwargs: dict[str, Any]) -> dict[str, Any]:
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


def _known_params() -> frozenset[str]:
    global _create_params
    if _create_params is None:
        import inspect

        from openai.resources.chat.completions import AsyncCompletions

        names = set(inspect.signature(AsyncCompletions.create).parameters) - {"self"}
        _create_params = frozenset(names)
    return _create_params


def _server_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    if isinstance(body, str) and body.strip():
        return body.strip()
    return str(getattr(exc, "message", None) or exc)


def _never_connected(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) is a failure to connect, not a broken response."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ in (
            "ConnectError",
            "ConnectTimeout",
            "ConnectionRefusedError",
            "gaierror",
            "UnsupportedProtocol",
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return f"{type(inner).__name__}: {inner}" if inner is not None else str(exc)


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
