"""Tool calls that run agents: their events come out of the outer run live.

An agent used as a tool (:meth:`agentnb.Agent.as_tool`, :func:`agentnb.handoff`) is an
ordinary tool whose ``nested`` flag is set. The loop runs such calls here: each gets a
:class:`ToolContext` whose ``caller`` (a :class:`Caller`) says how to reach the calling run;
its ``emit`` puts the inner run's events on a queue, and this generator yields them, wrapped
in :class:`~agentnb.events.SubAgentEvent`, while the calls run, then each finished call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentnb.events import Event, SubAgentEvent
from agentnb.messages import Message
from agentnb.tools import ToolContext

_DONE = object()


@dataclass(frozen=True, slots=True)
class Caller:
    """The run a nested tool call belongs to, as that call's :class:`ToolContext` sees it.

    ``emit``: passes one inner event into the calling run's stream; ``controller``: its step
    controller (the debugger), or None; ``ledger``: its :class:`~agentnb.control.limits.Ledger` (its
    limits hold in the inner run); ``messages``: its conversation so far, ending with the
    assistant turn that made the call (what a handoff passes on).
    """

    emit: Callable[[Event], None]
    controller: Any
    ledger: Any
    messages: Sequence[Message]


async def nested_calls(
    execs: list[Any],
    depth: int,
    controller: Any,
    ledger: Any,
    execute: Callable[..., Awaitable[Any]],
    timeout: float | None,
    messages: Sequence[Message] = (),
) -> AsyncIterator[Any]:
    """Run ``execs`` concurrently; yield each inner event (wrapped) and each finished exec."""
    queue: asyncio.Queue[Any] = asyncio.Queue()

    def emitter(call_id: str, agent: str) -> Callable[[Event], None]:
        def emit(event: Event) -> None:
            queue.put_nowait(SubAgentEvent(depth, call_id, agent, event))

        return emit

    async def one(p: Any) -> None:
        ctx = ToolContext(p.call.id, p.tool.name, depth)
        ctx.caller = Caller(emitter(p.call.id, p.tool.name), controller, ledger, messages)
        try:
            await execute(p, depth, timeout, threaded=True, ctx=ctx)
        finally:
            queue.put_nowait((_DONE, p))

    tasks = [asyncio.ensure_future(one(p)) for p in execs]
    try:
        pending = len(tasks)
        while pending:
            try:
                item = await queue.get()
            except asyncio.CancelledError:
                # The outer run is cancelled: cancel the inner runs, let them end cleanly, and
                # pass on what they said last (their run_finished) before going on cancelling.
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                while not queue.empty():
                    left = queue.get_nowait()
                    if isinstance(left, SubAgentEvent):
                        yield left
                raise
            if isinstance(item, tuple) and item and item[0] is _DONE:
                pending -= 1
                for t in tasks:  # a call that stopped the run (StopRun) ends it here
                    if t.done() and not t.cancelled() and t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
                yield item[1]
            else:
                yield item
    finally:
        for t in tasks:
            t.cancel()
