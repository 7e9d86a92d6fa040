"""Compaction: what a request leaves out so that it fits the model's context window.

A :class:`Compaction` policy, given to an agent (``Agent(..., context=Compaction(at=0.8))``) or a
session, is read by the loop before each model request (:mod:`agentnb.run.phases.compact`). When
the request would pass ``at`` of the window, the cheapest steps come first, each only while the
request is still larger than ``to`` of the window:

1. ``clear``: the oldest tool results are replaced by a marker that names the tool, the call and
   how much was cut (the model can call the tool again);
2. ``drop``: the oldest turns are left out, whole (a call never without its result); the system
   prompt and the first user message always stay, and so does the newest step;
3. ``summarize``: what was dropped is summarised by a model (the agent's own, or ``summarizer``)
   with ``prompt``, and the summary takes its place. A summariser that fails, hangs past
   ``timeout`` or says nothing leaves the drop as it was (the event says why).

Nothing here talks to a model: :func:`shrink` plans steps 1 and 2 on a list of messages with a
token counter, and :func:`with_summary` puts a summary in.

>>> from agentnb.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
>>> msgs = [SystemMessage("Be brief."), UserMessage("Read the files.")]
>>> for i in range(3):
...     msgs += [AssistantMessage(None, (ToolCall(f"c{i}", "read", {"n": i}),)), ToolMessage(f"c{i}", "read", "x" * 300)]
>>> count = lambda ms: sum(len(getattr(m, "content", None) or "") for m in ms) // 3
>>> cut = shrink(msgs, count, goal=200, policy=Compaction())
>>> cut.steps, [c[0] for c in cut.cleared], count(cut.messages) <= 200
(('clear',), ['c0', 'c1'], True)
>>> cut.messages[3].content
'[Result of read (call c0) cleared to fit the context window: 300 characters cut; call read again if you need it.]'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage

#: What the summariser is asked, unless the policy gives its own prompt.
DEFAULT_PROMPT = (
    "You summarise the earlier part of an agent's conversation so that the agent can go on without "
    "it. Keep every fact, number, name, file and decision the agent may still need, what each tool "
    "call found, and what is left to do. Write plain sentences, at most about 200 words."
)
#: The first line of the message that carries a summary (the model reads it as the user's).
SUMMARY_HEAD = "[Summary of the earlier steps, written to fit the context window]"
_CLEARED = " cleared to fit the context window: "


@dataclass(frozen=True)
class Compaction:
    """A context policy: keep each request under ``at`` of the model's window (see the module).

    Args:
        at: compact a request larger than this share of the window (0 < at <= 1).
        to: compact it down to this share (0 < to <= at), so that the next steps have room.
        clear: replace old tool results with a marker.
        drop: leave the oldest turns out.
        summarize: summarise what was dropped (default: when a ``summarizer`` is given).
        summarizer: the provider (or spec) that summarises; default the agent's own.
        prompt: the summariser's instructions (default :data:`DEFAULT_PROMPT`).
        keep: the newest turns never touched (at least 1: the step the model is answering).
        timeout: seconds the summariser may take; then the drop stands.
        summary_tokens: the most tokens the summary may take.

    >>> Compaction(at=0.8).steps
    ('clear', 'drop')
    >>> Compaction(summarize=True).steps
    ('clear', 'drop', 'summarize')
    >>> Compaction(at=0.5, to=0.7)
    Traceback (most recent call last):
    ...
    agentnb.errors.UserError: Compaction(to=0.7) must be > 0 and <= at (0.5)
    """

    at: float = 0.8
    to: float = 0.5
    clear: bool = True
    drop: bool = True
    summarize: bool | None = None
    summarizer: Any = None
    prompt: str = field(default=DEFAULT_PROMPT, repr=False)
    keep: int = 1
    timeout: float = 60.0
    summary_tokens: int = 512

    def __post_init__(self) -> None:
        for name in ("at", "to", "timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise UserError(f"Compaction({name}=...) must be a number, not {value!r:.60}")
        if not 0 < self.at <= 1:
            raise UserError(f"Compaction(at={self.at}) must be > 0 and <= 1 (a share of the window)")
        if not 0 < self.to <= self.at:
            raise UserError(f"Compaction(to={self.to}) must be > 0 and <= at ({self.at})")
        for name in ("keep", "summary_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UserError(f"Compaction({name}=...) must be a whole number >= 1, not {value!r:.60}")
        if self.timeout <= 0:
            raise UserError(f"Compaction(timeout={self.timeout}) must be > 0 seconds")
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise UserError("Compaction(prompt=...) must be a non-empty text")
        if self.summarizer is not None and not hasattr(self.summarizer, "complete"):
            from agentnb.providers import get_provider

            object.__setattr__(self, "summarizer", get_provider(self.summarizer))
        if self.summarize is None:
            object.__setattr__(self, "summarize", self.summarizer is not None)

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps this policy may take, cheapest first."""
        on = (("clear", self.clear), ("drop", self.drop), ("summarize", bool(self.summarize) and self.drop))
        return tuple(name for name, yes in on if yes)

    def to_dict(self) -> dict[str, Any]:
        """The policy as JSON data (a session's file); the summariser by its name only.

        >>> Compaction(at=0.9).to_dict()["at"]
        0.9
        """
        out = {k: getattr(self, k) for k in ("at", "to", "clear", "drop", "summarize", "prompt", "keep", "timeout")}
        out["summary_tokens"] = self.summary_tokens
        out["summarizer"] = None if self.summarizer is None else repr(self.summarizer)
        return out


