"""The trace widget's controls: Stop, the approval panel's wait, the debugger's pauses, and the
"Tell the agent…" box (:mod:`agentnb.notebook.trace.steer`).

A mixin of :class:`~agentnb.notebook.trace.widget.TraceWidget` (which builds the buttons, the panel,
the state and the clock these methods use); kept apart so that the widget's module holds its
feeding and rendering.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentnb.notebook.trace.state import Pause

#: Stop's tooltip where nothing can stop the run from the widget (a run awaited in the cell).
NO_STOP = (
    "This run cannot be stopped from here (it is awaited in the cell): use Kernel > Interrupt, "
    "or run it with %agent or agent.run(..., on_event=trace)"
)


class TraceControls:
    """Stop, approval and pause handling for :class:`~agentnb.notebook.trace.widget.TraceWidget`."""

    _release_cell: Callable[[], None] | None = None

    stop_button: Any
    approval: Any
    steer: Any
    state: Any
    pause_text: str | None
    pause: Pause | None
    _stop_callback: Callable[[], Any] | None
    _paused_since: float | None
    _paused_total: float
    _clock: Callable[[], float]
    flush: Callable[[], None]  # the widget's own render

    def on_stop(self, callback: Callable[[], Any] | None) -> None:
        """Call ``callback`` when Stop is clicked (the runner cancels the run); None disables Stop."""
        self._stop_callback = callback
        self.stop_button.disabled = callback is None or self.state.finished is not None
        self.stop_button.tooltip = "Stop the run" if callback is not None else NO_STOP

    def _offer_stop(self) -> None:
        """The run started: where its runner gave no Stop (``agent.run(..., on_event=w)`` in a
        cell), the cell that waits for it serves the click, and Stop cancels the run; where
        nothing can, the button says why."""
        if self._stop_callback is not None:
            return
        from agentnb.notebook.cells.inplace import lend_for_run

        lent = lend_for_run()
        if lent is None:
            self.stop_button.tooltip = NO_STOP
            return
        stop, self._release_cell = lent
        self.on_stop(stop)

    def _run_over(self, stop_reason: str) -> None:
        """The run ended: nothing more can be sent to it; give the cell back (see :meth:`_offer_stop`)."""
        self.steer.run_ended(stop_reason)
        release, self._release_cell = self._release_cell, None
        if release is not None:
            release()

    def take_inbox(self, inbox: Any) -> None:
        """The inbox of the run this trace is fed (the agent hands it over before the run starts):
        its "Tell the agent…" box sends there while the run goes on."""
        self.steer.attach(inbox)

    def _offer_steer(self) -> None:
        """The run started: show the box where a click can reach it (the cell awaits the run and
        the kernel serves widget messages, or the cell that waits was lent to serve them)."""
        from agentnb.run.sync import BLOCKING_CELL

        self.steer.run_started(served=BLOCKING_CELL.get() is None or self._release_cell is not None)

    #: Who decided, in :class:`~agentnb.events.ApprovalDecided` events.
    approver_name = "widget"

    async def decide_approval(self, call: Any, tool: Any = None) -> Any:
        """Wait for Approve / Deny / Edit on ``call`` (the loop asks; see :mod:`agentnb.control.approval`).

        While it waits the run is paused and Stop ends it. Under ``agent.run()`` in a cell, the
        cell's thread serves the widget's messages meanwhile (:mod:`agentnb.notebook.cells.inplace`).
        """
        from agentnb.notebook.cells.inplace import held_cell

        with held_cell(call.name):
            self.stop_button.disabled = False
            self.set_pause(f"waiting for approval of {call.name}", Pause("tool", self.state.current_depth, call.id))
            try:
                return await self.approval.decide(call, tool)
            finally:
                self.set_pause(None)

    def request_stop(self) -> None:
        """What the Stop button does."""
        if self.approval.stop():  # a call waited for approval: the run ends, the call never runs
            self.stop_button.disabled = True
            return
        if self._stop_callback is not None and self.state.finished is None:
            self.stop_button.disabled = True
            self.stop_button.description = "Stopping"
            self._stop_callback()

    def set_pause(self, text: str | None, pause: Pause | None = None) -> None:
        """Show (or clear) where a step-through run waits (used by the debugger).

        While paused the header says "paused", the held-back model call is not counted, and
        the paused time is kept out of the elapsed time (shown apart).
        """
        now = self._clock()
        if text is None:
            self._end_pause(now)
        elif self._paused_since is None:
            self._paused_since = now
        self.pause_text = text
        self.pause = pause if text is not None else None
        self.state.set_pause(self.pause if text is not None else None, now)
        if text is not None and self.pause is None:  # a caller that gives only the text
            self.state.header_dirty = True
        self.flush()

    def _end_pause(self, now: float) -> None:
        if self._paused_since is not None:
            self._paused_total += now - self._paused_since
            self._paused_since = None

    @property
    def paused_seconds(self) -> float:
        """Time spent paused in the debugger (left out of the elapsed time)."""
        extra = 0.0 if self._paused_since is None else self._clock() - self._paused_since
        return self._paused_total + extra
