"""The execute phase: the step's scheduled calls run, and their results come out as events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from agentnb.events import Event, SubAgentEvent, ToolStarted
from agentnb.messages import AssistantMessage
from agentnb.run.nested import nested_calls
from agentnb.run.state import LoopState, said_so_far
from agentnb.tools.execution import Execution, execute_all, finished_event
from agentnb.tools.execution import execute as execute_one


async def execute(run: LoopState) -> None:
    """Run the scheduled calls: one inline, several at once, agents with their own events live."""
    cfg, depth, execs = run.cfg, run.depth, run.execs
    for p in execs:
        run.emit(ToolStarted(depth, p.call.id, p.call.name, p.arguments, source=p.tool.source))
    await said_so_far(run)
    if run.nested:
        await relay(run, nested(run, execs))
    elif len(execs) == 1:
        await execute_one(execs[0], depth, cfg.tool_timeout, threaded=run.threaded)
        run.emit(finished_event(depth, execs[0]))
    elif execs:
        await relay(run, concurrently(execs, depth, cfg.tool_timeout))


async def relay(run: LoopState, source: AsyncIterator[Event]) -> None:
    """Emit each event of ``source`` as it comes (to a stream's consumer before the next wait)."""
    async with aclosing(source) as events:  # type: ignore[type-var]
        async for event in events:
            run.emit(event)
            await said_so_far(run)


async def concurrently(execs: list[Execution], depth: int, timeout: float | None) -> AsyncIterator[Event]:
    """Run several calls at once; each one's result comes out as it finishes."""
    async with aclosing(execute_all(execs, depth, timeout)) as finished:  # type: ignore[type-var]
        async for p in finished:
            yield finished_event(depth, p)


async def nested(run: LoopState, execs: list[Execution]) -> AsyncIterator[Event]:
    """Run calls among which agents are: their runs' events come out live, and count here."""
    cfg, state, depth, completion = run.cfg, run.state, run.depth, run.completion
    assert completion is not None
    said = (*state.messages, AssistantMessage(completion.text, completion.tool_calls, reasoning=completion.reasoning))
    items = nested_calls(execs, depth, cfg.controller, run.ledger, execute_one, cfg.tool_timeout, said)
    async with aclosing(items) as running:  # type: ignore[type-var]
        async for item in running:
            if isinstance(item, SubAgentEvent):
                inner = item.event
                if inner.kind == "run_finished":  # deeper runs are in their parent's total
                    state.usage += inner.usage  # (the limits saw it live: the ledger)
                    state.tool_calls += inner.tool_calls
                yield item
            else:
                yield finished_event(depth, item)
