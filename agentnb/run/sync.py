"""Driving the async core from synchronous code: :func:`run_sync`, and the cell it may hold.

Outside an event loop a run goes on a fresh loop in the calling thread. Inside one (a Jupyter
cell) it goes on a fresh loop in a worker thread while the cell's thread waits: re-entering
the kernel's own loop (nest_asyncio) breaks ipykernel 7.4 when messages arrive meanwhile.

While the cell's thread waits, the kernel handles no message, so a widget's buttons could not
reach the run. A :class:`BlockingCell` lets the run *lend* that thread a job while it waits for
a person (the trace widget's approval panel serves the kernel's widget messages on it, see
:mod:`agentnb.notebook.cells.inplace`). When nothing is lent, the thread sleeps on an event: no
polling, no cost.

>>> async def answer():
...     return 42
>>> run_sync(answer)
42
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from agentnb.tools.running import SYNC_TOOLS_IN_THREAD

T = TypeVar("T")

#: A job lent to the waiting thread: ``job(stop)`` runs until ``stop()`` is true.
Job = Callable[[Callable[[], bool]], None]


class BlockingCell:
    """The thread that waits for a run (``agent.run()`` in a notebook cell), lendable to a job.

    >>> cell = BlockingCell()
    >>> served = []
    >>> def job(stop):
    ...     served.append("served")
    ...     while not stop():
    ...         pass
    >>> def worker():
    ...     with cell.lend(job):
    ...         while not served:
    ...             pass
    ...     cell.finish()
    >>> t = threading.Thread(target=worker); t.start(); cell.wait(); t.join()
    >>> served
    ['served']
    """

    __slots__ = ("_wake", "_jobs", "done")

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._jobs: list[Job] = []
        self.done = False

    @contextlib.contextmanager
    def lend(self, job: Job) -> Iterator[None]:
        """While the block runs, the waiting thread runs ``job(stop)``; ``stop()`` turns true
        when the block is left (or the run ended)."""
        self._jobs.append(job)
        self._wake.set()
        try:
            yield
        finally:
            self._jobs.remove(job)

    def finish(self) -> None:
        """The run ended: the waiting thread returns."""
        self.done = True
        self._wake.set()

    def wait(self) -> None:
        """On the waiting thread: sleep until the run ends, running what is lent meanwhile."""
        while not self.done:
            self._wake.wait()
            self._wake.clear()
            if self._jobs and not self.done:
                self._jobs[-1](self._lent_back)

    def _lent_back(self) -> bool:
        """A lent job's ``stop()``: the run ended, or nothing is lent any more."""
        return self.done or not self._jobs


#: The cell a run on a worker thread holds (None: no cell waits for this run).
BLOCKING_CELL: contextvars.ContextVar[BlockingCell | None] = contextvars.ContextVar(
    "agentnb_blocking_cell", default=None
)


def run_sync(make: Callable[[], Awaitable[T]]) -> T:
    """Drive a coroutine to completion from synchronous code.

    Outside an event loop it runs on a fresh loop in this thread. Inside one (a Jupyter cell)
    it runs on a fresh loop in a worker thread while this thread waits (see the module's text).
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


def new_loop() -> asyncio.AbstractEventLoop:
    """A fresh event loop for a synchronous call: asyncio's own, or uvloop's when the environment
    says ``AGENTNB_LOOP=uvloop`` (``pip install 'agentnb[uvloop]'``; see the README's benchmark of
    many runs). The async API runs on whatever loop its caller runs.

    >>> loop = new_loop(); loop.close()
    """
    if os.environ.get("AGENTNB_LOOP", "asyncio") == "uvloop":
        try:
            import uvloop
        except ImportError:
            from agentnb.errors import MissingDependencyError

            raise MissingDependencyError("AGENTNB_LOOP=uvloop", "uvloop") from None
        return uvloop.new_event_loop()  # type: ignore[no-any-return]
    return asyncio.new_event_loop()


def _run_here(make: Callable[[], Awaitable[T]]) -> T:
    loop = new_loop()
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
    loop = new_loop()
    started = threading.Event()
    cell = BlockingCell()
    box: dict[str, Any] = {}

    def target() -> None:
        asyncio.set_event_loop(loop)
        SYNC_TOOLS_IN_THREAD.set(True)  # a Ctrl-C from the waiting thread must reach the run
        BLOCKING_CELL.set(cell)
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
            cell.finish()

    context = contextvars.copy_context()
    worker = threading.Thread(target=context.run, args=(target,), name="agentnb-run", daemon=True)
    # An Event, not Thread.join(): a join interrupted by Ctrl-C can leave is_alive() wrong.
    # The start is inside the try, so a Ctrl-C at any moment of the wait cancels the run.
    launched = False
    while not cell.done:
        try:
            if not launched:
                launched = True
                worker.start()
            cell.wait()
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
