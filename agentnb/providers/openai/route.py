"""How an :class:`~agentnb.providers.openai.OpenAIProvider` asks for tool calls, and what it
learns about its server along the way.

* **The route.** ``tool_calling="native"`` sends ``tools``; ``"untooled"`` never does: the
  catalogue goes into the prompt through :class:`~agentnb.providers.untooled.UnTooled` and
  calls are parsed out of the reply. ``"auto"`` starts native and, when the server answers that
  the model takes no tools (:func:`rejects_tools`), switches to untooled for good.
* **Server-side constraints.** On the untooled route the reply is constrained to a JSON
  envelope (:mod:`agentnb.providers.untooled.envelope`) through ``response_format``: first as
  ``json_schema`` (the OpenAI form: vLLM, SGLang, LM Studio, Ollama, llama.cpp's
  ``llama-server``), then as ``json_object`` with a ``schema`` (llama-cpp-python's server). A
  server that refuses both, or ignores them, is no longer asked.

Each change is reported once, as an event (:class:`~agentnb.events.RouteSwitched`,
:class:`~agentnb.events.ConstraintDropped`); what the provider has learnt so far is its
:class:`~agentnb.providers.openai.route_state.RouteState`.

>>> rejects_tools("registry.ollama.ai/library/gemma:2b does not support tools")
True
>>> rejects_tools('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
True
>>> rejects_tools("maximum context length is 2048 tokens")
False
"""

from __future__ import annotations

import difflib
import inspect
import json
import re
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import AssistantMessage, ToolMessage
from agentnb.providers.base import Provider, Request
from agentnb.providers.openai import posting
from agentnb.providers.openai.errors import brief
from agentnb.providers.openai.route_state import (
    CONSTRAINT_FORMATS,
    TOOL_CALLING,
    RouteState,
    ToolCalling,
    check_tool_calling,
    constraint_formats,
)
from agentnb.providers.openai.wire import as_posted, as_sent

__all__ = [
    "AFTER_RESULTS_HINT",
    "ANSWER_HINT",
    "CONSTRAINT_FORMATS",
    "ENVELOPE_NOTE",
    "HINTS",
    "TOOL_CALLING",
    "RouteState",
    "RoutedSending",
    "ToolCalling",
    "check_client_options",
    "check_tool_calling",
    "constraint_formats",
    "just_called",
    "rejects_constraint",
    "rejects_tools",
]

#: Request settings UnTooled adds for backends that ``understand_untooled_hints``; never sent.
AFTER_RESULTS_HINT = "untooled_after_tool_results"
#: Set by the server-side decision (:mod:`agentnb.providers.openai.decide`) for a text answer:
#: every tool is left out of the envelope; never sent.
ANSWER_HINT = "untooled_answer"
HINTS = frozenset({AFTER_RESULTS_HINT, ANSWER_HINT, "untooled_pick", "untooled_results"})
#: Told to the model when its reply is constrained to the envelope and may be a text answer.
ENVELOPE_NOTE = '\nTo answer in plain text instead, reply with only {"answer": "<your answer>"}.'
# What servers say when a model takes no tools (read in their sources and issue trackers):
# Ollama "<model> does not support tools" (400); vLLM '"auto" tool choice requires
# --enable-auto-tool-choice and --tool-call-parser to be set' (400) and, before 0.8.3,
# 'tool_choice = "required" is not supported!'; llama.cpp's llama-server without --jinja
# "tools param requires --jinja flag" (500 in some builds, 400 in others) and "Unsupported
# param: tool_choice"; older llama-server "Cannot use tools with stream"; OpenRouter "No
# endpoints found that support tool use".
# Also the generic forms a server of one's own may use: "Unsupported param: tools", "tool use
# is not supported", "Unrecognized request argument supplied: tools" (OpenAI's wording for an
# unknown parameter), "... doesn't support tool calling", and a schema that forbids the field
# (pydantic's "Extra inputs are not permitted" at ("body", "tools"), serde's "unknown field
# `tools`").
_REJECTS_TOOLS = re.compile(
    r"(?:does not|doesn't|do not|don't) support (?:tools|tool[ _]?(?:use|calling|calls)|function[ _]?calling)"
    r"|--enable-auto-tool-choice"
    r"|tools? param requires --jinja"
    r"|unsupported param(?:eter)?s?\W+(?:tool_choice|tools)\b"
    r"|unrecognized request arguments? supplied\W+(?:tool_choice|tools)\b"
    r"|unknown (?:field|param(?:eter)?)\W+(?:tool_choice|tools)\b"
    r"|\btools\W+(?:\w+\W+){0,3}extra (?:inputs|fields) (?:are )?not permitted"
    r"|cannot use tools with stream"
    r"|tool_choice\W+(?:=\W*)?\W*required\W+is not supported"
    r"|support tool use"
    r"|(?:tools|tool[ _]?(?:use|calls|calling)|function[ _]?calling) (?:is |are )?"
    r"(?:not supported|unsupported|not enabled|not available)",
    re.IGNORECASE,
)


