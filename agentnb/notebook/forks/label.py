"""Label a finished run from its trace: 👍 / 👎, a note, the expected answer, Save.

The control sits in the bar under a finished trace, beside Fork from here
(:mod:`agentnb.notebook.forks.bar`), for every run whose result is known, a loaded transcript's
too. Save calls :meth:`RunResult.label <agentnb.run.result.RunResult.label>`: the label goes
where a label from Python goes (the run's labels, its transcript file, the callbacks of
:func:`agentnb.run.labels.on_label`). Its static copy (:meth:`LabelControl.static_copy`) is the
run's labels as escaped text, which the bar's display keeps beside its widget view and leaves
in the notebook when the next cell runs.

The expected answer is prefilled with the run's answer, to edit. Left as it is, it is saved
only with a 👍 (the run's answer was the right one); with a 👎 or no verdict the label keeps no
expected answer: the run's own answer is not what was expected.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> control = LabelControl(Agent(ScriptedProvider(["Lyon."])).run("Capital of France?"))
>>> control.expected.value
'Lyon.'
>>> control.good.value, control.note.value, control.expected.value = False, "wrong city", "Paris."
>>> control.save().expected, control.result.labels[-1].note
('Paris.', 'wrong city')
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from agentnb.errors import UserError
from agentnb.notebook.trace.blocks import STYLE
from agentnb.notebook.trace.labels import labels_html, labels_text
from agentnb.untrusted import html_widget, static_view
from agentnb.untrusted import untrusted_html as escape

_CSS = STYLE.removeprefix("<style>").removesuffix("</style>")


class LabelControl(widgets.VBox):
    """The label editor of one finished run (``result``, a RunResult); ``on_change`` is called
    after each saved label (the bar's display refreshes its static copy)."""

    def __init__(self, result: Any, on_change: Callable[[], Any] | None = None) -> None:
        self.result = result
        self.on_change = on_change
        # Labels are typeset by nothing: emoji and plain words, no "$" or backslash.
        self.good = widgets.ToggleButtons(
            options=[("👍 good", True), ("👎 bad", False)],
            value=None,
            tooltips=["The run did well", "The run went wrong"],
            description="Label:",
            style={"button_width": "auto", "description_width": "initial"},
        )
        self.note = widgets.Text(placeholder="note: why, what went wrong")
        self.note.layout.flex = "1 1 auto"
        self.expected = widgets.Textarea(value=result.output, rows=2, placeholder="the expected answer")
        self.expected.layout.width = "auto"
        self.expected.add_class("anb-label-expected")
        self.save_button = widgets.Button(description="Save label", icon="tag", tooltip="Save this label with the run")
        self.save_button.layout.width = "auto"
        self.save_button.on_click(lambda _: self.save())
        self.shown = html_widget(STYLE + labels_html(result.labels))  # the labels so far, then a problem
        row = widgets.HBox([self.good, self.note, self.save_button])
        row.layout.flex_flow = "row wrap"
        row.layout.align_items = "center"
        super().__init__([row, self.expected, self.shown])
        self.add_class("anb-labeller")

    def save(self) -> Any:
        """What Save does: the label from the controls, added to the run; a problem is shown
        below them, not raised. Returns the label (None when refused)."""
        expected: str | None = self.expected.value
        if not expected or (self.good.value is not True and expected == self.result.output):
            expected = None  # nothing written, or the run's answer left as it was without a 👍
        if self.good.value is None and expected is None and not self.note.value:
            self._show("✗ pick 👍 or 👎, write a note, or edit the expected answer")
            return None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                label = self.result.label(good=self.good.value, expected=expected, note=self.note.value or None)
            except UserError as exc:
                self._show(f"✗ {exc}")
                return None
        self._show(" ".join(str(w.message) for w in caught))  # a file not written, a callback that failed
        if self.on_change is not None:
            self.on_change()
        return label

    def _show(self, problem: str) -> None:
        note = f'<div class="anb-bad">{escape(problem)}</div>' if problem else ""
        self.shown.value = STYLE + labels_html(self.result.labels) + note

    def static_copy(self) -> tuple[str, str]:
        """``(html, text)``: the run's labels as escaped HTML and as text (empty without labels)."""
        html = labels_html(self.result.labels)
        return (static_view(html, _CSS) if html else ""), labels_text(self.result.labels)

    def running(self) -> list[Any]:
        """Nothing runs here (the bar's display waits for running forks only)."""
        return []
