"""The live trace widget: a run's depths, tool calls and decisions, fed only by events.

Use it as an ``on_event`` callback (it is callable), or let ``%%agent`` show it::

    w = TraceWidget()
    display(w)
    agent.run("What is 2 + 3?", on_event=w)

Updates are throttled: events are folded into a :class:`~agentnb.notebook.state.TraceState`
at once (cheap), and the widgets are re-rendered at most every ``interval`` seconds, only for
the depths that changed, so a fast loop is not slowed down by rendering.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> w = TraceWidget()
>>> _ = Agent(ScriptedProvider(["Hello!"])).run("hi", on_event=w)
>>> w.status, w.answer
('answer', 'Hello!')
>>> print(repr(w))
agentnb trace: answer · 1 model call · 0/10 tool calls
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from agentnb.events import Event, RunFinished, RunStarted
from agentnb.notebook.render import STYLE, depth_html, depth_title, header_html
from agentnb.notebook.state import TraceState
from agentnb.notebook.text import summary_line, trace_text
from agentnb.result import RunResult


class TraceWidget(widgets.VBox):
    """A live view of one agent run.

    Args:
        interval: at most one re-render per this many seconds while events stream in.
        preview: results longer than this many characters are cut, with a "show all" toggle.
        open_depths: keep only the newest this-many depth sections open as the run goes on.
        clock: a monotonic clock (injectable for tests).
    """

    def __init__(
        self,
        *,
        interval: float = 0.1,
        preview: int = 400,
        open_depths: int = 4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = TraceState()
        self.interval = interval
        self.preview = preview
        self.open_depths = open_depths
        self.renders = 0  # how many times the widgets were updated (the throttle bounds it)
        self.pause_text: str | None = None
        self._clock = clock
        self._last = -1e9
        self._timer: asyncio.TimerHandle | None = None
        self._ticker: asyncio.TimerHandle | None = None
        self._t0: float | None = None
        self._stop_callback: Callable[[], Any] | None = None
        self._display: Any = None
        self._header = widgets.HTML(STYLE + header_html(self.state, None))
        self.stop_button = widgets.Button(
            description="Stop", icon="stop", button_style="danger", disabled=True, tooltip="Stop the run"
        )
        self.stop_button.layout.width = "80px"
        self.stop_button.on_click(lambda _: self.request_stop())
        self._sections: dict[int, tuple[widgets.Accordion, widgets.HTML]] = {}
        self._body = widgets.VBox()
        self.answer_output = widgets.Output()
        self._header.layout.flex = "1 1 auto"
        head = widgets.HBox([self._header, self.stop_button])
        head.layout.justify_content = "space-between"
        head.layout.align_items = "center"
        super().__init__([head, self._body, self.answer_output])
        self.layout.border = "1px solid var(--jp-border-color2, #d0d7de)"
        self.layout.padding = "6px 10px"
        self.add_class("anb-trace")

    # --- feeding ---------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        """Take one event; the view updates now or at the next throttle tick."""
        if isinstance(event, RunStarted):
            self._t0 = self._clock()
            self._start_ticker()
        self.state.add(event)
        if isinstance(event, RunFinished):
            self.flush()
            self._cancel(self._ticker)
            self.stop_button.disabled = True
            self.stop_button.layout.display = "none"
            self._update_display()
            return
        now = self._clock()
        if now - self._last >= self.interval:
            self.flush()
        elif self._timer is None:
            loop = _running_loop()
            if loop is not None:  # without a loop the final event flushes
                self._timer = loop.call_later(self.interval - (now - self._last), self._on_timer)

    __call__ = handle

    def finish(self, result: RunResult | None = None) -> None:
        """Render everything now (a run's events end with ``run_finished``, which does this too)."""
        self.flush()

    def on_stop(self, callback: Callable[[], Any] | None) -> None:
        """Call ``callback`` when Stop is clicked (the runner cancels the run); None disables Stop."""
        self._stop_callback = callback
        self.stop_button.disabled = callback is None or self.state.finished is not None

    def request_stop(self) -> None:
        """What the Stop button does."""
        if self._stop_callback is not None and self.state.finished is None:
            self.stop_button.disabled = True
            self.stop_button.description = "Stopping"
            self._stop_callback()

    def set_pause(self, text: str | None) -> None:
        """Show (or clear) a "paused before ..." note in the header (used by the debugger)."""
        self.pause_text = text
        self.state.header_dirty = True
        self.flush()

    # --- reading ---------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """``waiting``, ``running``, ``paused``, or the run's stop reason once it ended."""
        if self.pause_text and self.state.finished is None:
            return "paused"
        return self.state.status

    @property
    def answer(self) -> str | None:
        return self.state.answer

    @property
    def sections(self) -> dict[int, widgets.Accordion]:
        """The collapsible section of each depth rendered so far."""
        return {d: acc for d, (acc, _) in self._sections.items()}

    def section_html(self, depth: int) -> str:
        return self._sections[depth][1].value

    @property
    def header_html(self) -> str:
        return self._header.value

    def text(self) -> str:
        """The whole trace as stable plain text (no timings)."""
        return trace_text(self.state.events, self.status)

    def __repr__(self) -> str:
        return summary_line(self.state.events, self.status)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = self.text()
        return data

    # --- showing -------------------------------------------------------------------------

    def show(self) -> TraceWidget:
        """Display the widget; when the run ends, its text form is updated to the final trace."""
        from IPython.display import display

        self._display = display(self, display_id=True)
        return self

    @classmethod
    def replay(cls, result: RunResult | str | os.PathLike[str], **options: Any) -> TraceWidget:
        """A widget showing a finished run, from a :class:`RunResult` or a saved transcript."""
        if not isinstance(result, RunResult):
            result = RunResult.load(result)
        w = cls(**options)
        w._clock = _FixedClock(w._clock())  # no live ticking for a replay
        for event in result.events:
            w.handle(event)
        w.finish(result)
        return w

    # --- rendering -----------------------------------------------------------------------

    def flush(self) -> None:
        """Re-render what changed since the last render."""
        self._cancel(self._timer)
        self._timer = None
        self._last = self._clock()
        s = self.state
        if not s.dirty and not s.header_dirty:
            return
        self.renders += 1
        for depth in sorted(s.dirty):
            view = s.depths[depth]
            if depth not in self._sections:
                self._add_section(depth)
            acc, html = self._sections[depth]
            html.value = depth_html(view, self.preview)
            acc.set_title(0, depth_title(view))
        self._header.value = STYLE + header_html(s, self._elapsed(), self.pause_text)
        if s.answer is not None and not self.answer_output.outputs:
            self.answer_output.outputs = (
                {
                    "output_type": "display_data",
                    "data": {"text/markdown": s.answer, "text/plain": s.answer},
                    "metadata": {},
                },
            )
        s.clean()

    def _add_section(self, depth: int) -> None:
        html = widgets.HTML()
        acc = widgets.Accordion(children=[html], selected_index=0)
        acc.add_class("anb-depth")
        self._sections[depth] = (acc, html)
        self._body.children = (*self._body.children, acc)
        old = self._sections.get(depth - self.open_depths)
        if old is not None and self.state.finished is None:
            old[0].selected_index = None  # fold old depths away during long runs

    def _elapsed(self) -> float | None:
        if self.state.finished is not None:
            return self.state.finished.duration
        return None if self._t0 is None else self._clock() - self._t0

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def _start_ticker(self) -> None:
        loop = _running_loop()
        if loop is None:
            return

        def tick() -> None:  # elapsed time moves while the model works
            if self.state.finished is None:
                self.state.header_dirty = True
                self.flush()
                self._ticker = loop.call_later(0.5, tick)

        self._ticker = loop.call_later(0.5, tick)

    @staticmethod
    def _cancel(handle: asyncio.TimerHandle | None) -> None:
        if handle is not None:
            handle.cancel()

    def _update_display(self) -> None:
        if self._display is not None:
            self._display.update(self)


class _FixedClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
