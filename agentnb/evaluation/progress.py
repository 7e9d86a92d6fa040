"""Progress views fed by finished rows: a notebook widget (with Stop) and a terminal bar.

Both fold rows into a :class:`Tally` (done / total, pass rate so far, throughput, errors,
time left, per agent) and redraw at most a few times a second. When the evaluation ends, the
widget's display is replaced by static HTML, so a saved notebook shows it without a kernel.

>>> now = [0.0]
>>> t = Tally(["a"], total=4, clock=lambda: now[0])
>>> t.add({"agent": "a", "passed": True, "error": None})
>>> now[0] = 2.0
>>> t.line("a")
'a: 1/4 done · 100% passed · 0 errors'
>>> t.rate(), t.left()
(0.5, 6.0)
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

from agentnb.untrusted import NO_MATH, html_widget, untrusted_html, untrusted_terminal

#: Seconds between redraws while rows arrive.
INTERVAL = 0.25


class Tally:
    """Counts per agent, from rows; ``already`` rows came from the log (not counted in throughput)."""

    def __init__(self, agents: list[str], total: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.agents = agents
        self.total = total
        self.per_agent = total // max(1, len(agents))
        self.done = dict.fromkeys(agents, 0)
        self.passed = dict.fromkeys(agents, 0)
        self.errors = dict.fromkeys(agents, 0)
        self.new = 0
        self.from_log = 0  # rows read back from the log (a resume), not run now
        self.clock = clock
        self.started = clock()

    def add(self, row: dict[str, Any], new: bool = True) -> None:
        a = row["agent"]
        self.done[a] = self.done.get(a, 0) + 1
        self.passed[a] = self.passed.get(a, 0) + bool(row.get("passed"))
        self.errors[a] = self.errors.get(a, 0) + bool(row.get("error") or row.get("scorer_errors"))
        self.new += new
        self.from_log += not new

    @property
    def finished(self) -> int:
        return sum(self.done.values())

    def rate(self) -> float:
        """Runs per second since the start (this session's runs only)."""
        elapsed = self.clock() - self.started
        return self.new / elapsed if elapsed > 0 else 0.0

    def left(self) -> float | None:
        rate = self.rate()
        return (self.total - self.finished) / rate if rate > 0 else None

    def line(self, agent: str) -> str:
        d = self.done.get(agent, 0)
        rate = f"{self.passed[agent] / d:.0%}" if d else "–"
        return f"{agent}: {d}/{self.per_agent} done · {rate} passed · {self.errors.get(agent, 0)} errors"

    def speed(self) -> str:
        left = self.left()
        eta = "" if left is None or self.finished >= self.total else f" · ~{left:.0f} s left"
        resumed = f" · {self.from_log} from the log (resumed)" if self.from_log else ""
        return f"{self.rate():.1f} runs/s{eta}{resumed}"


class ProgressWidget:
    """The notebook view: one line per agent, throughput and time left, and a Stop button."""

    def __init__(self) -> None:
        import ipywidgets as widgets

        self.bar = widgets.IntProgress(value=0, min=0, max=1)
        self.lines = html_widget()
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="warning")
        self.widget = widgets.VBox([widgets.HBox([self.bar, self.stop_button]), self.lines])
        self.tally: Tally | None = None
        self._last = 0.0
        self._cell = contextlib.ExitStack()
        from IPython.display import display

        self._handle: Any = display(self.widget, display_id=True)

    def start(self, ev: Any, total: int, stopper: Any) -> None:
        self.tally = Tally(ev.agents, total)
        for row in ev.rows:
            self.tally.add(row, new=False)
        self.bar.max = max(1, total)
        self.stop_button.on_click(lambda _: self._stop(stopper))
        # Under evaluate(...) / %agent_eval the cell's thread waits for the runs: it serves the
        # widget's messages meanwhile, or the Stop click would arrive only once all had run.
        from agentnb.notebook.cells.inplace import lent_cell

        self._cell.enter_context(lent_cell())
        self._draw()

    def _stop(self, stopper: Any) -> None:
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        stopper.stop()

    def row(self, row: dict[str, Any]) -> None:
        assert self.tally is not None
        self.tally.add(row)
        now = time.monotonic()
        if now - self._last >= INTERVAL:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        t = self.tally
        assert t is not None
        self.bar.value = t.finished
        lines = [untrusted_html(t.line(a)) for a in t.agents]
        self.lines.value = "<br>".join([*lines, untrusted_html(t.speed())])

    def finish(self, ev: Any) -> None:
        from IPython.display import HTML

        self._cell.close()
        t = self.tally
        assert t is not None
        self._draw()  # the last rows, which the throttle may have held back
        self.stop_button.disabled = True
        from agentnb.evaluation.report import stopped_note

        state = "stopped" if ev.stopped else "finished"
        note = f"<br>{untrusted_html(stopped_note(ev))}" if ev.stopped else ""
        resumed = f" ({t.from_log} read back from the log)" if t.from_log else ""
        lines = "<br>".join(untrusted_html(t.line(a)) for a in t.agents)
        html = (
            f'<div class="{NO_MATH}"><b>evaluation {state}</b>: {untrusted_html(str(t.finished))}/{untrusted_html(str(t.total))} '
            f"runs{untrusted_html(resumed)}<br>{lines}{note}</div>"
        )
        if self._handle is not None:
            self._handle.update(HTML(html))  # static: a saved notebook shows it without a kernel
        self.widget.close()


class TerminalProgress:
    """A one-line bar on a terminal stream, redrawn in place; the summary follows when it ends."""

    def __init__(self, stream: Any = None, summary: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.summary = summary
        self.tally: Tally | None = None
        self._last = 0.0

    def start(self, ev: Any, total: int, stopper: Any) -> None:
        self.tally = Tally(ev.agents, total)
        for row in ev.rows:
            self.tally.add(row, new=False)

    def row(self, row: dict[str, Any]) -> None:
        assert self.tally is not None
        self.tally.add(row)
        now = time.monotonic()
        if now - self._last >= INTERVAL / 2 or self.tally.finished == self.tally.total:
            self._last = now
            self.stream.write("\r" + self.text() + "\x1b[K")
            self.stream.flush()

    def text(self) -> str:
        t = self.tally
        assert t is not None
        width = 24
        filled = int(width * t.finished / max(1, t.total))
        passed, done = sum(t.passed.values()), t.finished
        rate = f"{passed / done:.0%}" if done else "–"
        return (
            f"[{'#' * filled}{'.' * (width - filled)}] {done}/{t.total} · {rate} passed · "
            f"{sum(t.errors.values())} errors · {t.speed()}"
        )

    def finish(self, ev: Any) -> None:
        if self.tally is not None and self.tally.new:
            self.stream.write("\r" + self.text() + "\x1b[K\n")
        if self.summary:
            self.stream.write(untrusted_terminal(repr(ev)) + "\n")
        self.stream.flush()


def auto_view(force: bool = False) -> Any:
    """A widget in a notebook kernel, a bar on a terminal, else nothing (``force``: a bar anyway)."""
    if _in_kernel():
        try:
            return ProgressWidget()
        except ImportError:
            pass
    if force or getattr(sys.stderr, "isatty", lambda: False)():
        return TerminalProgress()
    return None


def _in_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None
