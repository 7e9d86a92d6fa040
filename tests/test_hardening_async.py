"""The asyncio contract, Stop and Ctrl-C, and tools that never return (issue 13)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator

import pytest

from agentnb import Agent, tool
from agentnb.notebook.cells.runner import drive
from agentnb.providers.base import Completion, Provider, Request, TextChunk
from agentnb.testing import ScriptedProvider, call


class Hanging(Provider):
    """Streams some text, then waits for ever (until cancelled)."""

    name = "hanging"
    supports_streaming = True

    def __init__(self) -> None:
        self.closed = False
        self.started = asyncio.Event()

    async def complete(self, request: Request) -> Completion:
        self.started.set()
        await asyncio.sleep(3600)
        return Completion("never")

    async def stream(self, request: Request) -> AsyncIterator[TextChunk | Completion]:
        try:
            yield TextChunk("Hello, ")
            yield TextChunk("wor")
            self.started.set()
            await asyncio.sleep(3600)
            yield Completion("never")
        finally:
            self.closed = True


needs_timeout = pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is Python >= 3.11")


@needs_timeout
async def test_asyncio_timeout_raises_and_the_result_is_on_the_exception() -> None:
    provider = Hanging()
    with pytest.raises(TimeoutError) as info:
        async with asyncio.timeout(0.2):
            await Agent(provider).arun("hi", stream=True)
    result = info.value.__cause__.run_result  # type: ignore[union-attr]
    assert result.stop_reason == "cancelled"
    assert result.partial_output == "Hello, wor" and result.output == ""
    assert result.events[-1].kind == "run_finished"
    assert provider.closed  # the provider's stream generator was closed, not left pending


async def test_wait_for_raises_timeout() -> None:
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(Agent(Hanging()).arun("hi"), 0.2)


async def test_a_cancelled_outer_task_is_cancelled() -> None:
    provider = Hanging()
    task = asyncio.create_task(Agent(provider).arun("hi"))
    await provider.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as info:
        await task
    assert task.cancelled()
    assert info.value.run_result.stop_reason == "cancelled"  # type: ignore[attr-defined]


async def test_the_stop_button_path_still_returns_a_cancelled_result() -> None:
    provider = Hanging()
    seen: list[str] = []
    task = asyncio.create_task(drive(Agent(provider), "hi", stream=True, on_event=lambda e: seen.append(e.kind)))
    await provider.started.wait()
    task.cancel()
    result = await task
    assert result.stop_reason == "cancelled" and result.partial_output == "Hello, wor"
    assert seen[-1] == "run_finished"  # the widget hears that the run ended


async def test_stop_reaches_a_run_blocked_in_a_sync_tool() -> None:
    """A provider that never suspends and a blocking sync tool: Stop still ends the run."""
    started, release = threading.Event(), threading.Event()

    @tool
    def block() -> str:
        """Blocks until released."""
        started.set()
        release.wait(20)
        return "late"

    task = asyncio.create_task(drive(Agent(ScriptedProvider([call("block"), "done"]), tools=[block]), "go"))
    await asyncio.to_thread(started.wait, 10)
    t0 = time.perf_counter()
    task.cancel()
    result = await task
    release.set()
    assert result.stop_reason == "cancelled" and time.perf_counter() - t0 < 2


def _run_script(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    # The child starts with SIGINT at its default (so Python makes it KeyboardInterrupt): an
    # ignored SIGINT is inherited, and a library another test used in this worker may ignore it.
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@needs_timeout
def test_no_pending_generator_warnings_at_exit() -> None:
    out = _run_script(
        """
        import asyncio, gc
        from agentnb import Agent
        from agentnb.testing import ScriptedProvider, Streamed
        async def main():
            for _ in range(3):
                r = await Agent(ScriptedProvider([Streamed(["a", "b"])]), stream=True).arun("hi")
                assert r.output == "ab"
            try:
                async with asyncio.timeout(0.05):
                    await Agent(ScriptedProvider(["x"], delay=5)).arun("hi")
            except TimeoutError:
                print("timeout")
        asyncio.run(main())
        gc.collect()
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "timeout"
    assert "destroyed" not in out.stderr and "never awaited" not in out.stderr, out.stderr


def test_timed_out_sync_tools_do_not_hold_up_exit() -> None:
    start = time.perf_counter()
    out = _run_script(
        """
        import time
        from agentnb import Agent, tool
        from agentnb.testing import ScriptedProvider, call
        @tool(timeout=0.3)
        def slow() -> str:
            '''Takes 30 s.'''
            time.sleep(30)
            return "late"
        @tool(timeout=0.3)
        def endless() -> str:
            '''Never returns.'''
            while True:
                time.sleep(1)
        r = Agent(ScriptedProvider([call("slow"), call("endless"), "done"]), tools=[slow, endless]).run("go")
        print(r.stop_reason, [e.error for e in r.events if e.kind == "tool_finished"])
        """
    )
    elapsed = time.perf_counter() - start
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "answer ['timed out after 0.3 s', 'timed out after 0.3 s']"
    assert elapsed < 10


def test_ctrl_c_on_the_notebook_path_reaches_a_sync_tool() -> None:
    """Inside a running loop (a Jupyter cell) run() waits on a thread; SIGINT must cancel."""
    out = _run_script(
        """
        import asyncio, os, signal, threading, time
        from agentnb import Agent, tool
        from agentnb.testing import ScriptedProvider, call
        started = threading.Event()
        @tool
        def block() -> str:
            '''Blocks a while.'''
            started.set()
            time.sleep(8)
            return "late"
        def interrupt():
            started.wait(10)
            time.sleep(0.2)
            os.kill(os.getpid(), signal.SIGINT)
        async def cell():
            threading.Thread(target=interrupt, daemon=True).start()
            t = time.perf_counter()
            r = Agent(ScriptedProvider([call("block"), "done"]), tools=[block]).run("go")
            print(r.stop_reason, round(time.perf_counter() - t))
        # Not asyncio.run (its SIGINT handler cancels the main task): like ipykernel, SIGINT
        # raises KeyboardInterrupt in the main thread, which waits inside run().
        asyncio.new_event_loop().run_until_complete(cell())
        """
    )
    assert out.returncode == 0, out.stderr
    reason, seconds = out.stdout.split()
    assert reason == "cancelled" and int(seconds) < 4


def test_ctrl_c_in_a_plain_script_gives_a_cancelled_result() -> None:
    """Outside any event loop: SIGINT while waiting for the model, then while a tool sleeps."""
    out = _run_script(
        """
        import os, signal, threading, time
        from agentnb import Agent, tool
        from agentnb.testing import ScriptedProvider, call
        @tool
        def nap() -> str:
            '''Sleeps.'''
            time.sleep(8)
            return "late"
        def interrupt_after(seconds):
            time.sleep(seconds)
            os.kill(os.getpid(), signal.SIGINT)
        for model in (ScriptedProvider(["never"], delay=8), ScriptedProvider([call("nap"), "never"])):
            threading.Thread(target=interrupt_after, args=(0.5,), daemon=True).start()
            t = time.perf_counter()
            r = Agent(model, tools=[nap]).run("go")
            print(r.stop_reason, round(time.perf_counter() - t))
        """
    )
    assert out.returncode == 0, out.stderr
    lines = [line.split() for line in out.stdout.splitlines()]
    assert [reason for reason, _ in lines] == ["cancelled", "cancelled"]
    assert all(int(seconds) < 4 for _, seconds in lines)
