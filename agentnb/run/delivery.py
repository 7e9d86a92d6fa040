"""How a run's events reach its caller, and what a stop or a failure on the way leaves behind.

:meth:`Agent.stream <agentnb.run.agent.Agent.stream>` yields its events, or (for ``arun``)
gives them to a callback, the sink. These helpers are the parts of that delivery where a stop
or an error changes what happens: the opening events, the end of a cancelled or failed run,
and the last event.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from time import perf_counter
from typing import Any

from agentnb.errors import StopRun
from agentnb.events import Event, RunFinished
from agentnb.run.result import RunResult
from agentnb.run.runinfo import discard, result_of
from agentnb.run.state import RunState
from agentnb.run.stopped import settle

Sink = Callable[[Event], Any]


def opening_stops(sink: Sink, event: Event) -> bool:
    """Give an opening event (``run_started``, a session's notes) to the sink; True if it stops the run."""
    try:
        sink(event)
    except StopRun:
        return True
    return False


def stopped(state: RunState, max_result_chars: int | None, watch: Any, sink: Sink | None, exc: BaseException) -> Any:
    """End a stopped or cancelled run: keep what its step did; the ``CancelledError`` to re-raise, if any."""
    state.stop_reason = "cancelled"
    # The interrupted step keeps what it did: the model's turn, finished results, and
    # a note for each call that did not run; tool_calls counts the calls handled.
    late = settle(state, max_result_chars, watch)
    if sink is not None:
        with contextlib.suppress(StopRun):  # the callback that stopped the run sees them
            for event in late:
                sink(event)
    return exc if isinstance(exc, asyncio.CancelledError) else None


def failed(state: RunState, max_result_chars: int | None, watch: Any, exc: BaseException) -> list[Event]:
    """End a run a provider (or a callback) failed: keep its step; the provider's notes to report."""
    state.stop_reason = "error"
    # an error mid-step (an on_event callback that raised after a tool ran) keeps what
    # the step did, as a stop does
    settle(state, max_result_chars, watch)
    notes = []
    for note in getattr(exc, "events", ()):  # what the provider did before it failed (retries)
        note = dataclasses.replace(note, depth=state.events[-1].depth)
        state.events.append(note)
        notes.append(note)
    if exc.__suppress_context__:  # "raise ... from None": the hidden SDK error can hold
        exc.__context__ = None  # the API key; result.exception must not keep it
    return notes


def finished(
    state: RunState,
    start: float,
    error: BaseException | None,
    output: Any,
    watch: Any,
    agent: Any = None,
    limits: Any = None,
) -> tuple[RunFinished, RunResult]:
    """The run's last event, recorded and shown to the watchers, and its result; ``limits``
    (the run's :class:`~agentnb.UsageLimits`): every budget it went past is on the event."""
    from agentnb.run.budget import overrun

    depth = state.events[-1].depth
    reason = state.stop_reason or "cancelled"
    message = f"{type(error).__name__}: {error}" if error is not None else None
    took = perf_counter() - start
    over = overrun(limits, state.usage, took)
    end = RunFinished(
        depth, reason, state.tool_calls, state.usage, took, message, overrun=over, without_tools=state.without_tools
    )
    state.events.append(end)
    result = result_of(state, end, error, output, agent)
    if watch is not None:
        watch(end)
        take = getattr(watch, "take_run_result", None)
        if take is not None:  # a watcher that keeps the result (agentnb.runstore)
            take(result)
    return end, result


def deliver_end(sink: Sink, end: RunFinished, result: RunResult) -> None:
    """Give the last event to the sink; a failure there keeps the result on the exception.

    A sink with a ``take_run_result`` method (the trace widget) is then handed the result:
    a view fed through ``on_event`` learns the run's messages and agent (to fork it).
    """
    try:
        sink(end)
        take = getattr(sink, "take_run_result", None)
        if take is not None:
            take(result)
    except StopRun:  # the run is over: a stop asked for now changes nothing
        pass
    except Exception as exc:  # the callback failed on the last event: the result is kept
        exc.run_result = result  # type: ignore[attr-defined]
        if hasattr(exc, "add_note"):  # Python >= 3.11
            exc.add_note("agentnb: the run had finished; its RunResult is this exception's run_result")
        raise


def taker(events: list[Event], watch: Callable[[Event], Any] | None, sink: Sink) -> Sink:
    """What takes each event of a run driven by call: the transcript, the watchers, the sink."""
    keep = events.append
    if watch is None and sink is discard:  # nobody listens: the transcript only
        return keep
    if watch is None:

        def take(event: Event) -> None:
            keep(event)
            sink(event)

        return take

    def take_watched(event: Event) -> None:
        keep(event)
        watch(event)
        sink(event)

    return take_watched
