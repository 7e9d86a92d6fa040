"""The core: ask the model, run the tools it asks for, append the results, ask again.

One async generator, :func:`run_loop`, yields typed events and renders nothing (:func:`drive`
is its twin that hands each event to a callback). Its body, :func:`steps`, is the list of phases
of a step (:mod:`agentnb.run.phases`), each a function that emits the events of what it decided
and leaves its outcome in the :class:`~agentnb.run.state.LoopState`; a phase that waits (for the
model, a tool or a person) is a coroutine that awaits it. It is
written as a loop over recursion depths (depth ``d`` is the ``d``-th model call of the run)
rather than as literal recursion, so long runs cannot hit Python's recursion limit.

Limit semantics (one name, one default): ``max_tool_calls`` counts every tool call the model
asks for that the loop *handles* -- executed, or answered with an error because the tool was
unknown, the arguments were invalid, or the call was a repeat. At most that many are handled;
once the count reaches the limit the model is asked once more with no tools and must answer in
text. Calls beyond the budget in the same turn are answered "not executed".
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from agentnb.events import Event
from agentnb.run.phases import (
    ANSWER_NOW,
    append,
    approve,
    ask,
    decide,
    deduplicate,
    end,
    execute,
    pending_calls,
    schedule,
)
from agentnb.run.state import (
    ATTACHMENT_NOTE,
    FLUSH,
    LoopConfig,
    LoopState,
    RunState,
    StepController,
    ToolDecision,
)

__all__ = [
    "ANSWER_NOW",
    "ATTACHMENT_NOTE",
    "EventCallback",
    "LoopConfig",
    "RunState",
    "StepController",
    "ToolDecision",
    "drive",
    "run_loop",
    "steps",
]


async def steps(run: LoopState) -> None:
    """The phases of each step, in order, until one of them ends the run: the loop's body.

    ``await`` marks a phase that may wait (for the model, a tool or a person).
    """
    gated = run.cfg.approval is not None
    while True:
        await ask(run)  # a request left? what is offered; the model's reply
        if run.over:
            return
        if not run.offer or not run.calls:
            end(run)  # the answer, or one more request
            if run.over:
                return
            continue
        for call in pending_calls(run):  # each call in order, until a phase settles it
            await decide(run, call)
            if call.plan is None:
                deduplicate(run, call)
            if call.plan is None and gated:
                await approve(run, call)
            schedule(run, call)
        await execute(run)  # the scheduled calls run
        append(run)  # what the model reads next; a direct output ends here
        if run.over:
            return
        run.depth += 1


async def drive(cfg: LoopConfig, state: RunState, sink: Callable[[Event], Any]) -> None:
    """Run the phases to the run's end, each event handed to ``sink`` as it is emitted (arun's).

    An exception the sink raises ends the run where the phase emitted the event, and
    propagates, as when the consumer of :func:`run_loop` raises.
    """
    await steps(LoopState(cfg, state, sink))


async def run_loop(cfg: LoopConfig, state: RunState) -> AsyncIterator[Event]:
    """Drive one run to its end, yielding every event; results accumulate in ``state``.

    The body (:func:`steps`) runs in the consumer's task, stepped here as asyncio's task would
    step it: what it awaits is awaited here, and before each wait the events it said come out
    (:func:`~agentnb.run.state.said_so_far`), so that the consumer sees each event before what
    it announces begins. A consumer that leaves cancels the body where it waits.
    """
    said: list[Event] = []
    body = steps(LoopState(cfg, state, said.append, said))
    thrown: BaseException | None = None
    done = False
    try:
        while True:
            try:
                waited = body.send(None) if thrown is None else body.throw(thrown)
            except StopIteration:
                done = True
                waited = None
            except BaseException:  # the run failed or was stopped: the body has ended
                done = True
                raise
            finally:  # what was said comes out before anything is awaited or raised
                thrown = None
                if said:
                    events = said.copy()
                    said.clear()
                    for event in events:
                        yield event
            if done:
                return
            if waited is FLUSH:
                continue
            try:
                await _waiting_on(waited)
            except BaseException as exc:  # thrown into the body where it waits
                thrown = exc
    finally:
        if not done:
            await _abandon(body)


async def _waiting_on(waited: Any) -> None:
    """Await what the body yielded to the task: a future, or None (it lets the loop run once)."""
    if waited is None:
        await asyncio.sleep(0)
    else:  # as asyncio's task does with what its coroutine yields: the future is ours to await
        waited._asyncio_future_blocking = False
        await waited


async def _abandon(body: Coroutine[Any, Any, None]) -> None:
    """Cancel a body that has not ended where it waits, and let it end (its cleanup may await)."""
    thrown: BaseException | None = asyncio.CancelledError()
    while True:
        try:
            waited = body.throw(thrown) if thrown is not None else body.send(None)
        except (StopIteration, asyncio.CancelledError, GeneratorExit, Exception):
            return  # ended (a failure while it cleans up is not the consumer's to see)
        thrown = None
        if waited is not FLUSH:
            try:
                await _waiting_on(waited)
            except BaseException as exc:
                thrown = exc


EventCallback = Callable[[Event], Any]
