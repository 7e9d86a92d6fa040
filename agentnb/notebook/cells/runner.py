"""Running an agent for the notebook: in the cell (blocking) or as a background task.

A run that must react to button clicks (the debugger's Step, the trace's Stop while the cell
has returned) runs as a background task on the kernel's event loop: the cell returns at once,
clicks are delivered, and they resume the run through ``loop.call_soon_threadsafe`` (on
ipykernel 7.0-7.3 widget callbacks can arrive on a subshell thread). Where no event loop is
running (plain Python, IPython's test shell), a shared daemon thread runs one.

>>> import asyncio
>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> handle = start_run(lambda: drive(Agent(ScriptedProvider(["Hi"])), "hello"))
>>> handle.result_blocking(timeout=10).output
'Hi'
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from agentnb.events import Event
from agentnb.messages import Message
from agentnb.run.agent import Agent
from agentnb.run.loop import StepController
from agentnb.run.result import RunResult
from agentnb.tools.running import SYNC_TOOLS_IN_THREAD

_thread_loop: asyncio.AbstractEventLoop | None = None
_thread_lock = threading.Lock()


async def drive(
    agent: Agent,
    prompt: Any,
    *,
    history: RunResult | Sequence[Message] | None = None,
    controller: StepController | None = None,
    on_event: Callable[[Event], Any] | None = None,
    stream: bool | None = None,
    link: Any = None,
) -> RunResult:
    """Run ``agent`` to the end, handing every event to ``on_event``.

    ``link`` ties the run to a conversation (:meth:`agentnb.Session.prepare`).

    Cancelling the task (the Stop button) ends the run with a ``cancelled`` result; sync
    tools run on threads so that the cancellation reaches a run while a tool works.
    """
    SYNC_TOOLS_IN_THREAD.set(True)
    return await agent.arun(
        prompt,
        history=history,
        controller=controller,
        on_event=on_event,
        stream=stream,
        on_cancel="return",
        _link=link,
    )


def background_loop() -> asyncio.AbstractEventLoop:
    """The running loop (a Jupyter kernel's), else a shared loop on a daemon thread."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return thread_loop()


def thread_loop() -> asyncio.AbstractEventLoop:
    """A shared event loop running on a daemon thread (started on first use).

    A cell that must block until a run ends runs it here and waits: re-entering the kernel's
    own loop with nest_asyncio breaks ipykernel 7.4 when messages arrive meanwhile.
    """
    global _thread_loop
    with _thread_lock:
        if _thread_loop is None:
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="agentnb-runs", daemon=True).start()
            _thread_loop = loop
        return _thread_loop


class RunHandle:
    """A run going on in the background: cancel it from any thread, await its result."""

    def __init__(self, loop: asyncio.AbstractEventLoop, make: Callable[[], Coroutine[Any, Any, RunResult]]) -> None:
        self.loop = loop
        self._done: concurrent.futures.Future[RunResult] = concurrent.futures.Future()
        self._task: asyncio.Task[RunResult] | None = None
        if _on_loop_thread(loop):
            self._attach(loop.create_task(make()))
        else:
            ready = threading.Event()

            def create() -> None:
                self._attach(loop.create_task(make()))
                ready.set()

            loop.call_soon_threadsafe(create)
            ready.wait()

    def _attach(self, task: asyncio.Task[RunResult]) -> None:
        self._task = task

        def copy(t: asyncio.Task[RunResult]) -> None:
            if t.cancelled():
                self._done.cancel()
            elif t.exception() is not None:
                self._done.set_exception(t.exception())  # type: ignore[arg-type]
            else:
                self._done.set_result(t.result())

        task.add_done_callback(copy)

    def cancel(self) -> None:
        """Stop the run (thread-safe); it ends with ``stop_reason="cancelled"``."""
        if self._task is not None:
            self.loop.call_soon_threadsafe(self._task.cancel)

    def done(self) -> bool:
        return self._done.done()

    @property
    def result(self) -> RunResult | None:
        """The result once the run ended, else None."""
        if self._done.done() and not self._done.cancelled() and self._done.exception() is None:
            return self._done.result()
        return None

    async def wait(self) -> RunResult:
        """Wait (from any event loop) until the run ends; its :class:`RunResult`."""
        return await asyncio.wrap_future(self._done)

    def __await__(self) -> Any:
        return self.wait().__await__()

    def result_blocking(self, timeout: float | None = None) -> RunResult:
        """Block this thread until the result is there (not from the loop that runs it)."""
        if _on_loop_thread(self.loop):
            raise RuntimeError("result_blocking() would deadlock on the run's own loop; use 'await handle'")
        return self._done.result(timeout)


def start_run(
    make: Callable[[], Coroutine[Any, Any, RunResult]], loop: asyncio.AbstractEventLoop | None = None
) -> RunHandle:
    """Start ``make()`` as a background task on ``loop`` (default: :func:`background_loop`)."""
    return RunHandle(loop or background_loop(), make)


def run_blocking(
    make: Callable[[], Coroutine[Any, Any, RunResult]], on_start: Callable[[RunHandle], Any] | None = None
) -> RunResult:
    """Run on :func:`thread_loop` and block until the end; Ctrl-C (kernel interrupt) stops the run."""
    handle = start_run(make, thread_loop())
    if on_start is not None:
        on_start(handle)
    try:
        return handle.result_blocking()
    except KeyboardInterrupt:
        handle.cancel()
        return handle.result_blocking()


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