def rejects_tools(message: str) -> bool:
    """Whether a server's error message means "this model (or server) takes no ``tools``"."""
    return bool(_REJECTS_TOOLS.search(message))


def rejects_constraint(message: str) -> bool:
    """Whether a server's error message is about ``response_format`` (so dropping it may help)."""
    text = message.lower()
    return "response_format" in text or "json_schema" in text or "json schema" in text


class RoutedSending:
    """The route and the adaptive sending of :class:`~agentnb.providers.openai.OpenAIProvider`
    (a mixin: it uses the provider's ``client``, ``name``, ``stream_usage``, ``_key`` and
    ``_message``)."""

    _route: RouteState
    _untooled: Provider | None
    name: str
    stream_usage: bool
    client: Any
    _key: Any

    def _message(self, exc: Exception) -> str:
        raise NotImplementedError

    def build_request(self, request: Request) -> dict[str, Any]:
        raise NotImplementedError

    def _refused_output(self, request: Request, kwargs: dict[str, Any], message: str) -> bool:
        raise NotImplementedError

    settings: dict[str, Any]

    def _enveloped(self, kwargs: dict[str, Any], request: Request) -> bool:
        """Whether ``kwargs`` carry this provider's envelope (not a caller's own response_format)."""
        return (
            "response_format" in kwargs
            and request.constraint is not None
            and "response_format" not in request.settings
            and "response_format" not in self.settings
        )

    def _via_untooled(self, request: Request) -> bool:
        """Whether this request goes through the UnTooled layer: on the untooled route, one
        with tools or with earlier tool calls (which the layer renders as plain turns)."""
        if self._route.route != "untooled":
            return False
        return bool(request.tools) or any(
            isinstance(m, ToolMessage) or (isinstance(m, AssistantMessage) and m.tool_calls) for m in request.messages
        )

    def _constrain(self, kwargs: dict[str, Any], request: Request, settings: dict[str, Any]) -> dict[str, Any]:
        """Put the envelope's ``response_format`` into ``kwargs``; the settings without hints.

        Right after tool results, the tools just called are left out of the envelope: a weak
        model forced to write JSON otherwise tends to repeat its call instead of answering
        (measured with SmolLM2-135M behind llama.cpp's server); a different tool stays possible.
        """
        if "response_format" in settings:
            return settings  # the caller's own response_format (structured output) wins
        exclude = _excluded(request, settings)
        if HINTS & settings.keys():
            settings = {k: v for k, v in settings.items() if k not in HINTS}
        fmt = self._route.response_format(request.constraint, exclude)
        if fmt is None:
            return settings
        kwargs["response_format"] = fmt
        assert request.constraint is not None
        if request.constraint.tool_choice == "auto" and request.constraint.output is None:
            messages = list(kwargs["messages"])
            if messages and messages[0].get("role") == "system":
                messages[0] = {**messages[0], "content": str(messages[0]["content"]) + ENVELOPE_NOTE}
            else:
                messages.insert(0, {"role": "system", "content": ENVELOPE_NOTE.strip()})
            kwargs["messages"] = messages
        return settings

    @property
    def tool_calling(self) -> str:
        """The ``tool_calling`` this provider was built with."""
        return self._route.tool_calling

    @property
    def route(self) -> str:
        """How tools go out now: ``"native"`` or ``"untooled"`` (``auto`` may have switched)."""
        return self._route.route

    @property
    def constraint_format(self) -> str | None:
        """The ``response_format`` shape untooled requests carry now (None: unconstrained)."""
        return self._route.constraint_format

    @property  # type: ignore[override]
    def supports_constraints(self) -> bool:  # honours Request.constraint while a shape is left
        return bool(self._route.formats)

    def untooled(self) -> Provider:
        """The UnTooled layer this provider's untooled route goes through (made once)."""
        if self._untooled is None:
            from agentnb.providers.untooled import UnTooled

            # The layer sends this provider requests without tools: those go out as plain chat.
            self._untooled = UnTooled(self)
        return self._untooled

    async def _send(self, kwargs: dict[str, Any], request: Request) -> tuple[Any, tuple[Any, ...]]:
        """``create()``, adapting to what the server turns down; also the events that caused.

        A server that refuses ``stream_options`` is asked again without it; one that refuses a
        ``response_format`` shape, with the next shape or none. A request that tries something
        not yet known to work here (tools under ``auto``, a ``response_format``) is not retried
        when the server's error says it takes no tools, so a refusal costs one request. Rate
        limits, server errors and dropped connections are retried by :mod:`.retry` (its events
        are among those returned); a timeout is not.
        """
        import openai as sdk

        from agentnb.providers.retry import send_with_retries

        notes: list[Any] = []
        probing = self._probing(kwargs, request)
        enveloped = self._enveloped(kwargs, request)

        def refused(exc: Exception) -> bool:  # a refusal of what is being tried: not retried
            message = self._message(exc)
            return probing and (rejects_tools(message) or (enveloped and rejects_constraint(message)))

        while True:
            try:
                response = await send_with_retries(
                    lambda: self._post(kwargs),
                    retries=self.max_retries,  # type: ignore[attr-defined]
                    provider=self.name,
                    notes=notes,
                    refused=refused,
                )
            except sdk.APIStatusError as exc:
                message = self._message(exc)
                if "stream_options" in kwargs and "stream_options" in message and exc.status_code < 500:
                    self.stream_usage = False  # this server does not take stream_options
                    del kwargs["stream_options"]
                    continue
                if self._enveloped(kwargs, request) and exc.status_code != 429 and rejects_constraint(message):
                    notes.append(self._route.drop_format(self.name, self._key.redact(brief(message))))
                    fmt = self._route.response_format(request.constraint, _excluded(request, request.settings))
                    if fmt is None:
                        del kwargs["response_format"]
                        kwargs["messages"] = _without_note(kwargs["messages"])
                    else:
                        kwargs["response_format"] = fmt
                    continue
                if exc.status_code == 400 and self._refused_output(request, kwargs, message):
                    # structured output by a final-answer tool from now on: rebuild the request
                    streaming = {k: kwargs[k] for k in ("stream", "stream_options") if k in kwargs}
                    kwargs.clear()
                    kwargs.update(self.build_request(request), **streaming)
                    continue
                raise
            if request.tools:
                self._route.tools_verified = True
            if self._enveloped(kwargs, request):
                self._route.format_verified = True
            return response, tuple(notes)

    def _post(self, kwargs: dict[str, Any]) -> Any:
        """One request: streamed through ``create()`` (the SDK reads the events), else posted
        and answered with the body's bytes (see :func:`~agentnb.providers.openai.wire.as_posted`
        and :mod:`~agentnb.providers.openai.posting`)."""
        if kwargs.get("stream"):
            return self.client.chat.completions.create(**as_sent(kwargs))
        body, options = as_posted(kwargs)
        client = self.client
        # An absolute URL: the SDK's joining of a relative path onto ``base_url`` re-quotes the
        # path each call (~30 us of the ~250 us the SDK spends on a call; benchmarks/eval_throughput.py).
        # The client is always agentnb's own ``AsyncOpenAI`` (no Azure-style URL rewriting).
        url = f"{client.base_url}chat/completions"
        return posting.post(client, url, body, options)  # prepared once by the SDK, then reused

    def _probing(self, kwargs: dict[str, Any], request: Request) -> bool:
        route = self._route
        return (bool(request.tools) and not route.tools_verified) or (
            self._enveloped(kwargs, request) and not route.format_verified
        )

    def _switch_for(self, exc: Exception, request: Request) -> Any:
        """The RouteSwitched event when ``exc`` says the model takes no tools and ``auto`` may switch."""
        if not request.tools or not self._route.can_switch() or not isinstance(exc, _api_status_error()):
            return None
        message = self._message(exc)
        if not rejects_tools(message):
            return None
        return self._route.switch(self.name, self._key.redact(brief(message)))

    def _ignored(self) -> Any:
        return self._route.drop_format(self.name, "the server ignored it (the reply was not JSON)", ignored=True)


