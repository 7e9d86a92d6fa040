"""The provider interface: what the loop knows about a model.

A provider answers one :class:`Request` (the conversation, the tools on offer, the tool
choice) with one :class:`Completion` (text and/or tool calls, plus usage). Streaming
providers also yield :class:`TextChunk` / :class:`ToolCallChunk` pieces first and end their
stream with the assembled :class:`Completion`. Whether a call came from a native API or was
parsed out of text is invisible to the loop.
"""

from __future__ import annotations

import inspect
import json
import math
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from agentnb.messages import Message, ToolCall, Usage
from agentnb.messages.fastinit import fast_init
from agentnb.messages.jsonsafe import depth_error, too_deep
from agentnb.providers.window import Window, table_window

if TYPE_CHECKING:
    from agentnb.output import OutputSpec
    from agentnb.tools import Tool

#: ``"auto"`` (text or a call), ``"required"`` (a call only), ``"none"``, or a tool's name.
ToolChoice: TypeAlias = str


@dataclass(frozen=True, slots=True)
class OutputConstraint:
    """What a text-only backend must write, for backends that can constrain decoding.

    The UnTooled layer sets this on the requests it sends to a text model whose
    ``supports_constraints`` is True. The reply must then be either plain text that does not
    start with ``{`` or ``[`` (not allowed when ``tool_choice`` is ``"required"`` or a tool
    name), or one JSON object ``{"name": ..., "arguments": {...}}`` whose arguments match that
    tool's parameters schema (only the named tool when ``tool_choice`` is a name; when
    ``parallel`` is True a JSON array of such objects is allowed too). With ``output`` set, a
    JSON value matching that schema takes the place of the plain text.
    """

    tools: tuple[Tool, ...]
    tool_choice: ToolChoice = "auto"
    parallel: bool = False
    #: The JSON Schema a final answer must match (``output_type``); it then replaces plain text.
    output: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Request:
    """One model call: the whole conversation so far and the tools on offer."""

    messages: Sequence[Message]
    tools: Sequence[Tool] = ()
    tool_choice: ToolChoice = "auto"
    settings: dict[str, Any] = field(default_factory=dict)
    constraint: OutputConstraint | None = None
    #: The run's ``output_type`` (an :class:`agentnb.output.OutputSpec`): the final answer
    #: must be JSON that matches ``output.schema``. None: a text answer.
    output: OutputSpec | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """A model's reply: text, tool calls, or both.

    ``events`` are typed events (:mod:`agentnb.events`) about decisions the provider made for
    this reply (a route switch, why it called or answered, how it constrained the output); the
    loop yields them, with their ``depth`` set, before its ``ModelResponse``. ``reasoning``
    is the provider's opaque reasoning (see :class:`~agentnb.messages.AssistantMessage`).
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None
    events: tuple[Any, ...] = ()
    reasoning: tuple[dict[str, Any], ...] = ()
    #: The model that answered, when the server said (it may differ from the one asked for).
    model: str | None = None


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A fragment of tool call number ``index``: any of id, name and argument text."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


Chunk: TypeAlias = TextChunk | ToolCallChunk


class Provider(ABC):
    """Base class of every model backend.

    Subclasses implement :meth:`complete`; streaming backends also override :meth:`stream`.
    Capability flags tell callers what the backend can do natively.

    >>> from agentnb import Agent
    >>> class Echo(Provider):
    ...     name = "echo"
    ...     async def complete(self, request):
    ...         return Completion(f"you said: {request.messages[-1].content}")
    >>> Agent(Echo()).run("hello").output
    'you said: hello'
    """

    #: Short name shown in events and reprs.
    name: str = "provider"
    #: True when the backend takes tool schemas and returns structured calls itself.
    supports_native_tools: bool = True
    #: True when :meth:`stream` yields real incremental chunks.
    supports_streaming: bool = False
    #: True when the backend honours :attr:`Request.constraint` (constrained decoding).
    supports_constraints: bool = False
    #: Pricing (:mod:`agentnb.control.cost`): models run in this process cost 0; ``price_provider`` is
    #: the genai-prices provider id of the backend's own API; ``price_as`` (set it on an
    #: instance) prices a proxy or local server as that provider's model of the same name.
    in_process: bool = False
    price_provider: str | None = None
    price_as: str | None = None
    #: The request setting that bounds a reply's tokens (``max_tokens``...), used to hold a
    #: token budget (:mod:`agentnb.run.budget`); None: the backend has none agentnb knows.
    reply_limit_setting: str | None = None
    #: True when :meth:`estimate_input_tokens` counts exactly, with the model's own tokenizer (the
    #: context gauge then says so, :mod:`agentnb.context.size`).
    counts_tokens: bool = False

    @abstractmethod
    async def complete(self, request: Request) -> Completion:
        """Answer one request."""

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        """Yield chunks, then the assembled completion (default: one chunk from ``complete``)."""
        completion = await self.complete(request)
        if completion.text:
            yield TextChunk(completion.text)
        yield completion

    def estimate_input_tokens(self, request: Request) -> int | None:
        """The input tokens ``request`` will count, where the backend can tell before sending it
        (None: unknown; :mod:`agentnb.run.budget` then estimates from characters)."""
        return None

    async def context_window(self) -> Window:
        """This model's context window (:mod:`agentnb.providers.window`), found on first call and
        kept: a wrapper asks what it wraps; else :meth:`find_context_window`.

        >>> import asyncio
        >>> from agentnb.testing import ScriptedProvider
        >>> asyncio.run(ScriptedProvider([]).context_window())
        Window(tokens=None, source='unknown: scripted does not say its window')
        """
        found = self.__dict__.get("_window")
        if found is None:
            inner = getattr(self, "inner", None)
            found = await (inner.context_window() if isinstance(inner, Provider) else self.find_context_window())
            self.__dict__["_window"] = found
        return found

    async def find_context_window(self) -> Window:
        """Find this model's window (default: the genai-prices table); backends that can ask
        their model or server override it. Never raises: an unknown window says why."""
        return table_window(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def model_name(provider: Any) -> str | None:
    """The model ``provider`` names as text (``"gpt-4o-mini"``), else None. A computed ``model``
    is not read: an in-process provider's loads its weights (:mod:`agentnb.providers.hf.lazy`).

    >>> from agentnb.testing import ScriptedProvider
    >>> model_name(ScriptedProvider([])), model_name(object())
    (None, None)
    """
    if isinstance(inspect.getattr_static(provider, "model", None), property):
        return None
    value = getattr(provider, "model", None)
    return value if isinstance(value, str) else None


#: Characters a token, when nothing better is known (dense for prose, right for JSON schemas).
CHARS_PER_TOKEN = 3.0


def chars_estimate(messages: Sequence[Any], tools: Sequence[Any] = ()) -> int:
    """About how many tokens ``messages`` and the ``tools``' schemas are (3 characters a token).

    >>> from agentnb.messages import UserMessage
    >>> chars_estimate([UserMessage("x" * 30)])  # (30 + 16) / 3
    16
    """
    size = 0
    for m in messages:
        size += 16 + len(getattr(m, "content", None) or "")  # (16: the role and the turn's markers)
        for c in getattr(m, "tool_calls", ()) or ():
            size += len(c.name) + len(json.dumps(c.arguments, ensure_ascii=False, default=str))
    for t in tools:
        size += len(t.name) + len(t.description) + len(json.dumps(t.parameters, ensure_ascii=False, default=str))
    return math.ceil(size / CHARS_PER_TOKEN)


async def collect(stream: AsyncIterator[Chunk | Completion]) -> Completion:
    """Drain a provider's stream; its final :class:`Completion` (for ``complete`` built on ``stream``)."""
    completion = None
    async for item in stream:
        if isinstance(item, Completion):
            completion = item
    if completion is None:
        from agentnb.errors import ModelBehaviorError

        raise ModelBehaviorError("the provider's stream ended without a completion")
    return completion


