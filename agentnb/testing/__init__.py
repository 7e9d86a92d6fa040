"""Fake models for tests, docs and notebooks: scripted, not clever.

Layer: above the run; may import the providers, tools, messages and errors (it is
imported by tests and docs, never by agentnb's own modules).

:class:`ScriptedProvider` answers from a queue of replies; :class:`FunctionProvider` asks a
function. Both record every :class:`~agentnb.providers.Request` they received in
``requests``, so a test can assert what the model was shown. :class:`ScriptedServer`
(:mod:`agentnb.testing.server`) is the same idea over HTTP: a scripted OpenAI-compatible
server on 127.0.0.1 for testing code that talks to one.

A reply is one of:

* a ``str``: a text answer;
* a :class:`~agentnb.messages.ToolCall` (see :func:`call`), or a list of them (parallel calls);
* a :class:`Streamed` reply: chunks delivered one by one when the loop streams;
* a :class:`~agentnb.providers.Completion`, used as it is;
* an exception instance, raised (to test provider failures).

>>> from agentnb import Agent, tool
>>> @tool
... def echo(text: str) -> str:
...     '''Echo the text.'''
...     return text
>>> model = ScriptedProvider([call("echo", text="hi"), "done"])
>>> Agent(model, tools=[echo]).run("go").output
'done'
>>> model.requests[1].messages[-1].content
'hi'
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentnb.errors import ModelBehaviorError
from agentnb.messages import Message, ToolCall, Usage
from agentnb.providers.base import (
    Chunk,
    Completion,
    CompletionAssembler,
    Provider,
    Request,
    TextChunk,
    ToolCallChunk,
)
from agentnb.tools import Tool

__all__ = ["FunctionProvider", "Reply", "ScriptedProvider", "ScriptedServer", "Streamed", "call", "tool_chunks"]


def __getattr__(name: str) -> Any:
    # The scripted HTTP server (agentnb.testing.server) is loaded only when asked for.
    if name in ("ScriptedServer", "Reply"):
        from agentnb.testing import server

        return getattr(server, name)
    raise AttributeError(f"module 'agentnb.testing' has no attribute {name!r}")


def call(name: str, arguments: dict[str, Any] | None = None, /, *, id: str | None = None, **kwargs: Any) -> ToolCall:
    """A tool call for a script: ``call("add", a=1, b=2)`` or ``call("add", {"a": 1})``.

    Without ``id`` the provider numbers calls ``call_1``, ``call_2``, ... in order.
    """
    return ToolCall(id or "", name, {**(arguments or {}), **kwargs})


@dataclass(frozen=True)
class Streamed:
    """A reply delivered as chunks: strings are text, :class:`ToolCallChunk` are call pieces."""

    chunks: Sequence[str | Chunk]
    usage: Usage = Usage()


def tool_chunks(index: int, name: str, arguments: str, pieces: int = 3, id: str | None = None) -> list[ToolCallChunk]:
    """Split one call into ``pieces`` argument fragments, as servers stream them."""
    size = max(1, -(-len(arguments) // pieces))
    frags = [arguments[i : i + size] for i in range(0, len(arguments), size)] or [""]
    first = ToolCallChunk(index, id or f"call_s{index}", name, frags[0])
    return [first, *(ToolCallChunk(index, arguments=f) for f in frags[1:])]


class _Recording(Provider):
    # Not priced (agentnb.control.cost): a fake's usage has no price unless it says so (Usage(cost=...)).
    __test__ = False
    supports_streaming = True

    def __init__(self, name: str, native_tools: bool, usage: Usage, delay: float) -> None:
        self.name = name
        self.supports_native_tools = native_tools
        self.usage = usage
        self.delay = delay
        self.requests: list[Request] = []
        self._ids = 0

    async def _next(self, request: Request) -> Any:
        raise NotImplementedError

    async def _take(self, request: Request) -> Any:
        self.requests.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)
        reply = await self._next(request)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def _completion(self, reply: Any) -> Completion:
        if isinstance(reply, Completion):
            return reply
        if isinstance(reply, str):
            return Completion(reply, (), self.usage, "stop")
        if isinstance(reply, ToolCall):  # the common case first
            return Completion(None, (self._numbered(reply),), self.usage, "tool_calls")
        if isinstance(reply, Streamed):
            assembler = CompletionAssembler()
            for chunk in reply.chunks:
                assembler.add(TextChunk(chunk) if isinstance(chunk, str) else chunk)
            return assembler.finish(reply.usage if reply.usage != Usage() else self.usage)
        if isinstance(reply, (list, tuple)) and all(isinstance(c, ToolCall) for c in reply):
            return Completion(None, tuple(self._numbered(c) for c in reply), self.usage, "tool_calls")
        raise TypeError(f"cannot use {reply!r} as a scripted reply")

    def _numbered(self, c: ToolCall) -> ToolCall:
        self._ids += 1
        return c if c.id else ToolCall(f"call_{self._ids}", c.name, c.arguments, c.raw_arguments, c.parse_error)

    async def complete(self, request: Request) -> Completion:
        return self._completion(await self._take(request))

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        reply = await self._take(request)
        if isinstance(reply, Streamed):
            for chunk in reply.chunks:
                await asyncio.sleep(0)  # let the consumer see each chunk separately
                yield TextChunk(chunk) if isinstance(chunk, str) else chunk
        completion = self._completion(reply)
        if not isinstance(reply, Streamed) and completion.text:
            yield TextChunk(completion.text)
        yield completion

    @property
    def last_messages(self) -> Sequence[Message]:
        """The messages of the most recent request."""
        return self.requests[-1].messages


class ScriptedProvider(_Recording):
    """Answers each request with the next reply from a queue.

    Args:
        replies: the replies, in order (see the module docstring).
        native_tools: False makes it a text-only model (for the UnTooled layer).
        usage: token usage reported with every reply.
        delay: seconds to wait before each reply (to test cancellation and live widgets).
    """

    def __init__(
        self,
        replies: Iterable[Any],
        *,
        name: str = "scripted",
        native_tools: bool = True,
        usage: Usage = Usage(),
        delay: float = 0.0,
    ) -> None:
        super().__init__(name, native_tools, usage, delay)
        self.replies = list(replies)
        self._pos = 0

    async def _next(self, request: Request) -> Any:
        if self._pos >= len(self.replies):
            raise ModelBehaviorError(f"ScriptedProvider ran out of replies after {self._pos} requests")
        reply = self.replies[self._pos]
        self._pos += 1
        return reply

    @property
    def remaining(self) -> int:
        return len(self.replies) - self._pos


class FunctionProvider(_Recording):
    """Answers each request by calling ``fn(messages, tools)`` (sync or async).

    ``fn`` returns a reply of any kind :class:`ScriptedProvider` accepts.
    """

    def __init__(
        self,
        fn: Callable[[Sequence[Message], Sequence[Tool]], Any],
        *,
        name: str = "function",
        native_tools: bool = True,
        usage: Usage = Usage(),
        delay: float = 0.0,
    ) -> None:
        super().__init__(name, native_tools, usage, delay)
        self.fn = fn

    async def _next(self, request: Request) -> Any:
        reply = self.fn(request.messages, request.tools)
        return await reply if inspect.isawaitable(reply) else reply