def _excluded(request: Request, settings: dict[str, Any]) -> frozenset[str]:
    """The tools left out of an ``auto`` envelope: all of them when the answer is to be text,
    the ones just called right after tool results."""
    if settings.get(ANSWER_HINT) and request.constraint is not None:
        return frozenset(t.name for t in request.constraint.tools)
    return just_called(request.messages) if settings.get(AFTER_RESULTS_HINT) else frozenset()


def _without_note(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without the envelope note (once no envelope is sent)."""
    out = list(messages)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        content = out[0]["content"]
        if content == ENVELOPE_NOTE.strip():
            return out[1:]
        out[0] = {**out[0], "content": content.removesuffix(ENVELOPE_NOTE)}
    return out


def just_called(messages: Any) -> frozenset[str]:
    """The tool names in the last assistant turn of a rendered (UnTooled) conversation."""
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None or not last.content:
        return frozenset()
    names: set[str] = set()
    for line in last.content.splitlines():
        line = line.strip()
        if line[:1] not in "{[":
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                names.add(item["name"])
    return frozenset(names)


def _api_status_error() -> type:
    import openai

    return openai.APIStatusError  # type: ignore[no-any-return]


def check_client_options(sdk: Any, options: dict[str, Any]) -> None:
    """Unknown keyword arguments fail here, at construction, with the names that exist."""
    own = {"self", "api_key", "base_url", "max_retries", "timeout"}
    allowed = set(inspect.signature(sdk.AsyncOpenAI.__init__).parameters) - own
    unknown = sorted(set(options) - allowed)
    if not unknown:
        return
    ours = [
        "api_key",
        "base_url",
        "max_retries",
        "timeout",
        "stream_usage",
        "settings",
        "api",
        "tool_calling",
        "constrain",
        "rank_tools",
        "steer",
        "chat_template",
        "guidance_budget",
        "server",
    ]
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, ours + sorted(allowed), n=1)
        if name in ("supports_native_tools", "native_tools", "tools", "untooled"):
            hints.append(f"{name}: for a model without function calling use tool_calling='untooled'")
        elif close:
            hints.append(f"{name}: did you mean {close[0]}?")
    known = ", ".join(ours + sorted(a for a in allowed if not a.startswith("_")))
    plural = "s" if len(unknown) > 1 else ""
    detail = f" ({'; '.join(hints)})" if hints else ""
    raise UserError(f"OpenAIProvider got unknown option{plural} {', '.join(unknown)}{detail}; it takes: {known}")
