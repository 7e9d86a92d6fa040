"""Views of an improvement, fed by its events: a live notebook widget (with Stop), a terminal bar,
and a widget over the finished result whose rows open their traces.

The live widget shows the candidates as they are scored, the best so far and the budget spent;
Stop ends the search and keeps the best so far. When the search ends its display is replaced by
static HTML (the summary, the table, the diff), so a saved notebook shows it without a kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

from agentnb.improvement.report import candidates_html, diff_html, improvement_html, summary_lines, summary_text
from agentnb.untrusted import html_widget, untrusted_html, untrusted_terminal

#: Seconds between redraws while runs finish.
INTERVAL = 0.25


class Tally:
    """What the views show, folded from the events.

    >>> from agentnb.improvement.events import CandidateDone, PhaseStarted, RunsSpent
    >>> t = Tally()
    >>> t.event(RunsSpent(4, 20))
    >>> t.event(CandidateDone({"status": "seed", "id": "c1"}, "c1", 0.5))
    >>> t.line()
    'runs 4/20 · 1 candidates (0 accepted) · best c1: 50% on validation'
    >>> t.event(PhaseStarted("reflection", 1, "c1"))
    >>> t.now
    'step 1: the reflector reads the failures of candidate c1'
    """

    def __init__(self) -> None:
        self.spent = 0
        self.budget = 0
        self.records: list[dict[str, Any]] = []
        self.best = ""
        self.best_score = 0.0
        self.reason = ""
        self.now = ""  # the phase under way, in words ("" once it ended)

    def event(self, e: Any) -> None:
        if e.kind == "phase_started":
            self.now = e.text
        elif e.kind == "improve_started":
            self.budget = e.budget
        elif e.kind == "runs_spent":
            self.spent, self.budget = e.spent, e.budget
        elif e.kind == "candidate_done":
            self.records.append(e.record)
            self.best, self.best_score = e.best, e.best_score
        elif e.kind == "improve_finished":
            self.reason, self.now = e.reason, ""

    def line(self) -> str:
        accepted = sum(1 for r in self.records if r["status"] == "accepted")
        best = f" · best {self.best}: {self.best_score:.0%} on validation" if self.best else ""
        return f"runs {self.spent}/{self.budget} · {len(self.records)} candidates ({accepted} accepted){best}"


class _Records:
    """Just enough of an Improvement for :func:`candidates_html` while the search runs."""

    def __init__(self, tally: Tally) -> None:
        self._search = type("S", (), {"records": tally.records})()
        self.best_id = tally.best


class ImproveWidget:
    """The live notebook view: budget bar, Stop, the best so far and the candidates table."""

    def __init__(self) -> None:
        import ipywidgets as widgets
        from IPython.display import display

        self.tally = Tally()
        self.bar = widgets.IntProgress(value=0, min=0, max=1)
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="warning")
        self.line = html_widget()
        self.table = html_widget()
        self.now = html_widget()
        self.widget = widgets.VBox([widgets.HBox([self.bar, self.stop_button]), self.line, self.now, self.table])
        self._last = 0.0
        self._behind = self._closed = False  # a count held back by the throttle; the search ended
        self._cell = contextlib.ExitStack()
        self._handle: Any = display(self.widget, display_id=True)

    def start(self, stopper: Any) -> None:
        self.stop_button.on_click(lambda _: self._stop(stopper))
        # Under improve(...) the cell's thread waits for the search: it serves the widget's
        # messages meanwhile (as evaluate's progress widget does), or Stop would arrive at the end.
        from agentnb.notebook.cells.inplace import lent_cell

        self._cell.enter_context(lent_cell())

    def _stop(self, stopper: Any) -> None:
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        stopper.stop()

    def event(self, e: Any) -> None:
        self.tally.event(e)
        now = time.monotonic()
        if e.kind != "runs_spent" or now - self._last >= INTERVAL:
            self._last = now
            self._draw(table=e.kind == "candidate_done")
        elif not self._behind:  # held back: drawn a moment later, or a search that waits would show a stale count
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop runs: the next event draws it
                return
            self._behind = True
            loop.call_later(INTERVAL, self._catch_up)

    def _catch_up(self) -> None:
        self._behind = False
        if not self._closed:
            self._last = time.monotonic()
            self._draw(table=False)

    def _draw(self, table: bool = True) -> None:
        t = self.tally
        self.bar.max = max(1, t.budget)
        self.bar.value = min(t.spent, self.bar.max)
        self.line.value = untrusted_html(t.line())
        self.now.value = untrusted_html("now: " + t.now) if t.now else ""
        if table:
            self.table.value = candidates_html(_Records(t))

    def finish(self, imp: Any) -> None:
        from IPython.display import HTML

        self._cell.close()
        self._closed = True
        self.stop_button.disabled = True
        if self._handle is not None:
            self._handle.update(HTML(improvement_html(imp)))  # static: readable without a kernel
        self.widget.close()


class TerminalBar:
    """A one-line bar on a terminal stream, redrawn in place; the summary follows at the end."""

    def __init__(self, stream: Any = None, summary: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.summary = summary
        self.tally = Tally()
        self._last = 0.0

    def start(self, stopper: Any) -> None:
        pass

    def event(self, e: Any) -> None:
        self.tally.event(e)
        now = time.monotonic()
        if e.kind != "runs_spent" or now - self._last >= INTERVAL / 2:
            self._last = now
            self.stream.write("\r" + self.text() + "\x1b[K")
            self.stream.flush()

    def text(self) -> str:
        t = self.tally
        width = 24
        filled = int(width * t.spent / max(1, t.budget))
        return untrusted_terminal(f"[{'#' * filled}{'.' * (width - filled)}] {t.line()}")

    def finish(self, imp: Any) -> None:
        self.stream.write("\r" + self.text() + "\x1b[K\n")
        if self.summary:
            self.stream.write(summary_text(imp) + "\n")
        self.stream.flush()


class ImprovementView:
    """A widget over a finished improvement: the summary, the candidates, the diff, and the trace
    of any run (pick a candidate and one of its cases)."""

    def __init__(self, imp: Any) -> None:
        import ipywidgets as widgets

        self.imp = imp
        ids = [r["id"] for r in imp._search.records if r["id"] and imp.runs_of(r["id"])]
        self.candidate = widgets.Dropdown(options=ids, value=imp.best_id if imp.best_id in ids else None)
        self.candidate.description = "candidate"
        self.case = widgets.Dropdown(options=[], description="case")
        self.open = widgets.Button(description="open trace", icon="search")
        self.trace = widgets.Output()
        self.candidate.observe(lambda _: self._cases(), "value")
        self.open.on_click(lambda _: self.show())
        items = "".join(f"<li>{untrusted_html(line)}</li>" for line in summary_lines(imp))
        top = html_widget(f"<ul>{items}</ul>{candidates_html(imp)}")
        diff = html_widget(diff_html(imp.diff()))
        controls = widgets.HBox([self.candidate, self.case, self.open])
        self.widget = widgets.VBox([top, diff, controls, self.trace])
        self._cases()

    def _cases(self) -> None:
        cid = self.candidate.value
        self.case.options = self.imp.runs_of(cid) if cid else []

    def show(self) -> None:
        self.trace.clear_output()
        if not self.candidate.value or not self.case.value:
            return
        with self.trace:
            from IPython.display import display

            display(self.imp.trace(self.candidate.value, self.case.value))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        data = self.widget._repr_mimebundle_(**kwargs)
        data, meta = data if isinstance(data, tuple) else (data, {})
        data = dict(data)
        data["text/plain"] = summary_text(self.imp)
        return data, meta


def auto_view(force: bool = False) -> Any:
    """A widget in a notebook kernel, a bar on a terminal, else nothing (``force``: a bar anyway)."""
    from agentnb.evaluation.progress import _in_kernel

    if _in_kernel():
        try:
            return ImproveWidget()
        except ImportError:
            pass
    if force or getattr(sys.stderr, "isatty", lambda: False)():
        return TerminalBar()
    return None
