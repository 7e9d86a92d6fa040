"""Replay: a Provider that answers each request with the recorded reply, in order.

:func:`replay` takes a :class:`~agentnb.RunResult`, a saved transcript's path or a cassette
(:mod:`agentnb.timetravel.cassette`). Each request is checked against the recorded one in its
canonical form (:mod:`agentnb.timetravel.canonical`); a difference raises
:class:`ReplayMismatch` naming the step and the first differing field. Only the model is
replaced: the tools run as usual, they are the code under test.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> first = Agent(ScriptedProvider([call("add", a=2, b=3), "5"]), tools=[add]).run("2 + 3?")
>>> again = Agent(replay(first), tools=[add]).run("2 + 3?")
>>> again.output, again.messages[2].content
('5', '5')
>>> Agent(replay(first), tools=[add]).run("2 + 4?")
Traceback (most recent call last):
...
agentnb.timetravel.mismatch.ReplayMismatch: replay step 0: the request differs from the recorded one at messages[0].content
  recorded: '2 + 3?'
  now:      '2 + 4?'
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentnb.providers.base import Chunk, Completion, Provider, Request
from agentnb.providers.window import Window
from agentnb.timetravel.canonical import canonical_message, canonical_messages, first_difference, short
from agentnb.timetravel.load import as_result
from agentnb.timetravel.mismatch import ReplayMismatch
from agentnb.timetravel.recording import Step, recorded_steps
from agentnb.tracing.redact import Redactor, scrub


class ReplayProvider(Provider):
    """Answers from a recording (see :func:`replay`); ``position`` is the next step to answer.

    A request equal to the recording's first one starts the replay over, so a run that was
    stopped half way can be replayed again with the same provider.
    """

    name = "replay"
    supports_native_tools = True
    supports_streaming = True
    in_process = True  # a replay costs nothing
    answers_summaries = True  # a compaction's summariser is answered from the recording too

    def __init__(
        self,
        steps: list[Step],
        messages: list[dict[str, Any]],
        label: str = "replay",
        output: Any = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.steps = [s for s in steps if s.completion is not None or s.refused is not None]
        #: a saved transcript holds no secret: each request is compared as it would be saved
        self.redact = redact
        self.messages = scrub(messages, redact) if redact is not None else messages  # the recording's, canonical
        #: the recorded run's output schema (None: a text answer, or not known: a loaded transcript)
        self.output = output
        self.position = 0
        self.label = label
        self._seen: Any = None  # the message list checked last, and how far
        self._seen_n = 0
        #: the window the recorded run compacted with (None: not known from the recording)
        self.window: int | None = None
        #: ``(depth, text)`` of the messages a person sent the recorded run (its inbox): a run
        #: with this provider reads them at the same steps (agentnb.run.steer), so requests match.
        self.interjections: tuple[tuple[int, str], ...] = ()

    def __repr__(self) -> str:
        return f"ReplayProvider({self.label!r}, steps={len(self.steps)})"

    async def find_context_window(self) -> Window:
        """The window the recording compacted with (so that the replay compacts where it did)."""
        return Window(self.window, "recording") if self.window is not None else await super().find_context_window()

    async def complete(self, request: Request) -> Completion:
        step = self._answer(request)
        assert step.completion is not None
        return step.completion

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:  # type: ignore[override]
        step = self._answer(request)
        if step.chunks:
            for chunk in step.chunks:
                yield chunk
        elif step.completion is not None and step.completion.text:
            from agentnb.providers.base import TextChunk

            yield TextChunk(step.completion.text)
        assert step.completion is not None
        yield step.completion

    def _answer(self, request: Request) -> Step:
        i, steps = self.position, self.steps
        if i < len(steps):
            found = self._differs(steps[i], request, full=i == 0)
        else:
            found = ("steps", f"(the recording has {len(steps)} model steps)", short(_last_text(request)))
        if found is not None and i and steps and self._differs(steps[0], request, full=True) is None:
            i, found = 0, None  # the same first request: a new run of the same recording
        if found is not None:
            raise ReplayMismatch(steps[i].depth if i < len(steps) else i, *found)
        self.position = i + 1
        if steps[i].refused is not None:  # the server refused it as too long: so does the replay
            from agentnb.errors import ProviderError

            raise ProviderError(f"{self.label} (recorded) refused the request (400): {steps[i].refused}", status=400)
        return steps[i]

    def _differs(self, step: Step, request: Request, full: bool = False) -> tuple[str, str, str] | None:
        """The first difference of ``request`` from ``step``'s recorded request, or None."""
        if self.output is not None and not (step.sent is not None and step.n_messages == 0):  # not a summary's
            schema = request.output.schema if request.output is not None else None
            if schema != self.output:
                return "output", short(self.output), short(schema)
        names = tuple(t.name if self.redact is None else self.redact(t.name) for t in request.tools)
        if names != step.tools:
            return "tools", short(list(step.tools)), short(list(names))
        if request.tool_choice != step.tool_choice:
            return "tool_choice", short(step.tool_choice), short(request.tool_choice)
        msgs = request.messages
        if step.sent is not None:  # a compacted request, or a summariser's: compared whole
            now = canonical_messages(msgs) if self.redact is None else scrub(canonical_messages(msgs), self.redact)
            want_sent = list(step.sent) if self.redact is None else scrub(list(step.sent), self.redact)
            found = first_difference(want_sent, now, "messages")
            self._seen = None
            return found
        items = getattr(msgs, "_items", None)
        # The loop's requests are views of one growing list: what was checked stays checked.
        start = self._seen_n if not full and items is not None and items is self._seen else 0
        start = min(start, len(msgs), step.n_messages)
        want = self.messages
        for j in range(start, min(len(msgs), step.n_messages)):
            mine = canonical_message(msgs[j]) if self.redact is None else scrub(canonical_message(msgs[j]), self.redact)
            if mine != want[j]:
                where, a, b = first_difference(want[j], mine, f"messages[{j}]") or (f"messages[{j}]", "", "")
                return where, a, b
        if len(msgs) != step.n_messages:
            j = min(len(msgs), step.n_messages)
            rec = short(want[j]) if j < step.n_messages else f"(none: {step.n_messages} messages)"
            now = short(canonical_message(msgs[j])) if j < len(msgs) else f"(none: {len(msgs)} messages)"
            return f"messages[{j}]", rec, now
        self._seen, self._seen_n = items, len(msgs)
        return None


