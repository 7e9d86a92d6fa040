"""A conversation over many runs: :class:`Session` (``agent.session()``).

Each run continues the conversation so far. Before a run, a context-window policy may leave
old turns out of what the model reads: whole turns go, oldest first (a turn is one run: its
prompt, tool calls, their results and the answer, so a tool call never loses its result), the
system prompt stays, and the new prompt always goes. What was left out is a
:class:`~agentnb.events.HistoryTrimmed` event of that run (printer, trace widget, spans); the
session itself keeps every message. Sessions save to and load from a JSON file (atomic write;
a damaged file raises :class:`~agentnb.errors.TranscriptError` naming what is wrong).

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> chat = Session(Agent(ScriptedProvider(["one", "two", "three"])), max_messages=3)
>>> _ = chat.run("a"); _ = chat.run("b"); r = chat.run("c")
>>> [m.content for m in chat.messages], chat.turns
(['a', 'one', 'b', 'two', 'c', 'three'], 3)
>>> [e.dropped_turns for e in r.events if e.kind == "history_trimmed"]
[1]
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

from agentnb.context.compaction import Compaction, as_sent, check_context, saved_context, sent_messages
from agentnb.context.gauge import conversation_size
from agentnb.context.size import RequestSize
from agentnb.errors import TranscriptError, UserError
from agentnb.events import Event, HistoryTrimmed
from agentnb.messages import Message, SystemMessage, UserMessage, message_from_dict
from agentnb.run.result import RunResult
from agentnb.run.transcript import write_atomic
from agentnb.tracing.observe import RunLink


class Agent(Protocol):
    """What a session needs of an :class:`agentnb.Agent` (typed here, so that the agent module,
    which imports this one for ``agent.session()``, is not imported back)."""

    @property
    def run(self) -> Callable[..., RunResult]: ...

    @property
    def arun(self) -> Callable[..., Awaitable[RunResult]]: ...

    @property
    def stream(self) -> Callable[..., AsyncIterator[Any]]: ...


SESSION_VERSION = 1


def _no_history(options: dict[str, Any]) -> None:
    if "history" in options:
        raise UserError(
            "a session's runs continue its own conversation: history= is not taken here "
            "(agent.run(prompt, history=...) runs on a history of its own)"
        )


def estimate_tokens(message: Message) -> int:
    """A rough token count (4 characters a token) when no tokenizer is given."""
    text = getattr(message, "content", "") or ""
    calls = getattr(message, "tool_calls", ()) or ()
    return 4 + (len(text) + sum(len(str(c.arguments)) + len(c.name) for c in calls)) // 4


class Session:
    """A conversation with an agent that carries over from run to run.

    Args:
        agent: the agent that answers.
        max_messages: at most this many messages (besides the system prompt) go to the model.
        max_tokens: at most about this many tokens go to the model (``count_tokens`` counts
            them; by default a 4-characters-a-token estimate).
        id: the conversation's id (``gen_ai.conversation.id`` on spans); a new one by default.
        context: a context policy (:class:`agentnb.Compaction`) for this conversation's runs, in
            place of the agent's; a run goes on from the last run's compaction. Saved with the
            conversation (a summariser of its own is named, and must be given again to ``load``).

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> model = ScriptedProvider(["Hello, Ada.", "Your name is Ada."])
    >>> chat = Agent(model).session()
    >>> chat.run("I am Ada.").output
    'Hello, Ada.'
    >>> chat.run("What is my name?").output
    'Your name is Ada.'
    >>> [m.role for m in model.requests[1].messages]  # the second run saw the first
    ['user', 'assistant', 'user']
    """

    def __init__(
        self,
        agent: Agent,
        *,
        max_messages: int | None = None,
        max_tokens: int | None = None,
        count_tokens: Callable[[Message], int] | None = None,
        id: str | None = None,
        context: Compaction | None = None,
    ) -> None:
        for label, bound in (("max_messages", max_messages), ("max_tokens", max_tokens)):
            if bound is not None and (not isinstance(bound, int) or bound < 1):
                raise UserError(f"{label} must be a whole number >= 1 or None, not {bound!r}")
        self.agent = agent
        self.max_messages = max_messages
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens or estimate_tokens
        self.id = id or uuid.uuid4().hex[:16]
        #: The context policy of this conversation's runs (None: the agent's).
        self.compaction = check_context(context)
        #: ``(messages, upto)``: what the last run's compaction sent for the conversation's start.
        self.compacted: tuple[Any, int] | None = None
        self.messages: list[Message] = []  # every message, including the left-out turns
        self.starts: list[int] = []  # where each turn starts in ``messages``
        self.last: RunResult | None = None

    @property
    def turns(self) -> int:
        """How many runs the conversation has had."""
        return len(self.starts)

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, turns={self.turns}, messages={len(self.messages)})"

    def reset(self) -> None:
        """Forget the conversation (the id stays)."""
        self.messages, self.starts, self.last, self.compacted = [], [], None, None

    @property
    def context(self) -> RequestSize | None:
        """The conversation's size so far, against the model's window: the last run's last request
        as measured (:mod:`agentnb.context`) and the answer it got (its reported output tokens,
        else estimated); None before the first run.

        >>> from agentnb import Agent
        >>> from agentnb.testing import ScriptedProvider
        >>> chat = Agent(ScriptedProvider(["Hello, Ada."]), context_window=2048).session()
        >>> _ = chat.run("I am Ada.")
        >>> str(chat.context)
        'context ~13 / 2k (1%)'
        """
        return conversation_size(self.last)

    # -- the window ---------------------------------------------------------------------------
    def window(self, prompt: Any = None) -> tuple[list[Message], HistoryTrimmed | None]:
        """The history the next run starts from, and the event saying what was left out.

        ``prompt``: the next run's prompt; a text prompt counts toward ``max_tokens`` too (the
        model reads it beside the history).
        """
        msgs = self.messages
        head: list[Message] = [m for m in msgs[:1] if isinstance(m, SystemMessage)]
        first = len(head)
        starts = [max(s, first) for s in self.starts] or ([first] if msgs else [])
        if not msgs or (self.max_messages is None and self.max_tokens is None):
            return list(msgs), None
        dropped = 0
        # The next prompt adds at least one message: leave room for it.
        new = self.count_tokens(UserMessage(prompt)) if isinstance(prompt, str) and self.max_tokens else 0
        while dropped < len(starts) and not self._fits(head, msgs[starts[dropped] :], new):
            dropped += 1
        if dropped == 0:
            return list(msgs), None
        kept = head + msgs[starts[dropped] :] if dropped < len(starts) else head
        reason = ", ".join(
            f"{k}={v}" for k, v in (("max_messages", self.max_messages), ("max_tokens", self.max_tokens)) if v
        )
        note = HistoryTrimmed(0, dropped, len(msgs) - len(kept), len(kept), reason)
        return kept, note

    def _fits(self, head: list[Message], body: list[Message], new: int = 0) -> bool:
        if self.max_messages is not None and len(body) + 1 > self.max_messages:
            return False
        if self.max_tokens is not None:
            return new + sum(self.count_tokens(m) for m in head + body) <= self.max_tokens
        return True

    def prepare(self, prompt: Any = None) -> tuple[list[Message] | None, RunLink]:
        """For a run made by other code (the magics, the debugger): the ``history`` to give
        :meth:`agentnb.Agent.arun` (for the run's ``prompt``) and the link (``_link=``) that makes
        it this conversation's next turn. Hand the result to :meth:`record` afterwards."""
        history, note = self.window(prompt)
        compacted = self.compacted if note is None else None  # it stands for the whole history's start
        link = RunLink(
            conversation_id=self.id,
            turn=self.turns + 1,
            notes=(note,) if note else (),
            context=self.compaction,
            compacted=compacted,
        )
        return (history if self.messages else None), link  # None: the agent adds its system prompt

    def record(self, history: list[Message] | None, result: RunResult) -> RunResult:
        """Add a run's new messages (those after ``history``) to the conversation."""
        fresh = not self.messages
        new = list(result.messages[0 if fresh else len(history or ()) :])
        self.starts.append(len(self.messages) + (1 if fresh and _system_first(new) else 0))
        whole = len(history or ()) == len(self.messages)  # the run read the whole conversation
        self.messages.extend(new)
        self.last = result
        last = next((e for e in reversed(result.events) if e.kind == "context_compacted"), None)
        if last is not None:
            self.compacted = (tuple(sent_messages(last.messages, result.messages)), last.upto) if whole else None
        return result

    # -- runs ---------------------------------------------------------------------------------
    async def arun(self, prompt: Any, **options: Any) -> RunResult:
        """:meth:`agentnb.Agent.arun` continuing this conversation (same options)."""
        _no_history(options)
        history, link = self.prepare(prompt)
        return self.record(history, await self.agent.arun(prompt, history=history, _link=link, **options))

    def run(self, prompt: Any, **options: Any) -> RunResult:
        """:meth:`agentnb.Agent.run` continuing this conversation (same options)."""
        _no_history(options)
        history, link = self.prepare(prompt)
        return self.record(history, self.agent.run(prompt, history=history, _link=link, **options))

    async def stream(self, prompt: Any, **options: Any) -> AsyncIterator[Event | RunResult]:
        """:meth:`agentnb.Agent.stream` continuing this conversation; the last item is the result."""
        _no_history(options)
        history, link = self.prepare(prompt)
        async for item in self.agent.stream(prompt, history=history, _link=link, **options):
            if isinstance(item, RunResult):
                item = self.record(history, item)
            yield item

    # -- files --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The conversation as JSON data, secrets redacted (:mod:`agentnb.tracing.redact`)."""
        from agentnb.tracing.redact import Redactor

        return {
            "version": SESSION_VERSION,
            "kind": "agentnb.run.session",
            "id": self.id,
            "turn_starts": list(self.starts),
            "messages": Redactor().scrub([m.to_dict() for m in self.messages]),
            "context": self.compaction.to_dict() if self.compaction is not None else None,
            "compacted": None
            if self.compacted is None
            else {
                "messages": Redactor().scrub(list(as_sent(self.compacted[0], self.messages))),
                "upto": self.compacted[1],
            },
        }

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the conversation to ``path`` (JSON, through a temporary file and a rename)."""
        write_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str], agent: Agent, **options: Any) -> Session:
        """A session continuing the conversation saved at ``path`` with ``agent``.

        >>> import os, tempfile
        >>> from agentnb import Agent
        >>> from agentnb.testing import ScriptedProvider
        >>> chat = Agent(ScriptedProvider(["Hi Ada."])).session()
        >>> _ = chat.run("I am Ada.")
        >>> path = os.path.join(tempfile.mkdtemp(), "chat.json")
        >>> chat.save(path)
        >>> again = Session.load(path, Agent(ScriptedProvider(["You are Ada."])))
        >>> again.id == chat.id, again.run("Who am I?").output, again.turns
        (True, 'You are Ada.', 2)
        """
        from agentnb.run.transcript import read_json

        where = os.fspath(path)
        data = read_json(where)
        try:
            ident, messages, starts = _read_session(data)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise TranscriptError(f"{where}: {_reason(exc)}") from None
        try:
            context, compacted = saved_context(data, options.get("context"), messages)
        except (ValueError, TypeError, KeyError, AttributeError, UserError) as exc:
            raise TranscriptError(f"{where}: {_reason(exc)}") from None
        session = cls(agent, id=ident, **{"context": context, **options})
        session.messages, session.starts, session.compacted = messages, starts, compacted
        return session


def _read_session(data: Any) -> tuple[str | None, list[Message], list[int]]:
    """The id, messages and turn starts of a saved session's JSON, checked field by field."""
    from agentnb.messages.types import typed
    from agentnb.run.transcript import each_at

    if not isinstance(data, dict) or data.get("kind") != "agentnb.run.session":
        raise ValueError('not a saved session (no "kind": "agentnb.run.session")')
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version != SESSION_VERSION:
        raise ValueError(f"session version {version!r:.40} is not supported (this agentnb reads {SESSION_VERSION})")
    ident = typed(data, "id", (str, type(None)), None)
    messages = each_at("messages", typed(data, "messages", list), message_from_dict)
    starts = typed(data, "turn_starts", list)
    for i, s in enumerate(starts):
        if not isinstance(s, int) or isinstance(s, bool):
            raise ValueError(f"turn_starts[{i}] must be int, not {type(s).__name__}")
        if not 0 <= s < max(len(messages), 1) or (i and s < starts[i - 1]):
            raise ValueError(f"turn_starts[{i}] = {s} does not fit the {len(messages)} messages")
    return ident or None, messages, starts


def _reason(exc: BaseException) -> str:
    return f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) and exc.args else str(exc)


def _system_first(messages: list[Message]) -> bool:
    return bool(messages) and isinstance(messages[0], SystemMessage)
