"""``ev.view()``: the evaluation as a widget, live while you use it, static once you move on.

The widget: the summary, controls (sort by any column, a row, "open trace") and the table
(failing rows first). The opened trace shows between the controls and the table, where the
click was, not below fifty rows.

A widget output needs its kernel: reopened without it, JupyterLab shows "Error displaying
widget: model not found". So, like the trace widget when its run ends, the view's display is
*replaced* by static HTML, here when the next cell runs (the view was left): the summary, the
table as it was sorted, and the opened trace as text. A saved notebook, nbviewer and an HTML
export show that. It is built from escaped text only. ``ev.view()`` again gives a live one.

>>> from agentnb import Agent, evaluate
>>> from agentnb.testing import ScriptedProvider
>>> ev = evaluate(Agent(ScriptedProvider(["<b>4</b>"])), ["2 + 2?"], scorers=["contains"], progress=False)
>>> "&lt;b&gt;4&lt;/b&gt;" in EvaluationView(ev).static_html()
True
"""

from __future__ import annotations

from typing import Any

from agentnb.evaluation.report import summary_html, summary_text, table_html
from agentnb.untrusted import NO_MATH, html_widget, untrusted_html


class EvaluationView:
    """A widget: summary, table (sort by any column; failing rows first) and "open trace" for a row."""

    def __init__(self, ev: Any) -> None:
        import ipywidgets as widgets

        self.ev = ev
        columns = ["failing first", "row", "case", "agent", *ev.scorers, "latency", "stop_reason", "output"]
        self.sort = widgets.Dropdown(options=columns, value="failing first", description="sort by")
        self.descending = widgets.Checkbox(value=False, description="descending")
        self.row = widgets.BoundedIntText(value=0, min=0, max=max(0, len(ev.rows) - 1), description="row")
        self.open = widgets.Button(description="open trace", icon="search")
        self.html = html_widget()
        self.trace = widgets.Output()
        self.shown: int | None = None  # the row whose trace is open
        self._opened: Any = None
        self._handles: list[Any] = []
        self.sort.observe(lambda _: self.render(), "value")
        self.descending.observe(lambda _: self.render(), "value")
        self.open.on_click(lambda _: self.show(self.row.value))
        controls = widgets.HBox([self.sort, self.descending, self.row, self.open])
        parts = [html_widget(summary_html(ev)), controls]
        self.changed = self.diff_button = None
        if len(ev.agents) >= 2:  # a comparison: each case that changed verdict opens its diff
            cases = _changed_cases(ev)
            self.changed = widgets.Dropdown(options=cases, description="changed")
            self.diff_button = widgets.Button(description="diff", icon="columns", disabled=not cases)
            self.diff_button.on_click(lambda _: self.show_diff(self.changed.value))
            parts.append(widgets.HBox([self.changed, self.diff_button]))
        # The trace opens right under the controls (where "open trace" was clicked), above the table.
        self.widget = widgets.VBox([*parts, self.trace, self.html])
        self.render()

    def render(self) -> None:
        self.html.value = table_html(self.ev, self._sort_key(), ascending=not self.descending.value)

    def _sort_key(self) -> str | None:
        return None if self.sort.value == "failing first" else self.sort.value

    def show(self, i: int) -> None:
        """Open row ``i``'s trace (between the controls and the table)."""
        from IPython.display import display

        self._opened = self.ev.trace(i)
        self.shown = i
        self.trace.clear_output()
        with self.trace:
            print(f"trace of row {i}:")
            display(self._opened)

    def show_diff(self, case: Any) -> None:
        """The diff of the first two agents' runs of ``case`` (a click on "diff"), where a trace opens."""
        from IPython.display import display

        self._opened = self.ev.diff(case)
        self.shown = None
        self.trace.clear_output()
        with self.trace:
            display(self._opened)

    # --- showing -------------------------------------------------------------------------

    def static_html(self) -> str:
        """The view without a kernel: summary, the table as sorted, the opened trace as text."""
        trace = ""
        if self._opened is not None:
            what = "diff" if self.shown is None else f"trace of row {self.shown}"
            trace = (
                f"<details open><summary>{untrusted_html(what)}</summary>"
                f"<pre>{untrusted_html(_as_text(self._opened))}</pre></details>"
            )
        table = table_html(self.ev, self._sort_key(), ascending=not self.descending.value)
        note = "<p><i>A static copy of ev.view(): run it again for the live table.</i></p>"
        return f'<div class="{NO_MATH}">{summary_html(self.ev)}{trace}{table}{note}</div>'

    def static_bundle(self) -> dict[str, Any]:
        return {"text/html": self.static_html(), "text/plain": summary_text(self.ev)}

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        from agentnb.notebook.trace.display import view_bundle

        return view_bundle(self.widget, summary_text(self.ev), self.static_html(), **kwargs)

    def _ipython_display_(self) -> None:
        from agentnb.notebook.trace.display import show_until_next_cell

        show_until_next_cell(self)

    def freeze(self) -> None:
        """Replace this view's displays by their static copy (what a saved notebook keeps)."""
        from agentnb.notebook.trace.display import replace_displays

        replace_displays(self._handles, self.static_bundle())
        self._handles = []
        for w in (self.sort, self.descending, self.row, self.open, self.html, self.trace, self.widget):
            w.close()
        for w in (self.changed, self.diff_button):
            if w is not None:
                w.close()


def _changed_cases(ev: Any) -> list[Any]:
    """The cases whose verdict differs between the first two agents, in dataset order."""
    try:
        changed = ev.compare().changed
    except Exception:
        return []
    return list(dict.fromkeys(changed["case"])) if len(changed) else []


def _as_text(shown: Any) -> str:
    """An opened trace (its text form) or diff (its plain-text form)."""
    return shown.text() if hasattr(shown, "text") else str(shown)
