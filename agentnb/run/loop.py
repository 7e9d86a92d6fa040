"""The core: ask the model, run the tools it asks for, append the results, ask again.

One async generator, :func:`run_loop`, yields typed events and renders nothing (:func:`drive`
is its twin that hands each event to a callback). Its body, :func:`steps`, is the list of phases
of a step (:mod:`agentnb.run.phases`), each a function that emits the events of what it decided
and leaves its outcome in the :class:`~agentnb.run.state.LoopState`; a phase that waits (for the
model, a tool or a person) is a generator that yields what it waits for. It is
written as a loop over recursion depths (depth ``d`` is the ``d``-th model call of the run)
rather than as literal recursion, so long runs cannot hit Python's recursion limit.

Limit semantics (one name, one default): ``max_tool_calls`` counts every tool call the model
asks for that the loop *handles* -- executed, or answered with an error because the tool was
unknown, the arguments were invalid, or the call was a repeat. At most that many are handled;
once the count reaches the limit the model is asked once more with no tools and must answer in
text. Calls beyond the budget in the same turn are answered "not executed".
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator
from contextlib import aclosing
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
    Item,
    LoopConfig,
    LoopState,
    Relay,
    RunState,
    StepController,
    ToolDecision,
    Wait,
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


def steps(run: LoopState) -> Generator[Item, None, None]:
    """The phases of each step, in order, until one of them ends the run: the loop's body.

    ``yield from`` marks a phase that may wait (for the model, a tool or a person).
    """
    gated = run.cfg.approval is not None
    while True:
        yield from ask(run)  # a request left? what is offered; the model's reply
        if run.over:
            return
        if not run.offer or not run.calls:
            end(run)  # the answer, or one more request
            if run.over:
                return
            continue
        for call in pending_calls(run):  # each call in order, until a phase settles it
            yield from decide(run, call)
            if call.plan is None:
                deduplicate(run, call)
            if call.plan is None and gated:
                yield from approve(run, call)
            schedule(run, call)
        yield from execute(run)  # the scheduled calls run
        append(run)  # what the model reads next; a direct output ends here
        if run.over:
            return
        run.depth += 1


async def run_loop(cfg: LoopConfig, state: RunState) -> AsyncIterator[Event]:
    """Drive one run to its end, yielding every event; results accumulate in ``state``.

    The phases (:func:`steps`) are plain generators that emit their events and yield what they
    wait for: the events said so far come out first, then a
    :class:`~agentnb.run.state.Wait` is awaited (what it raises is thrown back into the phase
    that waited) and a :class:`~agentnb.run.state.Relay`'s events are passed on as they come.
    """
    said: list[Event] = []
    phases = steps(LoopState(cfg, state, said.append))
    item: Item | None = None
    thrown: BaseException | None = None
    try:
        while True:
            try:
                item = phases.send(None) if thrown is None else phases.throw(thrown)
            except StopIteration:  # the phases ended the run
                item = None
            finally:  # what they said comes out before anything is awaited or raised
                thrown = None
                if said:
                    for event in said:
                        yield event
                    said.clear()
            if item is None:
                return
            if type(item) is Wait:
                waiting, item = item, None
                try:
                    waiting.result = await waiting.awaitable
                except BaseException as exc:  # the phase may answer it (a stop: say so first)
                    thrown = exc
            else:
                assert type(item) is Relay
                async with aclosing(item.source) as source:  # type: ignore[type-var]
                    async for event in source:
                        yield event
    finally:
        if type(item) is Wait:  # never awaited (the consumer left): no dangling coroutine
            close = getattr(item.awaitable, "close", None)
            if close is not None:
                close()
        phases.close()


async def drive(cfg: LoopConfig, state: RunState, sink: Callable[[Event], Any]) -> None:
    """:func:`run_loop` for a consumer that takes each event by a call (``arun``'s): the same
    phases and order, each event handed to ``sink`` as the phase emits it.

    An exception the sink raises ends the run where the phase emitted the event, and
    propagates, as when the consumer of :func:`run_loop` raises.
    """
    phases = steps(LoopState(cfg, state, sink, at_once=True))
    advance = phases.__next__
    try:
        item = advance()
        while True:
            if type(item) is Wait:
                try:
                    item.result = await item.awaitable
                except BaseException as exc:
                    item = phases.throw(exc)
                    continue
            else:
                async with aclosing(item.source) as source:  # type: ignore[type-var,union-attr]
                    async for event in source:
                        sink(event)
            item = advance()
    except StopIteration:  # the phases ended the run
        return
    finally:
        phases.close()


EventCallback = Callable[[Event], Any]
