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

import dataclasses
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

from agentnb.errors import ProviderError, UserError
from agentnb.messages import Message, Usage, UserMessage  # noqa: F401 (the doctests use UserMessage)
from agentnb.providers import aiohttp_transport
from agentnb.providers.base import Chunk, Completion, Provider, Request, TextChunk
from agentnb.providers.openai import ignored as openai_ignored
from agentnb.providers.openai import text_calls
from agentnb.providers.openai.errors import _Secret, _without_userinfo
from agentnb.providers.openai.failures import FailureReporting
from agentnb.providers.openai.guided import GuidedSending
from agentnb.providers.openai.output import StructuredOutput, constrained_names, structured_output, wants_value
from agentnb.providers.openai.route import RoutedSending, check_client_options
from agentnb.providers.openai.route_state import RouteState, ToolCalling, check_tool_calling
from agentnb.providers.openai.sdk import _sdk
from agentnb.providers.openai.stream import StreamReader
from agentnb.providers.openai.wire import known_params, parse_completion, to_openai
from agentnb.providers.sdk_client import LoopBoundClient, option_secrets, sdk_options
from agentnb.providers.untooled.envelope import looks_constrained, unwrap
from agentnb.providers.window import PROBE_TIMEOUT, Window

__all__ = ["OpenAIProvider", "parse_completion", "responses_provider", "to_openai"]

#: Local servers ignore the key but the SDK insists on one (vLLM's documented placeholder).
PLACEHOLDER_KEY = "EMPTY"
#: Converted messages kept per provider (a few runs' worth); the cache empties when full.
_WIRE_CACHE_SIZE = 4096