def as_sent(messages: Sequence[Message], history: Sequence[Message]) -> tuple[dict[str, Any], ...]:
    """``messages`` as a :class:`~agentnb.events.ContextCompacted` event holds them: a message of
    the run's ``history`` as ``{"history": index}`` (the transcript has it already), any other
    (a marker, a summary) whole. :func:`sent_messages` reads them back.

    >>> h = [UserMessage("hi"), AssistantMessage("hello")]
    >>> as_sent([h[0], UserMessage("[summary]")], h)
    ({'history': 0}, {'role': 'user', 'content': '[summary]'})
    >>> [m.content for m in sent_messages(as_sent([h[0], UserMessage("[summary]")], h), h)]
    ['hi', '[summary]']
    """
    where = {id(m): j for j, m in enumerate(history)}
    return tuple({"history": where[id(m)]} if id(m) in where else m.to_dict() for m in messages)


def sent_messages(held: Sequence[Any], history: Sequence[Message]) -> list[Message]:
    """The messages a compaction event holds (:func:`as_sent`), read against the run's history;
    a reference that is not there raises ``ValueError`` saying so."""
    from agentnb.messages import message_from_dict

    out: list[Message] = []
    for d in held:
        if not isinstance(d, dict):
            out.append(d)  # a message already
        elif "role" in d:
            out.append(message_from_dict(d))
        else:
            j = d.get("history")
            if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < len(history):
                raise ValueError(f"a compaction refers to message {j!r:.20}, not one of the {len(history)} messages")
            out.append(history[j])
    return out


def check_context(value: Any) -> Compaction | None:
    """``value`` as an agent's or a session's context policy (a :class:`Compaction` or None).

    >>> check_context("compact")
    Traceback (most recent call last):
    ...
    agentnb.errors.UserError: context= takes an agentnb.Compaction(...) or None, not str
    """
    if value is None or isinstance(value, Compaction):
        return value
    raise UserError(f"context= takes an agentnb.Compaction(...) or None, not {type(value).__name__}")


def saved_context(data: dict[str, Any], given: Any, history: Sequence[Message]) -> tuple[Any, tuple[Any, int] | None]:
    """A saved session's policy and compacted start (``data``: its JSON). A policy given to the
    load wins; a saved one that had a summariser of its own cannot be rebuilt from a file (a
    provider is not data): :class:`~agentnb.errors.UserError` says to give it.

    >>> saved_context({"context": Compaction(at=0.9).to_dict()}, None, [])[0].at
    0.9
    """
    policy, compacted = data.get("context"), data.get("compacted")
    if policy is not None and given is None:
        if not isinstance(policy, dict):
            raise ValueError(f"'context' must be a JSON object, not {type(policy).__name__}")
        named = policy.get("summarizer")
        if named is not None:
            raise UserError(
                f"the saved session compacted with its own summariser ({str(named)[:80]}), which a file "
                "cannot hold: load it with context=agentnb.Compaction(..., summarizer=...)"
            )
        fields = {
            k: policy[k] for k in ("at", "to", "clear", "drop", "summarize", "prompt", "keep", "timeout") if k in policy
        }
        given = Compaction(**fields, summary_tokens=policy.get("summary_tokens", 512))
    if compacted is not None:
        upto = compacted.get("upto") if isinstance(compacted, dict) else None
        msgs = compacted.get("messages") if isinstance(compacted, dict) else None
        n = len(history)
        if not isinstance(upto, int) or isinstance(upto, bool) or not 0 <= upto <= n or not isinstance(msgs, list):
            raise ValueError(f"'compacted' must hold messages and an upto within the {n} messages")
        compacted = (tuple(sent_messages(msgs, history)), upto)
    return given, compacted


@dataclass
class Shrunk:
    """What :func:`shrink` made of a request's messages: the new list, and what went."""

    messages: list[Message]
    steps: tuple[str, ...] = ()
    cleared: list[tuple[str, str, int]] = field(default_factory=list)
    dropped: list[Message] = field(default_factory=list)
    #: where the dropped turns were (a summary goes there)
    at: int = 0
    tokens: int = 0


def head_end(messages: Sequence[Message]) -> int:
    """How many messages at the start always stay: the system prompt and the first user message.

    >>> head_end([SystemMessage("s"), UserMessage("u"), AssistantMessage("a")])
    2
    """
    for i, m in enumerate(messages):
        if isinstance(m, UserMessage):
            return i + 1
        if not isinstance(m, SystemMessage):
            return i
    return len(messages)


