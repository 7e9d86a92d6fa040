"""Driving a coroutine to its end from synchronous code: ``Agent.run``, ``evaluate``.

>>> async def answer() -> int:
...     return 42
>>> run_sync(answer)
42
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agentnb.toolrun import SYNC_TOOLS_IN_THREAD

__all__ = ["BLOCKING_CELL", "run_sync"]

T = TypeVar("T")

#: True while ``Agent.run`` holds a notebook cell (the run is on a worker thread and the kernel
#: waits): a decider that needs clicks cannot get them then.
BLOCKING_CELL: contextvars.ContextVar[bool] = contextvars.ContextVar("agentnb_blocking_cell", default=False)


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Drive a coroutine to completion from synchronous code.

    Outside an event loop it runs on a fresh loop in this thread. Inside one (a Jupyter cell)
    it runs on a fresh loop in a worker thread while this thread waits: re-entering the
    kernel's own loop (nest_asyncio) breaks ipykernel 7.4 when messages arrive meanwhile.
    A KeyboardInterrupt while waiting cancels the run, which then finishes cleanly (an agent
    run returns ``cancelled``).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    # Outside the except block: the run's exceptions must not get a RuntimeError as context.
    return _run_in_thread(make) if running else _run_here(make)


def _run_here(make: Callable[[], Awaitable[T]]) -> T:
    loop = asyncio.new_event_loop()
    task: asyncio.Task[T] = loop.create_task(make())  # type: ignore[arg-type]
    try:
        while True:
            try:
                return loop.run_until_complete(task)
            except KeyboardInterrupt:
                if task.done():
                    raise
                task.cancel()
    finally:
        try:
            loop.run_until_complete(_close_connections(loop))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


async def _close_connections(loop: asyncio.AbstractEventLoop) -> None:
    """Close the HTTP connections the run opened on its loop, which is about to close."""
    transport = sys.modules.get("agentnb.providers.aiohttp_transport")  # loaded: some provider used it
    if transport is not None:
        with contextlib.suppress(Exception):  # a failed close never fails the run
            await transport.close_on(loop)


def _run_in_thread(make: Callable[[], Awaitable[T]]) -> T:
    loop = asyncio.new_event_loop()
    started = threading.Event()
    finished = threading.Event()
    box: dict[str, Any] = {}

    def target() -> None:
        asyncio.set_event_loop(loop)
        SYNC_TOOLS_IN_THREAD.set(True)  # a Ctrl-C from the waiting thread must reach the run
        BLOCKING_CELL.set(True)
        task: asyncio.Task[T] = loop.create_task(make())  # type: ignore[arg-type]
        box["task"] = task
        started.set()
        try:
            box["result"] = loop.run_until_complete(task)
        except BaseException as exc:  # handed to the waiting thread
            box["error"] = exc
        finally:
            loop.run_until_complete(_close_connections(loop))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            finished.set()

    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(target,), name="agentnb-run", daemon=True)
    # An Event, not Thread.join(): a join interrupted by Ctrl-C can leave is_alive() wrong.
    # The start is inside the try, so a Ctrl-C at any moment of the wait cancels the run.
    launched = False
    while not finished.is_set():
        try:
            if not launched:
                launched = True
                worker.start()
            finished.wait()
        except KeyboardInterrupt:
            if not started.wait(10):
                raise
            try:
                loop.call_soon_threadsafe(box["task"].cancel)
            except RuntimeError:  # the run finished meanwhile and closed its loop
                pass
    if "error" in box:
        raise box["error"]
    return box["result"]  # type: ignore[no-any-return]
