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

from collections.abc import AsyncIterator, Callable
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
from agentnb.run.state import ATTACHMENT_NOTE, LoopConfig, LoopState, RunState, StepController, ToolDecision

__all__ = [
    "ANSWER_NOW",
    "ATTACHMENT_NOTE",
    "EventCallback",
    "LoopConfig",
    "RunState",
    "StepController",
    "ToolDecision",
    "run_loop",
]


async def run_loop(cfg: LoopConfig, state: RunState) -> AsyncIterator[Event]:
    """Drive one run to its end, yielding every event; results accumulate in ``state``."""
    run = LoopState(cfg, state)
    while True:
        async for event in ask(run):  # a request left? what is offered; the model's reply
            yield event
        if run.over:
            return
        if not run.offer or not run.calls:
            async for event in end(run):  # the answer, or one more request
                yield event
            if run.over:
                return
            continue
        for call in pending_calls(run):  # each call in order, until a phase settles it
            for phase in (decide, deduplicate, approve):
                async for event in phase(run, call):
                    yield event
                if call.plan is not None:
                    break
            schedule(run, call)
        async for event in execute(run):  # the scheduled calls run
            yield event
        async for event in append(run):  # what the model reads next; a direct output ends here
            yield event
        if run.over:
            return
        run.depth += 1


EventCallback = Callable[[Event], Any]
