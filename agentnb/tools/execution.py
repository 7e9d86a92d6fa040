"""Running the tool calls of one step: one at a time or concurrently, each with its timeout.

A failing tool is data for the model, not a crash: its exception or timeout becomes an error
result the model reads (:func:`execute`). Only a :class:`agentnb.errors.StopRun` raised inside
a tool ends the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from time import perf_counter
from typing import Any

from agentnb.errors import StopRun
from agentnb.events import ToolFinished
from agentnb.messages import ToolCall
from agentnb.tools.context import ToolContext
from agentnb.tools.definition import Tool, render_result
from agentnb.tools.running import Escaped, call_in_thread, exception_text


@dataclass(slots=True)
class Execution:
    """One tool call the loop runs: what it asked for, and (once run) its result."""

    index: int
    call: ToolCall
    tool: Tool
    arguments: dict[str, Any]
    fp: str
    result: str = ""
    error: str | None = None
    ctx: ToolContext | None = None
    duration: float = 0.0
    done: bool = False  # it ran to its end (a result or an error the model reads)
    reported: bool = False  # its ToolFinished event was yielded


def result_limit(tool: Tool, default: int | None) -> int | None:
    own = getattr(tool, "max_result_chars", None)
    return own if own is not None else default


def finished_event(depth: int, p: Execution) -> ToolFinished:
    p.reported = True
    structured = p.ctx.structured if p.ctx is not None else None
    return ToolFinished(depth, p.call.id, p.call.name, p.result, p.error, p.duration, structured)


async def execute(
    p: Execution, depth: int, default_timeout: float | None, *, threaded: bool, ctx: ToolContext | None = None
) -> Execution:
    """Run one tool; exceptions and timeouts become an error result for the model."""
    tool = p.tool
    if ctx is None:
        ctx = ToolContext(p.call.id, tool.name, depth)
    p.ctx = ctx
    timeout = tool.timeout or default_timeout
    start = perf_counter()
    try:
        fn = tool.invoke
        if fn is None:
            raise NotImplementedError(f"tool {tool.name!r} has no Python implementation")
        kwargs = tool.prepare(p.arguments, ctx)
        if tool.is_async:
            value = await (asyncio.wait_for(fn(**kwargs), timeout) if timeout else fn(**kwargs))
        elif timeout or threaded:
            # A thread lets the timeout fire, a cancellation arrive and parallel calls
            # overlap; a timed-out thread cannot be killed: it is a daemon and finishes (or
            # not) in the background without holding up the interpreter's exit.
            work = call_in_thread(fn, kwargs, tool.name)
            value = await (asyncio.wait_for(work, timeout) if timeout else work)
        else:
            value = fn(**kwargs)
        p.result = render_result(value, ctx)
    except StopRun:  # a Stop inside the tool (an inner agent's debugger): the run stops
        raise
    # A failing tool is data for the model, not a crash; so is sys.exit() or a stray GeneratorExit
    # in it (the run's generator is never closed while it awaits a tool, so that one is the tool's).
    except (Exception, SystemExit, GeneratorExit) as exc:
        if isinstance(exc, Escaped):  # a BaseException from a tool thread
            if not isinstance(exc.inner, (SystemExit, GeneratorExit)):
                raise exc.inner from None
            exc = exc.inner
        if (
            isinstance(exc, (TimeoutError, asyncio.TimeoutError))
            and timeout
            and perf_counter() - start >= timeout * 0.99
        ):
            p.error = f"timed out after {timeout:g} s"
            p.result = f"Error: {tool.name} did not finish within {timeout:g} seconds."
        else:  # (a TimeoutError the tool raised itself is an ordinary failure)
            p.error = exception_text(exc)
            p.result = f"Error: {tool.name} raised {p.error}"
    p.duration = perf_counter() - start
    p.done = True
    return p


async def execute_all(execs: list[Execution], depth: int, timeout: float | None) -> AsyncIterator[Execution]:
    """Run several calls concurrently, yielding each as it finishes."""
    tasks = [asyncio.ensure_future(execute(p, depth, timeout, threaded=True)) for p in execs]
    try:
        for next_done in asyncio.as_completed(tasks):
            yield await next_done
    finally:
        for t in tasks:
            t.cancel()
