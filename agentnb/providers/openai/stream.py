"""Reading one Chat Completions stream for :class:`~agentnb.providers.openai.OpenAIProvider`.

What the user sees while it streams is decided here: text goes out as it arrives, except
- on the untooled route, the envelope's JSON (only an answer's text is shown,
  :class:`~agentnb.providers.untooled.envelope.AnswerStream`);
- on the native route, what may be a call written as text (:mod:`agentnb.providers.openai.text_calls`);
- under ``tool_calling="auto"``, until the server is seen to use the tools, all text (it is
  dropped if the model never saw them, :mod:`agentnb.providers.openai.ignored`).
A stream that breaks, or ends without a ``finish_reason``, is a typed error; the text shown
before it stays shown.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from agentnb.errors import ProviderError
from agentnb.messages import ToolCall, Usage
from agentnb.providers.base import Chunk, Completion, CompletionAssembler, Request, TextChunk
from agentnb.providers.openai import ignored as openai_ignored
from agentnb.providers.openai import text_calls
from agentnb.providers.openai.wire import _tool_call_chunk, _usage
from agentnb.providers.untooled.envelope import AnswerStream


class StreamReader:
    """One streamed reply: :meth:`read` the chunks, :meth:`settle` the end, then :meth:`completion`."""

    def __init__(self, provider: Any, kwargs: dict[str, Any], request: Request, *, enveloped: bool) -> None:
        self.provider = provider
        self.kwargs = kwargs
        self.envelope = AnswerStream() if enveloped else None
        pending = openai_ignored.pending(provider._route, request, provider.base_url)
        self.held: list[TextChunk] | None = [] if pending else None
        self.names = text_calls.offered(kwargs, request)
        self.gate = text_calls.CallGate() if self.names and self.envelope is None else None
        self.assembler = CompletionAssembler()
        self.ids: dict[int, tuple[str | None, str]] = {}  # index -> (id, name so far)
        self.usage = Usage()
        self.finish: str | None = None
        self.raw: list[str] = []
        self.received = 0
        self.failure: ProviderError | None = None
        self.found: tuple[str | None, tuple[ToolCall, ...]] | None = None
        self.switch: Any = None

    @property
    def text(self) -> str:
        return "".join(self.raw)

    async def read(self, stream: Any, sdk_error: type[Exception]) -> AsyncIterator[Chunk]:
        """The chunks to show, as they arrive; a failure is kept in ``failure``, not raised."""
        try:
            async for chunk in stream:
                self.received += 1
                if chunk.usage is not None:
                    self.usage = _usage(chunk.usage)
                for choice in chunk.choices[:1]:
                    self.finish = choice.finish_reason or self.finish
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        for item in self._text(delta.content):
                            yield item
                    if delta.tool_calls and self.held is not None:  # a call: the tools reach the model
                        for item in await self._release():
                            yield item
                    for tc in delta.tool_calls or ():
                        part = _tool_call_chunk(tc, self.ids)
                        self.assembler.add(part)
                        yield part
        except sdk_error as exc:
            self.failure = self.provider._error(exc, streaming=self.received > 0)
        except (ValueError, AttributeError, TypeError, KeyError, IndexError) as exc:  # garbage chunks
            what = f"a stream that is not chat completion chunks ({type(exc).__name__}: {exc})"
            self.failure = self.provider._garbage(what)
        if self.failure is None and self.finish is None:
            # No finish_reason: the stream was cut off (or was never one: an HTML page, say).
            what = f"after {self.received} chunks" if self.received else "without a single chunk"
            self.failure = self.provider._garbage(
                f"a stream that ended {what} and no finish_reason; the answer is incomplete"
            )

    async def settle(self) -> AsyncIterator[Chunk]:
        """What is left to show at the end; sets ``switch`` when the server dropped the tools
        (then nothing more is shown: the step goes again, untooled)."""
        if self.gate is not None and self.failure is None:
            self.found = text_calls.find(self.text, self.names)
        if self.gate is not None and self.found is None:
            rest = self.gate.rest()
            if rest:
                for item in self._show(TextChunk(rest)):
                    yield item
        elif self.found is not None and self.held is not None:
            for item in await self._release():
                yield item
        if self.held:  # shown before anything else happens (a failure loses nothing)
            if self.failure is None:
                tokens = self.usage.input_tokens
                self.switch = await openai_ignored.check(self.provider, self.kwargs, False, tokens)
                if self.switch is not None:
                    return
            for item in self.held:
                yield item
            self.held = None

    def completion(self, notes: tuple[Any, ...]) -> Completion:
        done = self.assembler.finish(self.usage, self.finish, notes)
        if self.found is not None and not done.tool_calls:
            done = text_calls.with_calls(done, self.found, self.provider.name)
        return done

    def _text(self, content: str) -> list[TextChunk]:
        self.raw.append(content)
        if self.envelope is None:
            self.assembler.add(TextChunk(content))
        shaper = self.envelope or self.gate
        shown = shaper.feed(content) if shaper is not None else content
        return self._show(TextChunk(shown)) if shown else []

    def _show(self, item: TextChunk) -> list[TextChunk]:
        if self.held is not None:
            self.held.append(item)
            return []
        return [item]

    async def _release(self) -> list[TextChunk]:
        """The held text, now that the tools are seen to reach the model (checked, no probe)."""
        await openai_ignored.check(self.provider, self.kwargs, True, 0)
        held, self.held = self.held or [], None
        return held
