"""``agentnb.runs()`` in a notebook: kept runs as a table with a search box and filters; a row
opens its trace or the fork editor, two rows open their diff.

Like the evaluation view (:mod:`agentnb.evaluation.view`), the widget is live while you use it
and *replaced* by a static copy when the next cell runs (a widget needs its kernel): the
filters as set, the table as shown and the opened trace or diff as text. Every prompt, answer,
note, tool and name in it is untrusted text: escaped as it goes in (:func:`agentnb.untrusted.
untrusted_html`), the table's HTML finished by :func:`agentnb.untrusted.static_view`, every HTML
widget made by :func:`agentnb.untrusted.html_widget` (no live HTML, script or TeX).

>>> rows = [{"date": "2026-12-07 10:00:00", "agent": "a", "model": "m", "prompt": "<b>hi</b>",
...          "answer": "$x$", "stop_reason": "answer", "tools": "", "cost": None, "tokens": 3,
...          "label": "bad", "note": "<img src=x onerror=alert(1)>"}]
>>> html = table_html(rows, 1)
>>> "<b>" in html, "&lt;b&gt;hi&lt;/b&gt;" in html, "onerror=alert" in html.replace("&lt;img src=x onerror=alert(1)&gt;", "")
(False, True, False)
"""

from __future__ import annotations

from typing import Any

from agentnb.runstore.schema import LABELS
from agentnb.untrusted import html_widget, static_view
from agentnb.untrusted import untrusted_html as esc

#: Rows the table shows (the newest that match); narrow with the search box and filters.
PAGE = 50
#: Characters of a prompt or an answer in a cell (the trace has the rest).
CLIP = 120
_CSS = (
    ".anb-runs{font-size:12px}.anb-runs th,.anb-runs td{text-align:left;padding:2px 6px;"
    "vertical-align:top;border-bottom:1px solid #ddd}.anb-bad{color:#b00020}.anb-good{color:#1b5e20}"
)
_COLUMNS = ("row", "date", "agent", "model", "prompt", "answer", "stop", "tools", "cost", "tokens", "label")
ANY = "(any)"


def _clip(text: Any) -> str:
    text = "" if text is None else str(text)
    return text if len(text) <= CLIP else text[: CLIP - 1] + "…"


def _runs(n: int) -> str:
    return f"{n} run, newest first" if n == 1 else f"{n} runs, newest first"


def table_html(rows: list[dict[str, Any]], total: int) -> str:
    """The rows as a static, sanitized HTML table (every value escaped), with how many match."""
    head = "".join(f"<th>{c}</th>" for c in _COLUMNS)
    body = []
    for i, r in enumerate(rows):
        label = r.get("label") or ""
        mark = f' class="anb-{label}"' if label in ("good", "bad") else ""
        if r.get("note"):
            label = f"{label}: {r['note']}"
        cost = "" if r.get("cost") is None else f"${r['cost']:.4f}"
        cells = (i, r["date"], r["agent"], r["model"], _clip(r["prompt"]), _clip(r["answer"]), r["stop_reason"],
                 r["tools"], cost, r["tokens"], _clip(label))  # fmt: skip
        body.append("<tr>" + "".join(f"<td{mark if k == 10 else ''}>{esc(_clip(c))}</td>" for k, c in enumerate(cells)))
    shown = f"{len(rows)} of {_runs(total)}" if total > len(rows) else _runs(total)
    table = f'<table class="anb-runs"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    return static_view(f'<div class="anb-runs"><p>{esc(shown)}</p>{table}</div>', _CSS)


