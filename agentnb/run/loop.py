"""The core: ask the model, run the tools it asks for, append the results, ask again.

One async generator, :func:`run_loop`, yields typed events and renders nothing. Its body is the
list of phases of a step (:mod:`agentnb.run.phases`), each a function that yields the events of
what it decided and leaves its outcome in the :class:`~agentnb.run.state.LoopState`. It is
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
    "run_loop",
    "steps",
]


def steps(run: LoopState) -> Generator[Item, None, None]:
    """The phases of each step, in order, until one of them ends the run: the loop's body."""
    while True:
        yield from ask(run)  # a request left? what is offered; the model's reply
        if run.over:
            return
        if not run.offer or not run.calls:
            yield from end(run)  # the answer, or one more request
            if run.over:
                return
            continue
        for call in pending_calls(run):  # each call in order, until a phase settles it
            for phase in (decide, deduplicate, approve):
                yield from phase(run, call)
                if call.plan is not None:
                    break
            schedule(run, call)
        yield from execute(run)  # the scheduled calls run
        yield from append(run)  # what the model reads next; a direct output ends here
        if run.over:
            return
        run.depth += 1


async def run_loop(cfg: LoopConfig, state: RunState) -> AsyncIterator[Event]:
    """Drive one run to its end, yielding every event; results accumulate in ``state``.

    The phases (:func:`steps`) are plain generators: an event they yield goes to the caller, a
    :class:`~agentnb.run.state.Wait` is awaited here (what it raises is thrown back into the
    phase that waited), a :class:`~agentnb.run.state.Relay`'s events are passed on as they come.
    """
    phases = steps(LoopState(cfg, state))
    following = phases.__next__
    try:
        item = following()
        while True:
            if type(item) is Wait:
                try:
                    item.result = await item.awaitable
                except BaseException as exc:  # the phase may answer it (a stop: say so first)
                    item = phases.throw(exc)
                    continue
            elif type(item) is Relay:
                async with aclosing(item.source) as source:  # type: ignore[type-var]
                    async for event in source:
                        yield event
            else:
                yield item  # type: ignore[misc]
            item = following()
    except StopIteration:  # the phases ended the run
        return
    finally:
        phases.close()


EventCallback = Callable[[Event], Any]