def turns(messages: Sequence[Message], start: int) -> list[tuple[int, int]]:
    """The turns of ``messages[start:]`` as ``(first, end)`` ranges: a model turn with the results
    of its calls (and the message that attaches their images), or one user message."""
    out: list[tuple[int, int]] = []
    i, n = start, len(messages)
    while i < n:
        j = i + 1
        if isinstance(messages[i], AssistantMessage):
            while j < n and (isinstance(messages[j], ToolMessage) or _attachment(messages, j)):
                j += 1
        out.append((i, j))
        i = j
    return out


def _attachment(messages: Sequence[Message], j: int) -> bool:
    m = messages[j]
    return isinstance(m, UserMessage) and bool(m.images) and isinstance(messages[j - 1], ToolMessage)


def marker(m: ToolMessage) -> str:
    """The text that stands for a cleared tool result."""
    return (
        f"[Result of {m.name} (call {m.tool_call_id}){_CLEARED}{len(m.content):,} characters cut; "
        f"call {m.name} again if you need it.]"
    )


def is_cleared(m: Message) -> bool:
    """Whether ``m`` is a tool result already cleared."""
    return isinstance(m, ToolMessage) and m.content.startswith("[Result of ") and _CLEARED in m.content


def shrink(messages: Sequence[Message], count: Callable[[list[Message]], int], goal: int, policy: Compaction) -> Shrunk:
    """Steps 1 and 2 of the policy on ``messages``, each only while they count more than ``goal``
    tokens; the newest ``policy.keep`` turns and the head (:func:`head_end`) stay as they are."""
    msgs = list(messages)
    out = Shrunk(msgs, tokens=count(msgs))
    head = head_end(msgs)
    units = turns(msgs, head)
    older = units[: max(0, len(units) - policy.keep)]
    if out.tokens > goal and policy.clear:
        _clear(out, older, count, goal)
    if out.tokens > goal and policy.drop and older:
        _drop(out, head, older, count, goal)
    return out


def _clear(out: Shrunk, older: list[tuple[int, int]], count: Callable[[list[Message]], int], goal: int) -> None:
    msgs = out.messages
    todo = [j for a, b in older for j in range(a, b) if isinstance(msgs[j], ToolMessage) and not is_cleared(msgs[j])]
    rate = out.tokens / max(1, _chars(msgs))  # tokens a character, as the counter counts this request
    while todo and out.tokens > goal:
        guess = out.tokens
        while todo and guess > goal:  # clear about enough, then count again
            j = todo.pop(0)
            m = msgs[j]
            assert isinstance(m, ToolMessage)
            short = ToolMessage(m.tool_call_id, m.name, marker(m), m.is_error)
            guess -= int((len(m.content) - len(short.content)) * rate)
            msgs[j] = short
            out.cleared.append((m.tool_call_id, m.name, len(m.content)))
        out.tokens = count(msgs)
    if out.cleared:
        out.steps += ("clear",)


def _drop(
    out: Shrunk, head: int, older: list[tuple[int, int]], count: Callable[[list[Message]], int], goal: int
) -> None:
    msgs = out.messages
    rate = out.tokens / max(1, _chars(msgs))
    gone = 0  # turns dropped (the oldest first)
    while gone < len(older) and out.tokens > goal:
        guess = out.tokens
        while gone < len(older) and guess > goal:
            a, b = older[gone]
            guess -= int(_chars(msgs[a:b]) * rate) + 1
            gone += 1
        end = older[gone - 1][1]
        kept = msgs[:head] + msgs[end:]
        out.tokens = count(kept)
    if gone:
        end = older[gone - 1][1]
        out.dropped = msgs[head:end]
        out.messages = msgs[:head] + msgs[end:]
        out.at = head
        out.steps += ("drop",)


def with_summary(cut: Shrunk, summary: str, count: Callable[[list[Message]], int], goal: int, keep: int) -> Shrunk:
    """``cut`` with ``summary`` where its dropped turns were; more turns go if it no longer fits
    (never the summary, the head or the newest ``keep`` turns)."""
    note = UserMessage(f"{SUMMARY_HEAD}\n{summary.strip()}")
    msgs = [*cut.messages[: cut.at], note, *cut.messages[cut.at :]]
    done = Shrunk(msgs, (*cut.steps, "summarize"), list(cut.cleared), list(cut.dropped), cut.at, count(msgs))
    units = turns(msgs, cut.at + 1)
    older = units[: max(0, len(units) - keep)]
    gone = 0
    while done.tokens > goal and gone < len(older):
        gone += 1
        end = older[gone - 1][1]
        done.tokens = count(msgs[: cut.at + 1] + msgs[end:])
    if gone:
        end = older[gone - 1][1]
        done.dropped += msgs[cut.at + 1 : end]
        done.messages = msgs[: cut.at + 1] + msgs[end:]
    return done


def _chars(messages: Sequence[Message]) -> int:
    size = 0
    for m in messages:
        size += 16 + len(getattr(m, "content", None) or "")
        for c in getattr(m, "tool_calls", ()) or ():
            size += len(c.name) + len(str(c.arguments))
    return size