class OpenAIProvider(GuidedSending, FailureReporting, StructuredOutput, RoutedSending, Provider):
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
        tool_calling: how tools reach the model. ``"native"``: as ``tools`` (function
            calling); ``"untooled"``: never as ``tools``, the catalogue goes into the prompt and
            calls are parsed from the reply (:class:`~agentnb.providers.untooled.UnTooled`), for
            models and servers without function calling; ``"auto"`` (default): native until the
            server answers that the model takes no tools, then untooled for good (one
            :class:`~agentnb.events.RouteSwitched` event; that step is asked again).
        constrain: on the untooled route, ask the server to constrain replies to a JSON
            envelope (a call matching one tool's schema, or ``{"answer": ...}``) through
            ``response_format``. True tries ``json_schema`` then ``json_object``; one of those
            names uses only that; False sends none. A server that refuses or ignores it is no
            longer asked (a :class:`~agentnb.events.ConstraintDropped` event).
        rank_tools: on the untooled route, when a call is required among several tools, pick
            the tool first from the server's prompt log-probabilities (``/v1/completions`` with
            ``echo``), as the in-process backend does (:mod:`~agentnb.providers.openai.rank`):
            one extra request per tool and step, and once per provider a probe that reads how
            the server aligns its echoed log-probabilities. ``"auto"`` (default): where the
            server gives them, silently not where it does not; True: the same, and a
            :class:`~agentnb.events.ConstraintDropped` event when it cannot; False: never.
        guidance_budget: seconds the guidance (ranking, the call-or-answer measurements,
            steering) may add to a step, estimated from what its requests cost on this server;
            a step that would pass it is skipped (a :class:`~agentnb.events.GuidanceSkipped`
            event). ``"auto"`` (default): as long as the plain request took, at least 5 s;
            None: no limit (:mod:`~agentnb.providers.openai.cost`).
        output_mode: how a run's ``output_type`` is asked for on the native route:
            ``"response_format"`` (a ``json_schema`` response format, strict where the schema
            allows; the default) or ``"tool"`` (a final-answer tool the model calls with the
            value). A server that refuses ``response_format`` is switched to ``"tool"`` once,
            visibly (an :class:`~agentnb.events.OutputMode` event says which, every step).
        server: which server this is (``"llamacpp"``, ``"ollama"``..., set by a ``llamacpp:``
            spec), for its quirks: only llama-cpp-python is asked to count tokens with its
            tokenizer endpoint (:mod:`~agentnb.providers.openai.usage`). None: not named.
        api: ``"chat"`` (Chat Completions, the default, what compatible servers speak) or
            ``"responses"`` (OpenAI's Responses API, which reasoning models need to keep their
            reasoning across tool calls; see :mod:`agentnb.providers.openai.responses`).
        client_options: passed to ``openai.AsyncOpenAI`` (``organization``,
            ``default_headers``, ``http_client``, ...); any other name is a :class:`UserError`.
            Without ``http_client``: aiohttp's connections (:mod:`~agentnb.providers.aiohttp_transport`).

    >>> OpenAIProvider("m", api_key="sk-secret", base_url="http://127.0.0.1:8000/v1").name
    'm'
    >>> OpenAIProvider("m", base_url="http://127.0.0.1:8000/v1", tool_calling="untooled").route
    'untooled'
    """

    price_provider = "openai"  # agentnb.control.cost

    supports_native_tools = True
    supports_streaming = True
    reply_limit_setting = "max_tokens"
    #: Seconds the server may take, in all, to say its context window (then: unknown).
    window_timeout: float = PROBE_TIMEOUT
    #: UnTooled tells it when a step follows tool results (see ``_constrain``).
    understands_untooled_hints = True

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
        tool_calling: ToolCalling = "auto",
        constrain: bool | str = True,
        rank_tools: bool | str = "auto",
        steer: bool | str = "auto",
        chat_template: str | None = None,
        guidance_budget: float | str | None = "auto",
        server: str | None = None,
        **client_options: Any,
    ) -> None:
        sdk = _sdk()  # fail now, with the extra to install, rather than at the first call
        if api not in ("chat", "responses"):
            raise UserError(f"api must be 'chat' or 'responses', not {api!r}")
        self.api = api
        self.server = server
        if not isinstance(model, str) or not model:
            raise UserError(f"OpenAIProvider needs a model name, got {model!r}")
        check_client_options(sdk, client_options)
        # The Responses API path does not take our response_format envelope.
        self._route = RouteState(check_tool_calling(tool_calling), constrain if api == "chat" else False)
        self._untooled: Provider | None = None
        self._guidance(rank_tools, steer, chat_template, guidance_budget)
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
        self._key = _Secret(key, base_url=self.base_url, **option_secrets(client_options))
        self.max_retries = max_retries
        self.timeout = timeout
        self.stream_usage = stream_usage
        self.settings = dict(settings or {})
        if output_mode not in ("response_format", "tool"):
            raise UserError(f"output_mode must be 'response_format' or 'tool', not {output_mode!r}")
        self.output_mode = output_mode
        self._output_note = ""  # why output_mode changed, for the next OutputMode event
        self._client_options = client_options
        self._clients = LoopBoundClient(self._make_client)
        # Messages are immutable and a run's transcript only grows, so each one is converted
        # once: id -> (message, wire form). Keeping the message alive keeps its id unique.
        self._wire: dict[int, tuple[Message, dict[str, Any]]] = {}

    def __repr__(self) -> str:
        extra = ", api='responses'" if self.api == "responses" else ""
        if self._route.tool_calling != "auto":
            extra += f", tool_calling={self._route.tool_calling!r}"
        if self.base_url is None:
            return f"OpenAIProvider({self.model!r}{extra})"
        return f"OpenAIProvider({self.model!r}, base_url={_without_userinfo(self.base_url)!r}{extra})"

    async def aclose(self) -> None:
        """Close the HTTP connections of the current client (optional; a new one opens on use)."""
        await self._clients.aclose()

    # -- the client ---------------------------------------------------------------------

    @property
    def client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client for the running event loop (one per loop; see :mod:`.sdk_client`)."""
        return self._clients.get()

    def _make_client(self) -> Any:
        sdk = _sdk()
        options = aiohttp_transport.with_http_client(sdk, self._client_options)
        return sdk.AsyncOpenAI(
            api_key=self._key.value,
            base_url=self.base_url,
            max_retries=0,  # retries are agentnb.providers.retry's, never the SDK's too
            timeout=self.timeout,
            **sdk_options(sdk, options),
        )

    async def find_context_window(self) -> Window:
        """The server's own answer (:mod:`.window`) for a server other than OpenAI's, else (or
        when it does not say) the genai-prices table."""
        from agentnb.providers.openai.window import server_window
        from agentnb.providers.window import table_window

        if self.base_url is None or self.base_url.startswith("https://api.openai.com"):
            return table_window(self)
        served = await server_window(self.base_url, self.model, self._key.value, self.window_timeout)
        listed = table_window(self) if not served.known else served
        return listed if listed.known else served

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
        if request.output is not None and request.constraint is None:  # the native route
            structured_output(kwargs, request, self.output_mode)
        settings = {**self.settings, **request.settings} if self.settings else request.settings
        if request.constraint is not None and not request.tools:
            settings = self._constrain(kwargs, request, settings)
        if settings:
            known = known_params()
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
        switch = await openai_ignored.ahead(self, request)  # a server that drops tools: untooled at once
        if self._via_untooled(request):
            return openai_ignored.with_switch(await self.untooled().complete(request), switch)
        if self.api == "responses":
            from agentnb.providers.openai import responses as openai_responses

            return await openai_responses.complete(self, request)
        request, ranked, steered = await self._prepare(request)
        if steered is not None:
            return steered
        kwargs = self.build_request(request)
        failure: ProviderError | None = None
        switch = None
        try:
            with self._cost.timing("plain"):
                response, notes = await self._send(kwargs, request)
            notes = (*ranked, *notes)
        except _sdk().OpenAIError as exc:
            switch = self._switch_for(exc, request)
            failure = None if switch is not None else self._error(exc)
        except ValueError as exc:  # a 200 whose body is not JSON
            failure = self._garbage(f"a body that is not JSON ({exc})")
        if switch is not None:  # the model takes no tools: this step, and every later one, untooled
            self._cost.hand_over()
            return openai_ignored.with_switch(await self.untooled().complete(request), switch)
        if failure is None:
            try:
                completion = parse_completion(response)
            except ProviderError as exc:
                failure = self._garbage(str(exc))
            except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
                failure = self._garbage(f"a body that is not a chat completion ({type(exc).__name__}: {exc})")
        if failure is not None:
            # Raised here, outside the except blocks: the SDK's exception (which can hold the key
            # in its request or response) is neither the cause nor the context of ours.
            raise failure
        if not completion.tool_calls:  # calls the server left in the text (it did not parse them)
            found = text_calls.find(completion.text, text_calls.offered(kwargs, request))
            completion = completion if found is None else text_calls.with_calls(completion, found, self.name)
        if openai_ignored.pending(self._route, request, self.base_url):
            called = bool(completion.tool_calls)
            switch = await openai_ignored.check(self, kwargs, called, completion.usage.input_tokens)
            if switch is not None:  # the model never saw the tools: this step again, untooled
                self._cost.hand_over()
                spent = completion.usage  # the reply written without the tools counts too
                completion = await self.untooled().complete(request)
                usage = completion.usage + spent
                return dataclasses.replace(completion, usage=usage, events=(switch, *completion.events))
        if self._enveloped(kwargs, request):
            text = completion.text or ""
            if not looks_constrained(text, constrained_names(request), any_value=wants_value(request)):
                notes += (self._ignored(),)
            completion = dataclasses.replace(completion, text=unwrap(text) if text else completion.text)
            steered = await self._steering.after_envelope(self, request, completion.text or "", notes)
            if steered is not None:
                return steered
            notes += self._steering.drain()
        completion = dataclasses.replace(completion, events=(*notes, *completion.events)) if notes else completion
        return self._finish_output(request, completion)

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        switch = await openai_ignored.ahead(self, request)  # a server that drops tools: untooled at once
        if self._via_untooled(request):
            async for item in self.untooled().stream(request):
                yield openai_ignored.with_switch(item, switch)
            return
        if self.api == "responses":
            from agentnb.providers.openai import responses as openai_responses

            async for item in openai_responses.stream(self, request):
                yield item
            return
        request, ranked, steered = await self._prepare(request)
        if steered is not None:
            yield steered
            return
        kwargs = self.build_request(request)
        kwargs["stream"] = True
        if self.stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        failure: ProviderError | None = None
        switch = None
        try:
            stream, notes = await self._send(kwargs, request)
            notes = (*ranked, *notes)
        except _sdk().OpenAIError as exc:
            switch = self._switch_for(exc, request)
            failure = None if switch is not None else self._error(exc)
        if switch is not None:
            self._cost.hand_over()
            async for item in self.untooled().stream(request):
                yield openai_ignored.with_switch(item, switch)
            return
        if failure is not None:
            raise failure  # outside the except block: no SDK exception (or key) chained to it
        reader = StreamReader(self, kwargs, request, enveloped=self._enveloped(kwargs, request))
        async for item in reader.read(stream, _sdk().OpenAIError):
            yield item
        async for item in reader.settle():
            yield item
        if reader.switch is not None:  # the model never saw the tools: this step again, untooled
            self._cost.hand_over()
            async for item in self.untooled().stream(request):
                if isinstance(item, Completion):  # the reply written without the tools counts too
                    item = dataclasses.replace(
                        item, usage=item.usage + reader.usage, events=(reader.switch, *item.events)
                    )
                yield item
            return
        if reader.failure is not None:
            raise reader.failure  # outside the except blocks: no SDK exception (or key) chained to it
        if not reader.usage.total_tokens:  # the server reported none (llama-cpp-python's streams)
            reader.usage = await self._count_usage(kwargs, reader)
        if reader.envelope is not None:
            text = reader.text
            if not looks_constrained(text, constrained_names(request), any_value=wants_value(request)):
                notes += (self._ignored(),)
            if text:
                reader.assembler.add(TextChunk(unwrap(text)))
                steered = await self._steering.after_envelope(self, request, unwrap(text), notes)
                if steered is not None:
                    yield steered
                    return
                notes += self._steering.drain()
        yield self._finish_output(request, reader.completion(notes))


def responses_provider(model: str, **options: Any) -> OpenAIProvider:
    """An :class:`OpenAIProvider` on the Responses API (the ``openai-responses:MODEL`` spec).

    >>> responses_provider("o4-mini", api_key="sk-example-key-000").api
    'responses'
    """
    return OpenAIProvider(model, api="responses", **options)
