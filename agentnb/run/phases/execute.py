"""The execute phase: the step's scheduled calls run, and their results come out as events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing

from agentnb.events import Event, SubAgentEvent, ToolStarted
from agentnb.messages import AssistantMessage
from agentnb.run.nested import nested_calls
from agentnb.run.state import LoopState
from agentnb.tools.execution import Execution, execute_all, finished_event
from agentnb.tools.execution import execute as execute_one


async def execute(run: LoopState) -> AsyncIterator[Event]:
    """Run the scheduled calls: one inline, several at once, agents with their own events live."""
    cfg, state, depth = run.cfg, run.state, run.depth
    execs = [p for p in run.plans if isinstance(p, Execution)]
    for p in execs:
        yield ToolStarted(depth, p.call.id, p.call.name, p.arguments, source=p.tool.source)
    if any(getattr(p.tool, "nested", False) for p in execs):
        # Agents as tools: their runs' events come out live, and count toward this run.
        completion = run.completion
        assert completion is not None
        said = (
            *state.messages,
            AssistantMessage(completion.text, completion.tool_calls, reasoning=completion.reasoning),
        )
        nested = nested_calls(execs, depth, cfg.controller, run.ledger, execute_one, cfg.tool_timeout, said)
        async with aclosing(nested) as items:  # type: ignore[type-var]
            async for item in items:
                if isinstance(item, SubAgentEvent):
                    inner = item.event
                    if inner.kind == "run_finished":  # deeper runs are in their parent's total
                        state.usage += inner.usage  # (the limits saw it live: the ledger)
                        state.tool_calls += inner.tool_calls
                    yield item
                else:
                    yield finished_event(depth, item)
    elif len(execs) == 1:
        await execute_one(execs[0], depth, cfg.tool_timeout, threaded=run.threaded)
        yield finished_event(depth, execs[0])
    elif execs:
        async with aclosing(execute_all(execs, depth, cfg.tool_timeout)) as finished:  # type: ignore[type-var]
            async for p in finished:
                yield finished_event(depth, p)
