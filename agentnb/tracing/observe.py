"""Who watches runs besides the caller: instrumentation (OpenTelemetry) as an event consumer.

A *watcher* has one method, ``start(first: RunStarted)``, called when a run starts; it returns
a callable that is given every event of that run (``None``: not interested). Watchers come
from two places: :func:`watch` (every run in the process, e.g. :func:`agentnb.instrument`)
and ``Agent(instrument=...)`` (that agent's runs). A run nobody watches pays one ``is None``
test per event.

A handler may also have a ``take_run_result(result)`` method: it is then given the run's
:class:`~agentnb.RunResult` once the run has ended (its last event seen), as the trace widget is
given it by ``on_event`` (:mod:`agentnb.runstore` keeps runs this way).

A run started by another run's tool (an agent used as a tool) is not watched on its own:
its events reach the outer run's watchers inside :class:`~agentnb.events.SubAgentEvent`.

>>> class Count:
...     def __init__(self):
...         self.events = 0
...     def start(self, first):
...         def see(event):
...             self.events += 1
...         return see
>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> counter = Count()
>>> _ = Agent(ScriptedProvider(["hi"]), instrument=counter).run("hello")
>>> counter.events
5
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentnb.events import Event, RunStarted

log = logging.getLogger("agentnb")


class Watcher(Protocol):
    def start(self, first: RunStarted) -> Callable[[Event], Any] | None: ...


_GLOBAL: list[Watcher] = []


def watch(watcher: Watcher) -> Watcher:
    """Watch every run in this process (again a no-op for a watcher already watching)."""
    if not any(w is watcher for w in _GLOBAL):
        _GLOBAL.append(watcher)
    return watcher


def unwatch(watcher: Watcher) -> None:
    """Stop a watcher given to :func:`watch` (a no-op when it is not watching)."""
    _GLOBAL[:] = [w for w in _GLOBAL if w is not watcher]


def watching() -> tuple[Watcher, ...]:
    """The process-wide watchers, in the order they were added."""
    return tuple(_GLOBAL)


@dataclass(frozen=True, slots=True)
class RunLink:
    """How a run relates to others, set by sessions and agent tools (not by users).

    ``conversation_id``: the session the run belongs to; ``max_tool_calls``: a tighter bound
    than the agent's (an inner run gets what its outer run has left); ``nested``: the run is
    an agent tool's, whose events its outer run passes on (so it is not watched alone);
    ``turn``: the run's turn in its conversation; ``notes``: events to emit right after
    ``run_started`` (a session's :class:`~agentnb.events.HistoryTrimmed`); ``ledger``: the
    calling run's :class:`~agentnb.control.limits.Ledger` (an agent tool's run spends its budgets);
    ``seen``: ``(fingerprint, result)`` of the calls made before the run's first step (a fork's
    recorded prefix), so that a repeat of one is answered from it, as in the recorded run;
    ``first_depth``: the depth of the run's first step (a fork's live steps go on from its
    recorded ones), so that every consumer of its events sees the steps numbered alike;
    ``recorded``: ``(call id, fingerprint, message, tool_finished)`` of calls of the first step
    whose results the recording holds (a fork's calls beside the one whose arguments it edits):
    such a call, unchanged, is answered from it and not run; ``whole``: the run's result as its
    caller returns it (a fork's, with its lineage and recorded prefix), which is what a watcher's
    ``take_run_result`` is given.
    """

    conversation_id: str | None = None
    max_tool_calls: int | None = None
    nested: bool = False
    turn: int | None = None
    notes: tuple[Any, ...] = ()
    ledger: Any = None
    seen: tuple[tuple[str, str], ...] = ()
    first_depth: int = 0
    recorded: tuple[tuple[Any, ...], ...] = ()
    #: ``context``: a session's context policy (an :class:`agentnb.Compaction`), in place of the
    #: agent's; ``compacted``: ``(messages, upto)``, a compacted start of the history the run goes
    #: on from (a fork after a compaction, a session's next turn).
    context: Any = None
    compacted: tuple[Any, int] | None = None
    whole: Callable[[Any], Any] | None = None


_VENDORS = {"OpenAIProvider": "openai", "ResponsesProvider": "openai", "AnthropicProvider": "anthropic"}


def vendor_of(provider: Any) -> str:
    """Who serves a provider's model, in OpenTelemetry's ``gen_ai.provider.name`` words.

    >>> from agentnb.testing import ScriptedProvider
    >>> vendor_of(ScriptedProvider(["x"]))
    'scripted'
    """
    while getattr(provider, "inner", None) is not None and type(provider).__name__ == "UnTooled":
        provider = provider.inner
    name = type(provider).__name__
    known = _VENDORS.get(name)
    if known is not None:
        return known
    if name.startswith("Transformers"):
        return "transformers"
    return (name[: -len("Provider")] if name.endswith("Provider") and len(name) > 8 else name).lower()


def watchers_for(own: Sequence[Watcher], first: RunStarted, link: RunLink | None) -> Callable[[Event], None] | None:
    """One callable giving each event to every watcher of this run, or None when none watch."""
    if link is not None and link.nested:
        return None
    every = [*_GLOBAL, *own]
    if not every:
        return None
    seen: list[Callable[[Event], Any]] = []
    for w in every:
        try:
            handler = w.start(first)
        except Exception:  # a broken watcher never breaks a run
            log.exception("agentnb: a run watcher failed to start")
            continue
        if handler is not None:
            seen.append(handler)
    if not seen:
        return None

    only = seen[0]

    def see_one(event: Event) -> None:  # the usual case (one tracer): no loop per event
        try:
            only(event)
        except Exception:
            log.exception("agentnb: a run watcher failed on a %s event", event.kind)

    def see_all(event: Event) -> None:
        for handler in seen:
            try:
                handler(event)
            except Exception:
                log.exception("agentnb: a run watcher failed on a %s event", event.kind)

    see = see_one if len(seen) == 1 else see_all
    takers = [t for t in (getattr(h, "take_run_result", None) for h in seen) if t is not None]
    if takers:  # handlers that also want the finished RunResult (a store of runs)
        see.take_run_result = _taking(takers, link.whole if link is not None else None)  # type: ignore[attr-defined]
    see(first)
    return see


def _taking(takers: list[Callable[[Any], Any]], whole: Callable[[Any], Any] | None) -> Callable[[Any], None]:
    """One callable handing a finished run's result (made ``whole``) to each handler that asked for it."""

    def take(result: Any) -> None:
        try:  # a broken watcher (or fork assembly for one) never breaks a run
            if whole is not None:
                result = whole(result)
        except Exception:
            log.exception("agentnb: a run's result could not be made whole for its watchers")
        for taker in takers:
            try:
                taker(result)
            except Exception:
                log.exception("agentnb: a run watcher failed on a run's result")

    return take