def _last_text(request: Request) -> Any:
    return canonical_message(request.messages[-1]) if request.messages else "(no messages)"


def replay(source: Any) -> Provider:
    """A Provider answering with the replies recorded in ``source``, in order.

    ``source``: a :class:`~agentnb.RunResult`, a saved transcript's path, or a cassette (a
    :class:`~agentnb.timetravel.cassette.Cassette` or a cassette file's path; its replies are
    found by request, not by order). A transcript from another agentnb version, or a corrupt
    one, raises :class:`~agentnb.errors.TranscriptError` naming what is wrong.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> first = Agent(ScriptedProvider(["Bonjour."])).run("Say hello in French.")
    >>> Agent(replay(first)).run("Say hello in French.").output
    'Bonjour.'
    """
    from agentnb.timetravel.cassette import Cassette, CassetteProvider, is_cassette

    if isinstance(source, Cassette):
        return CassetteProvider(None, source)
    if isinstance(source, (str, os.PathLike)) and is_cassette(source):
        return CassetteProvider(None, Cassette(source, mode="replay"))
    result = as_result(source)
    saved = isinstance(source, (str, os.PathLike))
    label = os.fspath(source) if saved else "RunResult"
    spec = getattr(result, "output_spec", None)
    output = spec.schema if spec is not None else None
    redact = Redactor().redact if saved else None  # a saved transcript's secrets are ``***``
    provider = ReplayProvider(
        recorded_steps(result, requests=True), canonical_messages(result.messages), label, output, redact
    )
    first = next((e for e in result.events if e.kind == "context_compacted"), None)
    if first is not None and not first.reason.startswith("overflow"):  # known before: known again
        provider.window = first.window
    provider.interjections = tuple((e.depth, e.text) for e in result.events if e.kind == "user_interjected")
    return provider