def parse_arguments(call_id: str, name: str, raw: str | None) -> ToolCall:
    """Build a :class:`ToolCall` from argument text, keeping bad JSON visible (never ``{}``)."""
    text = (raw or "").strip()
    if not text:
        return ToolCall(call_id, name, {})
    if too_deep(text):
        return ToolCall(call_id, name, None, raw, f"arguments are not usable: {depth_error()}")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: bad JSON, or an int of 5000 digits
        return ToolCall(call_id, name, None, raw, f"arguments are not valid JSON: {exc}")
    if not isinstance(value, dict):
        return ToolCall(call_id, name, None, raw, "arguments must be a JSON object")
    return ToolCall(call_id, name, value)


class CompletionAssembler:
    """Accumulates streamed chunks into a :class:`Completion`.

    Tool-call fragments are merged by index, so names and argument text split over many
    chunks, and several interleaved calls, come out whole.

    >>> a = CompletionAssembler()
    >>> for c in [ToolCallChunk(0, "c1", "add", '{"a": '), ToolCallChunk(0, arguments="1}")]:
    ...     a.add(c)
    >>> a.finish().tool_calls[0].arguments
    {'a': 1}
    """

    __slots__ = ("_text", "_calls")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, list[Any]] = {}

    def add(self, chunk: Chunk) -> None:
        if isinstance(chunk, TextChunk):
            self._text.append(chunk.text)
            return
        slot = self._calls.setdefault(chunk.index, [None, "", []])
        if chunk.id:
            slot[0] = chunk.id
        if chunk.name:
            slot[1] += chunk.name
        if chunk.arguments:
            slot[2].append(chunk.arguments)

    def finish(
        self, usage: Usage = Usage(), finish_reason: str | None = None, events: tuple[Any, ...] = ()
    ) -> Completion:
        calls = tuple(
            parse_arguments(cid or f"call_{i}", name, "".join(parts))
            for i, (cid, name, parts) in sorted(self._calls.items())
        )
        text = "".join(self._text) or None
        return Completion(text, calls, usage, finish_reason, events)


for _cls in (Request, Completion, TextChunk, ToolCallChunk):
    fast_init(_cls)  # cheaper construction, same frozen dataclasses
