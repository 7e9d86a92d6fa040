"""The step-through debugger's model (no widgets): pause before each model call and each tool call.

A :class:`Stepper` is the loop's :class:`~agentnb.run.loop.StepController`. It runs the agent as
a background task (the cell returns at once and the kernel stays responsive), stops at every
pause, and resumes when told to: by buttons (the view in :mod:`agentnb.notebook.debugger.view`
calls these same methods) or from Python, which is how tests and executed notebooks drive it::

    dbg = Stepper(agent).start("What is 2 + 3?")
    dbg                       # shows the trace with the control bar
    await dbg.next_pause()    # Pause(target='model', depth=0)
    dbg.step()                # let the model call happen
    pause = await dbg.next_pause()
    dbg.edit({"a": 2, "b": 40})  # run the tool with other arguments (checked against its schema)
    dbg.continue_()           # no more pauses
    result = await dbg.wait()

Commands are thread-safe: they resume the run through ``loop.call_soon_threadsafe``.
Views subscribe with :meth:`Stepper.subscribe` (called on every change of state) and
:meth:`Stepper.add_sink` (every event of the run); the model knows nothing of them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from agentnb.errors import StopRun, UserError
from agentnb.events import Event
from agentnb.messages import Message, ToolCall
from agentnb.notebook.cells.runner import RunHandle, drive, start_run
from agentnb.printer import format_arguments
from agentnb.providers.base import Request
from agentnb.run.agent import Agent
from agentnb.run.loop import ToolDecision
from agentnb.run.result import RunResult

State = Literal["idle", "running", "paused", "finished"]
S = TypeVar("S", bound="Stepper")


@dataclass(frozen=True, slots=True)
class Pause:
    """Where a run waits: before the model call at ``depth``, or before ``call`` runs."""

    target: Literal["model", "tool"]
    depth: int
    call: ToolCall | None = None

    def describe(self) -> str:
        """Where the run waits, in words.

        >>> Pause("tool", 1, ToolCall("c1", "add", {"a": 1})).describe()
        'paused before tool call add(a=1) at depth 1'
        """
        if self.call is None:
            return f"paused before the model call at depth {self.depth}"
        return (
            f"paused before tool call {self.call.name}({format_arguments(self.call.arguments)}) at depth {self.depth}"
        )


@dataclass(frozen=True, slots=True)
class _Decision:
    action: Literal["run", "skip", "stop"]
    arguments: dict[str, Any] | None = None


class Stepper:
    """Step through an agent run (the model; :class:`~agentnb.notebook.debugger.debugger.Debugger` adds the widget).

    Args:
        agent: the agent to run.
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.state: State = "idle"
        self.pause: Pause | None = None
        self.pauses: list[Pause] = []  # every pause so far, in order
        self.result: RunResult | None = None
        self.handle: RunHandle | None = None
        self.history: RunResult | Sequence[Message] | None = None
        self.edits: list[tuple[dict[str, Any] | None, dict[str, Any]]] = []  # (model's, edited) arguments
        self._continue = False
        self._lock = threading.Lock()
        self._pending: asyncio.Future[_Decision] | None = None
        self._waiters: list[concurrent.futures.Future[Pause | None]] = []
        self._on_end: list[Callable[[RunResult], Any]] = []
        self._listeners: list[Callable[[], Any]] = []
        self._sinks: list[Callable[[Event], Any]] = []

    def __repr__(self) -> str:
        where = f", {self.pause.describe()}" if self.pause else ""
        return f"Debugger(state={self.state!r}{where})"

    def subscribe(self, listener: Callable[[], Any]) -> None:
        """Call ``listener()`` whenever the state changes (paused, resumed, finished)."""
        self._listeners.append(listener)

    def add_sink(self, sink: Callable[[Event], Any]) -> None:
        """Hand every event of the run to ``sink`` (a trace widget)."""
        self._sinks.append(sink)

    def _changed(self) -> None:
        for listener in self._listeners:
            listener()

    # --- running ---------------------------------------------------------------------------

    def start(
        self: S,
        prompt: Any,
        *,
        history: RunResult | Sequence[Message] | None = None,
        on_event: Callable[[Event], Any] | None = None,
        on_end: Callable[[RunResult], Any] | None = None,
        stream: bool | None = None,
        link: Any = None,
    ) -> S:
        """Start the run in the background; it pauses before the first model call."""
        if self.state != "idle":
            raise UserError("this debugger has already run; make a new Debugger(agent) for another run")
        self.state = "running"
        self.history = history
        if on_end is not None:
            self._on_end.append(on_end)
        sinks = [*self._sinks, *([on_event] if on_event is not None else [])]
        self._changed()

        def feed(event: Event) -> None:
            for sink in sinks:
                sink(event)

        async def run() -> RunResult:
            try:
                result = await drive(
                    self.agent, prompt, history=history, controller=self, on_event=feed, stream=stream, link=link
                )
            except BaseException:
                self._end(None)
                raise
            self._end(result)
            return result

        self.handle = start_run(run)
        return self

    def _end(self, result: RunResult | None) -> None:
        with self._lock:
            self.state = "finished"
            self.pause = None
            self.result = result
        self._notify(None)
        self._changed()
        if result is not None:
            for callback in self._on_end:
                callback(result)

    # --- the StepController protocol (called by the loop) ------------------------------------

    async def before_model(self, depth: int, request: Request) -> None:
        decision = await self._pause(Pause("model", depth))
        if decision.action == "stop":
            raise StopRun("stopped in the debugger")

    async def before_tool(self, depth: int, call: ToolCall) -> ToolDecision:
        decision = await self._pause(Pause("tool", depth, call))
        if decision.action == "stop":
            raise StopRun("stopped in the debugger")
        if decision.action == "skip":
            return ToolDecision("skip")
        return ToolDecision("run", decision.arguments)

    async def _pause(self, pause: Pause) -> _Decision:
        if self._continue:
            return _Decision("run")
        fut: asyncio.Future[_Decision] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._pending = fut
            self.pause = pause
            self.state = "paused"
            self.pauses.append(pause)
        self._changed()
        self._notify(pause)
        return await fut

    # --- commands (thread-safe) ----------------------------------------------------------------

    def step(self) -> None:
        """Let the pending model or tool call happen; pause again at the next one."""
        self._resolve(_Decision("run"))

    def continue_(self) -> None:
        """Run to the end without pausing again."""
        self._require_paused()
        self._continue = True
        self._resolve(_Decision("run"))

    def skip(self) -> None:
        """Do not run the pending tool call; the model is told the user skipped it."""
        self._require_paused("tool")
        self._resolve(_Decision("skip"))

    def edit(self, arguments: dict[str, Any] | str) -> None:
        """Run the pending tool call with other arguments (a dict or a JSON object text).

        The arguments are checked against the tool's schema first; a :class:`UserError`
        says what is wrong and the run stays paused.
        """
        pause = self._require_paused("tool")
        assert pause.call is not None
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError as exc:
                raise UserError(f"the arguments are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise UserError(f"the arguments must be a JSON object, not {type(arguments).__name__}")
        tool = self.agent.tools.get(pause.call.name)
        if tool is not None:
            errors = tool.validate(arguments)
            if errors:
                raise UserError(f"invalid arguments for {tool.name}: " + "; ".join(errors))
        self.edits.append((pause.call.arguments, arguments))
        self._resolve(_Decision("run", arguments))

    def stop(self) -> None:
        """End the run now (``stop_reason="cancelled"``); completed steps are kept."""
        with self._lock:
            state = self.state
        if state == "paused":
            self._resolve(_Decision("stop"))
        elif state == "running" and self.handle is not None:
            self.handle.cancel()

    def _require_paused(self, target: str | None = None) -> Pause:
        with self._lock:
            pause, state = self.pause, self.state
        if state != "paused" or pause is None:
            raise UserError(f"the debugger is not paused (it is {state})")
        if target is not None and pause.target != target:
            raise UserError(f"{pause.describe()}: skip and edit apply to tool calls; use step() or continue_()")
        return pause

    def _resolve(self, decision: _Decision) -> None:
        with self._lock:
            fut, state = self._pending, self.state
            if state != "paused" or fut is None:
                raise UserError(f"the debugger is not paused (it is {state})")
            self._pending = None
            self.pause = None
            self.state = "running"
        assert self.handle is not None
        self.handle.loop.call_soon_threadsafe(_settle, fut, decision)
        self._changed()

    # --- waiting ------------------------------------------------------------------------------

    async def next_pause(self, timeout: float | None = 30.0) -> Pause | None:
        """Wait until the run pauses (the current pause if it is paused now); None once it ended."""
        with self._lock:
            if self.state == "idle":
                raise UserError("the debugger has not started; call start(prompt) first")
            if self.state == "paused":
                return self.pause
            if self.state == "finished":
                return None
            waiter: concurrent.futures.Future[Pause | None] = concurrent.futures.Future()
            self._waiters.append(waiter)
        return await asyncio.wait_for(asyncio.wrap_future(waiter), timeout)

    async def wait(self) -> RunResult:
        """Wait until the run ends; its :class:`RunResult`."""
        if self.handle is None:
            raise UserError("the debugger has not started; call start(prompt) first")
        return await self.handle.wait()

    def _notify(self, value: Pause | None) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(value)


def _settle(fut: asyncio.Future[_Decision], decision: _Decision) -> None:
    if not fut.done():
        fut.set_result(decision)
