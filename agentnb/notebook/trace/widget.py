"""The live trace widget: a run's depths, tool calls and decisions, fed only by events.

Use it as an ``on_event`` callback (it is callable), or let ``%%agent`` show it::

    w = TraceWidget()
    display(w)
    agent.run("What is 2 + 3?", on_event=w)

Updates are throttled: events are folded into a :class:`~agentnb.notebook.trace.state.TraceState`
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
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets

from agentnb.events import Event
from agentnb.messages import Message
from agentnb.notebook.trace.answer import answer_html
from agentnb.notebook.trace.blocks import STYLE, context_html, copyable, save_link
from agentnb.notebook.trace.controls import TraceControls
from agentnb.notebook.trace.display import LiveDisplay
from agentnb.notebook.trace.header import header_html
from agentnb.notebook.trace.labels import labels_text
from agentnb.notebook.trace.render import Section, depth_html, depth_title, section_html
from agentnb.notebook.trace.snapshot import KEY, events_result, snapshot_metadata
from agentnb.notebook.trace.snapshot import static_html as trace_static_html
from agentnb.notebook.trace.state import Pause, TraceState
from agentnb.notebook.trace.steer import SteerBox
from agentnb.notebook.trace.text import summary_line, trace_text
from agentnb.run.result import RunResult
from agentnb.untrusted import html_widget


class TraceWidget(TraceControls, LiveDisplay, widgets.VBox):
    """A live view of one agent run.

    Args:
        interval: at most one re-render per this many seconds while events stream in.
        preview: results longer than this many characters are cut, with a "show all" toggle.
        open_depths: keep only the newest this-many depth sections open as the run goes on
            (the Expand all / Collapse all buttons override it).
        history: the conversation this run continues (a RunResult or messages): its earlier
            turns are listed, folded, above the trace.
        clock: a monotonic clock (injectable for tests).
        show_on_start: in a notebook cell, display the widget live when its run starts, unless
            it is displayed already (so ``agent.run(..., on_event=w); w`` is live, shown once).
    """

    def __init__(
        self,
        *,
        interval: float = 0.1,
        preview: int = 400,
        open_depths: int = 4,
        history: RunResult | Sequence[Message] | None = None,
        clock: Callable[[], float] = time.monotonic,
        show_on_start: bool = True,
    ) -> None:
        self.show_on_start = show_on_start
        self.state = TraceState()
        self.result: RunResult | None = None
        self.expanded: bool | None = None  # None: the newest open_depths sections are open
        self._earlier: tuple[Message, ...] = ()
        self._paused_total = 0.0
        self._paused_since: float | None = None
        self.interval = interval
        self.preview = preview
        self.open_depths = open_depths
        self.renders = 0  # how many times the widgets were updated (the throttle bounds it)
        self.pause_text: str | None = None
        self.pause: Pause | None = None
        self._clock = clock
        self._last = -1e9
        self._timer: asyncio.TimerHandle | None = None
        self._ticker: asyncio.TimerHandle | None = None
        self._t0: float | None = None
        self._context_event: Event | None = None
        self._stop_callback: Callable[[], Any] | None = None
        self._header = html_widget(STYLE + header_html(self.state, None))
        self._context = html_widget()  # rendered once per run: a <details> the user opens stays open
        self._context.layout.display = "none"
        self.expand_button = _small_button("Expand all", "plus-square-o", "Open every depth section")
        self.collapse_button = _small_button("Collapse all", "minus-square-o", "Fold every depth section")
        self.expand_button.on_click(lambda _: self.expand_all(True))
        self.collapse_button.on_click(lambda _: self.expand_all(False))
        self._save = html_widget()
        tools = widgets.HBox([self.expand_button, self.collapse_button, self._save])
        tools.layout.align_items = "center"
        tools.layout.flex = "0 0 auto"
        tools.add_class("anb-toolbar")
        self.toolbar = tools
        self.stop_button = widgets.Button(
            description="Stop", icon="stop", button_style="danger", disabled=True, tooltip="Stop the run"
        )
        self.stop_button.layout.width = "80px"
        self.stop_button.layout.flex = "0 0 auto"
        self.stop_button.on_click(lambda _: self.request_stop())
        # Depths are <details> sections inside two HTML widgets, not a widget each: building a
        # widget costs ~1 ms, more than a whole scripted step. Finished depths sit in one box
        # (re-rendered only when a depth is added to it), the depth in progress in the other.
        self._inner: dict[int, str] = {}
        self._titles: dict[int, str] = {}
        self._settled = 0  # depths below this are in the settled box
        self._settled_box = html_widget()
        self._live_box = html_widget()
        self._body = widgets.VBox([self._settled_box, self._live_box])
        # The answer is sanitized HTML (agentnb.untrusted), never a Markdown output bundle: an
        # Output widget renders its bundles as trusted, and the answer's HTML would run.
        self.answer_html = html_widget()
        self._answer_label = html_widget()
        answer = widgets.VBox([self._answer_label, self.answer_html])
        answer.layout.padding = "0 0 0 10px"
        answer.add_class("anb-answer")
        self._header.layout.flex = "1 1 auto"
        head = widgets.HBox([self._header, tools, self.stop_button])
        head.layout.justify_content = "space-between"
        head.layout.align_items = "center"
        self._answer_box = answer
        from agentnb.notebook.approval import ApprovalPanel

        #: The pending call's Approve / Deny / Edit arguments (this widget is the run's approver).
        self.approval = ApprovalPanel(ended=lambda: self.state.finished is not None)
        self.steer = SteerBox()  #: "Tell the agent…": shown while a run with an inbox goes on
        super().__init__([head, self._context, self._body, self.approval, self.steer, answer])
        self.set_history(history)
        self.layout.border = "1px solid var(--jp-border-color2, #d0d7de)"
        self.layout.padding = "6px 10px"
        self.add_class("anb-trace")

    # --- feeding ---------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        """Take one event; the view updates now or at the next throttle tick."""
        kind = event.kind
        now = self._clock()
        if kind == "run_started":
            self._t0 = now
            self.approval.approve_rest = False  # "Approve all" holds for one run
            self._start_ticker()
            self._context_event = event  # rendered with the first flush
            if self.show_on_start:
                self._show_on_start()
            self._offer_stop()
            self._offer_steer()
        elif kind == "user_interjected":
            self.steer.delivered(event.depth)
        self.state.add(event, now)
        if kind == "run_finished":
            self._run_over(event.stop_reason)  # type: ignore[union-attr]
            self._end_pause(now)
            self._cancel(self._ticker)
            self._cancel(self._timer)
            loop = _running_loop()
            if loop is None:
                self._final_render()
            else:  # render right after the run returns, not inside its last step
                self._timer = loop.call_soon(self._final_render)  # type: ignore[assignment]
            return
        if now - self._last >= self.interval:
            if self._timer is None:
                loop = _running_loop()
                if loop is None:
                    self.flush()
                else:  # on the loop's next turn, between steps: never inside the step's own work
                    self._timer = loop.call_soon(self._on_timer)  # type: ignore[assignment]
        elif self._timer is None:
            loop = _running_loop()
            if loop is not None:  # without a loop the final event flushes
                self._timer = loop.call_later(self.interval - (now - self._last), self._on_timer)

    __call__ = handle

    def finish(self, result: RunResult | None = None) -> None:
        """Render everything now (after ``run_finished`` this happens on the next loop turn anyway).

        With the run's ``result``, a "Save transcript" link appears (a download of its JSON).
        """
        if result is not None:
            self._take(result)
        if self.state.finished is not None:
            self._final_render()
        else:
            self.flush()

    def _final_render(self) -> None:
        self._timer = None
        self.flush()
        self.stop_button.disabled = True
        self.stop_button.layout.display = "none"
        self._update_display()

    def _caught_up(self) -> TraceWidget:
        if self.state.finished is not None and (self.state.dirty or self.state.header_dirty):
            self._final_render()
        return self

    def set_history(self, history: RunResult | Sequence[Message] | None) -> None:
        """The conversation this run continues (its earlier turns are listed above the trace)."""
        self._earlier = tuple(
            (history.messages if isinstance(history, RunResult) else history) if history is not None else ()
        )
        if self.state.started is not None:
            self._context.value = STYLE + context_html(self.state.started, self._earlier)

    def expand_all(self, open: bool | None = True) -> None:
        """Open (True) or fold (False) every depth section; None: back to the automatic folding."""
        self.expanded = open
        self._settled_box.value = self._join(range(self._settled))
        self._live_box.value = self._join(d for d in sorted(self._inner) if d >= self._settled)

    # --- reading ---------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """``waiting``, ``running``, ``paused``, or the run's stop reason once it ended."""
        if (self.pause_text or self.state.pause) and self.state.finished is None:
            return "paused"
        return self.state.status

    @property
    def answer(self) -> str | None:
        return self.state.answer

    @property
    def sections(self) -> dict[int, Section]:
        """The collapsible section of each depth rendered so far."""
        self._caught_up()
        return {d: Section(self._titles[d], self._inner[d], self._is_open(d)) for d in sorted(self._inner)}

    def section_html(self, depth: int) -> str:
        return self._caught_up()._inner[depth]

    @property
    def body_html(self) -> str:
        """What the depth sections show now (both boxes)."""
        self._caught_up()
        return self._settled_box.value + self._live_box.value

    @property
    def header_html(self) -> str:
        return self._caught_up()._header.value

    def text(self) -> str:
        """The whole trace as stable plain text (no timings), the run's labels last."""
        text = trace_text(self.state.events, self.status, held=self._held())
        labels = labels_text(getattr(self.result, "labels", ()))
        return f"{text}\n{labels}" if labels else text

    def __repr__(self) -> str:
        return summary_line(self.state.events, self.status, held=self._held())

    def _held(self) -> int:
        p = self.state.pause
        return 1 if p is not None and p.target == "model" and self.state.finished is None else 0

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:  # the widget view
        self._caught_up()
        data = super()._repr_mimebundle_(**kwargs)
        text = self.text()
        # A live display is updated in place when the run ends; nbval compares only the first
        # display, so live ones are marked for a sanitizer (see notebooks/sanitize.cfg).
        data["text/plain"] = self._marked(text)
        snap = snapshot_metadata(self)  # for static HTML exports (agentnb.notebook.export)
        return data, ({KEY: snap} if snap is not None else {})

    def take_run_result(self, result: RunResult) -> None:
        """The result of the run this widget was fed (the agent hands it to an ``on_event`` sink
        after the last event): the "Save transcript" link, and what a fork starts from."""
        started = self.state.started
        if started is not None and getattr(started, "run_id", None) == result.run_id:  # this run's
            self._take(result)

    def _take(self, result: RunResult) -> None:  # renders nothing itself
        if result is self.result:
            return
        self.result = result
        self._save.value = STYLE + save_link(result)
        bar = self.__dict__.get("_anb_fork_bar")
        if bar is not None:  # the fork bar displayed under this trace: a control per step
            bar.fill(result)
        else:  # a trace that stays a widget (in a fork panel): "Fork…" in its toolbar
            from agentnb.notebook.forks.panel import attach  # agentnb.timetravel, loaded here

            attach(self, result)

    # --- showing -------------------------------------------------------------------------

    def _after_display(self) -> None:
        from agentnb.notebook.forks.bar import show_bar  # Fork from here, per step

        show_bar(self)

    def _run_ended(self) -> bool:
        return self.state.finished is not None

    def static_html(self) -> str:
        """The finished trace as HTML that needs no kernel (what a saved notebook shows)."""
        return trace_static_html(self._caught_up())

    @classmethod
    def replay(cls, result: RunResult | str | os.PathLike[str], **options: Any) -> TraceWidget:
        """A widget showing a finished run, from a :class:`RunResult` or a saved transcript."""
        if not isinstance(result, RunResult):
            result = RunResult.load(result)
        w = cls(**{"show_on_start": False, **options})
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
        if self._context_event is not None:  # once per run: a <details> the user opens stays open
            self._context.value = STYLE + context_html(self._context_event, self._earlier)  # type: ignore[arg-type]
            self._context.layout.display = None
            self._context_event = None
        for depth in s.dirty:
            view = s.depths[depth]
            self._inner[depth] = depth_html(view, self.preview, s.pause)
            self._titles[depth] = depth_title(view, s.pause)
        settled = len(s.depths) if s.finished is not None else s.current_depth
        if settled != self._settled or any(d < settled for d in s.dirty):
            self._settled = settled
            self._settled_box.value = self._join(range(settled))
        if s.dirty or s.finished is not None:
            self._live_box.value = self._join(d for d in sorted(self._inner) if d >= settled)
        self._header.value = STYLE + header_html(s, self._elapsed(), self.paused_seconds)
        if s.answer is not None and not self.answer_html.value:
            self._answer_label.value = (
                STYLE + '<div class="anb anb-answer-head"><span class="anb-ok">Final answer</span>'
                f"{copyable(s.answer, hidden=True)}</div>"
            )
            self._answer_box.layout.border_left = "3px solid #1a7f37"
            self.answer_html.value = STYLE + '<div class="anb">' + answer_html(s.answer, s.value) + "</div>"
        s.clean()

    def _is_open(self, depth: int, current: int | None = None) -> bool:
        if self.expanded is not None:
            return self.expanded
        return depth > (self.state.current_depth if current is None else current) - self.open_depths

    def _join(self, depths: Any) -> str:
        current = self.state.current_depth
        inner, titles = self._inner, self._titles
        return "".join(section_html(d, titles[d], inner[d], self._is_open(d, current)) for d in depths if d in inner)

    def _elapsed(self) -> float | None:
        """Time the run has taken, paused time left out."""
        if self.state.finished is not None:
            return max(0.0, self.state.finished.duration - self._paused_total)
        return None if self._t0 is None else max(0.0, self._clock() - self._t0 - self.paused_seconds)

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
        if self.result is None and self.state.finished is not None:  # fed by on_event: save its events
            self._save.value = STYLE + save_link(events_result(self.state))
        self._publish_static()  # a saved notebook then shows the trace without a kernel


def fork_editor(result: RunResult, at: int | None = None) -> Any:
    """The fork editor of a finished run, open at step ``at`` (what ``%agent --fork N`` shows)."""
    from agentnb.notebook.forks.panel import ForkPanel

    return ForkPanel(result, TraceWidget, at=at)


def _small_button(label: str, icon: str, tip: str) -> widgets.Button:
    b = widgets.Button(description=label, icon=icon, tooltip=tip)
    b.layout.width = "auto"
    b.layout.height = "24px"
    b.add_class("anb-small")
    return b


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
