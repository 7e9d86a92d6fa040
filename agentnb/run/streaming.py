"""The body of a run as :meth:`Agent.stream <agentnb.run.agent.Agent.stream>` delivers it: the
opening events, the loop's events (yielded, or handed to ``arun``'s sink by call), and the end of a
run that finished, was stopped or failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from time import perf_counter
from typing import Any

from agentnb.control.inbox import Inbox
from agentnb.control.limits import UsageLimits
from agentnb.errors import StopRun, UserError
from agentnb.events import Event
from agentnb.messages import Message
from agentnb.run.delivery import deliver_end, failed, finished, opening_stops, stopped, taker
from agentnb.run.loop import RunState, StepController, drive, run_loop
from agentnb.run.result import RunResult
from agentnb.run.runinfo import loop_config, run_started
from agentnb.tracing.observe import RunLink, watchers_for


async def run_events(
    agent: Any,
    prompt: Any,
    history: RunResult | Sequence[Message] | None,
    controller: StepController | None,
    stream: bool | None,
    output_type: Any,
    approver: Any,
    limits: UsageLimits | dict[str, Any] | None,
    inbox: Inbox | None,
    _sink: Callable[[Event], Any] | None,
    _link: RunLink | None,
) -> AsyncIterator[Event | RunResult]:
    """One run of ``agent`` (the arguments are :meth:`~agentnb.run.agent.Agent.stream`'s): its events,
    then the :class:`RunResult`."""
    # _sink (arun's) takes the events; only the result is yielded (one generator hop less).
    state = RunState(agent.messages_for(prompt, history))
    refresh = agent._refreshed_tools()
    cfg = loop_config(agent, stream, controller, output_type, approver, limits, _sink, _link, refresh)
    cfg.inbox = inbox
    start = perf_counter()
    first = run_started(agent, state.messages, history, cfg.max_tool_calls, _link)
    state.events.append(first)
    watch = watchers_for(agent.watchers, first, _link)  # None: nobody watches (no cost)
    stop_at_start = False  # a StopRun from the callback at run_started: no model call
    for event in (first, *(_link.notes if _link is not None else ())):  # a session's notes follow
        if event is not first:
            state.events.append(event)
            if watch is not None:
                watch(event)
        if _sink is None:
            yield event
        elif not stop_at_start:
            stop_at_start = opening_stops(_sink, event)
    error: BaseException | None = None
    cancelled: asyncio.CancelledError | None = None
    try:
        if stop_at_start:
            raise StopRun
        if _sink is not None:  # arun's: the events by call, no generator hop
            await drive(cfg, state, taker(state.events, watch, _sink))
        else:
            async with aclosing(run_loop(cfg, state)) as events:  # type: ignore[type-var]
                async for event in events:
                    state.events.append(event)
                    if watch is not None:
                        watch(event)
                    yield event
    except (asyncio.CancelledError, KeyboardInterrupt, StopRun) as exc:
        cancelled = stopped(state, cfg.max_result_chars, watch, _sink, exc)
    except UserError:
        raise
    except Exception as exc:  # provider failures end the run but keep the transcript
        error = exc
        for note in failed(state, cfg.max_result_chars, watch, exc):
            if _sink is None:
                yield note
            else:
                _sink(note)
    if refresh is not None:  # the tools as the run left them
        agent.tools = agent._toolset.current
    end, result = finished(state, start, error, cfg.output, watch, agent, cfg.limits)
    if cancelled is not None:  # the transcript is safe: now let asyncio's cancellation go on
        cancelled.run_result = result  # type: ignore[attr-defined]
        raise cancelled
    if _sink is None:
        yield end
    else:
        deliver_end(_sink, end, result)
    yield result