class RunsView:
    """The widget: search, filters (agent, model, label, stop reason), the table, and for the
    selected rows "open trace", "fork" and "diff" (two rows)."""

    def __init__(self, runs: Any) -> None:  # a Runs (agentnb.runstore.query)
        import ipywidgets as widgets

        self.runs = runs
        self.search = widgets.Text(placeholder="search prompts, answers, notes", continuous_update=False)
        self.agent = widgets.Dropdown(options=[ANY, *self._distinct("agent")], description="agent")
        self.model = widgets.Dropdown(options=[ANY, *self._distinct("model")], description="model")
        self.label = widgets.Dropdown(options=[ANY, *LABELS], description="label")
        self.stop = widgets.Dropdown(options=[ANY, *self._distinct("stop_reason")], description="stop")
        self.picked = widgets.SelectMultiple(options=[], rows=6, description="rows")
        self.open = widgets.Button(description="open trace", icon="search")
        self.fork = widgets.Button(description="fork…", icon="code-branch")
        self.diff = widgets.Button(description="diff two", icon="columns")
        self.html = html_widget()
        self.out = widgets.Output()
        self.rows: list[dict[str, Any]] = []
        self.opened: tuple[str, Any] | None = None  # what the output shows: (title, trace or diff)
        self._handles: list[Any] = []
        for w in (self.search, self.agent, self.model, self.label, self.stop):
            w.observe(lambda _: self.render(), "value")
        self.open.on_click(lambda _: self.show_trace())
        self.fork.on_click(lambda _: self.show_fork())
        self.diff.on_click(lambda _: self.show_diff())
        filters = widgets.HBox([self.search, self.agent, self.model, self.label, self.stop])
        actions = widgets.HBox([self.picked, widgets.VBox([self.open, self.fork, self.diff])])
        self.widget = widgets.VBox([filters, actions, self.out, self.html])
        self.render()

    def _distinct(self, column: str) -> list[str]:
        return [v for (v,) in self.runs._query(f"DISTINCT {column}", f" ORDER BY {column}") if v is not None]

    def selection(self) -> Any:
        """The runs the filters and the search box select."""
        chosen = {k: w.value for k, w in (("agent", self.agent), ("model", self.model), ("stop_reason", self.stop))}
        picked = self.runs.where(**{k: v for k, v in chosen.items() if v != ANY})
        if self.label.value != ANY:
            picked = picked.where(label=self.label.value)
        return picked.search(self.search.value) if self.search.value else picked

    def render(self) -> None:
        chosen = self.selection()
        self.rows = chosen.rows(limit=PAGE)
        self.total = len(chosen)
        self.picked.options = [(f"{i}: {r['date']} {_clip(r['prompt'])[:50]}", i) for i, r in enumerate(self.rows)]
        self.html.value = table_html(self.rows, self.total)

    def _result(self, i: int) -> Any:
        return self.runs.get(self.rows[i]["id"])

    def _show(self, title: str, shown: Any) -> Any:
        from IPython.display import display

        self.opened = (title, shown)
        self.out.clear_output()
        with self.out:
            print(title)
            display(shown)
        return shown

    def show_trace(self, i: int | None = None) -> Any:
        """Open row ``i``'s trace (by default the first selected row), replayed from its transcript."""
        from agentnb.notebook.trace.widget import TraceWidget

        i = self._one(i)
        return None if i is None else self._show(f"trace of row {i}", TraceWidget.replay(self._result(i)))

    def show_fork(self, i: int | None = None) -> Any:
        """Open the fork editor on row ``i`` (continues with ``runs(agent=...)``'s agent)."""
        from agentnb.notebook.forks.panel import ForkPanel
        from agentnb.notebook.trace.widget import TraceWidget

        i = self._one(i)
        if i is None:
            return None
        if self.runs.agent is None:
            return self._show("fork: a kept run has no agent; open the view with agentnb.runs(agent=...)", "")
        return self._show(f"fork of row {i}", ForkPanel(self._result(i), TraceWidget))

    def show_diff(self, i: int | None = None, j: int | None = None) -> Any:
        """The diff of rows ``i`` and ``j`` (by default the two selected rows)."""
        from agentnb.timetravel.diff import diff

        if i is None or j is None:
            if len(self.picked.value) != 2:
                return self._show("diff: select two rows", "")
            i, j = sorted(self.picked.value)
        return self._show(
            f"diff of rows {i} and {j}", diff(self._result(i), self._result(j), labels=(f"row {i}", f"row {j}"))
        )

    def _one(self, i: int | None) -> int | None:
        if i is not None:
            return i
        if not self.picked.value:
            self._show("select a row first", "")
            return None
        return int(self.picked.value[0])

    # --- showing -------------------------------------------------------------------------

    def static_html(self) -> str:
        """The view without a kernel: filters as set, the table as shown, what was opened as text."""
        filters = ", ".join(
            f"{name}: {w.value}" for name, w in (("search", self.search), ("agent", self.agent), ("model", self.model),
                                                   ("label", self.label), ("stop", self.stop)) if w.value not in ("", ANY)
        )  # fmt: skip
        opened = ""
        if self.opened is not None:
            title, shown = self.opened
            text = shown.text() if hasattr(shown, "text") else str(shown)
            opened = f"<details open><summary>{esc(title)}</summary><pre>{esc(text)}</pre></details>"
        note = f"<p><i>A static copy of agentnb.runs() ({esc(filters or 'no filter')}): run it again for the live table.</i></p>"
        return static_view(f"{opened}{note}") + table_html(self.rows, self.total)

    def static_bundle(self) -> dict[str, Any]:
        kept = "kept run" if self.total == 1 else "kept runs"
        return {"text/html": self.static_html(), "text/plain": f"{len(self.rows)} of {self.total} {kept}"}

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        from agentnb.notebook.trace.display import view_bundle

        kept = "kept run" if self.total == 1 else "kept runs"
        return view_bundle(self.widget, f"{self.total} {kept} in {self.runs.path}", self.static_html(), **kwargs)

    def _ipython_display_(self) -> None:
        from agentnb.notebook.trace.display import show_until_next_cell

        show_until_next_cell(self)

    def freeze(self) -> None:
        """Replace this view's displays by their static copy (what a saved notebook keeps)."""
        from agentnb.notebook.trace.display import replace_displays

        replace_displays(self._handles, self.static_bundle())
        self._handles = []
        for w in (self.search, self.agent, self.model, self.label, self.stop, self.picked, self.open, self.fork,
                  self.diff, self.html, self.out, self.widget):  # fmt: skip
            w.close()
