"""Fork from here and Label under a finished trace: one control per step, the label editor.

A finished trace is static HTML (the saved notebook must show it without a kernel; see
:mod:`agentnb.notebook.trace.display`), so its fork controls cannot sit inside it. When a trace is
displayed in a kernel's cell, a *fork bar* is displayed right after it: empty while the run
goes on, then, once the run has ended and its agent is known, a row "Fork from here: [0] calls
weather · [1] answer". A click on a step opens the fork editor (:class:`ForkPanel`, the
debugger's editor) prefilled at that step; its "Fork from here" runs the fork live below.
Beside it, the label editor (:mod:`agentnb.notebook.forks.label`): 👍 / 👎, a note, the expected
answer; a loaded transcript's run, which cannot be forked here, gets the label editor alone.

The bar is a widget, and a widget needs the kernel that made it. So its output carries a static
copy of the run's labels and of the forks made from it (each fork's sanitized trace and its diff
with the parent, and the forks made from those), kept current as forks start and end, which a notebook reopened without
the kernel shows instead of "model not found"; and, like the evaluation view, the bar *freezes*
into that copy when a later cell runs (see :mod:`agentnb.notebook.forks.display`). A fork still
running then is waited for. The trace's own display is never touched here.

The step labels hold tool names and model text: they are given as text, since the buttons' front
end escapes each label itself (escaping here too showed ``[0] &lt;img…``) and never typesets it,
and every tooltip is an attribute (text).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from agentnb.notebook.forks.display import ForkDisplay
from agentnb.notebook.trace.display import kernel_cell
from agentnb.timetravel.diff import steps_of

#: What the bar's static copy says above its labels and forks while the bar is live.
BAR_NOTE = (
    '<div class="anb-static">Fork from here and Label: the controls of this trace need its kernel '
    "(run the cell again).</div>"
)


def step_labels(result: Any) -> list[tuple[str, str]]:
    """``(label, tooltip)`` for each step of ``result``, as the bar shows them (both are text).

    >>> from agentnb import Agent, tool
    >>> from agentnb.testing import ScriptedProvider, call
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add.'''
    ...     return a + b
    >>> r = Agent(ScriptedProvider([call("add", a=1, b=2), "<b>3</b>"]), tools=[add]).run("1+2?")
    >>> step_labels(r)
    [('[0] add', 'Fork from step [0]: it called add'), ('[1] answer', 'Fork from step [1]: it said <b>3</b>')]
    """
    steps = steps_of(result)
    ended = getattr(result, "stop_reason", None)
    out = []
    for i, s in enumerate(steps):
        if s.calls:
            names = ", ".join(dict.fromkeys(name for name, _ in s.calls))
            what, tip = names, f"it called {names}"
        elif s.reply:
            text = s.reply.replace("\n", " ")
            what, tip = "answer", "it said " + (text if len(text) <= 200 else text[:199] + "…")
        elif i == len(steps) - 1 and ended in ("error", "cancelled"):  # the step the run ended in
            what = "error" if ended == "error" else "stopped"
            tip = f"it ended in {'an error' if ended == 'error' else 'a stop'}: fork it with a reply or system prompt"
        else:
            what, tip = "reply", "it replied nothing"
        out.append((f"[{s.depth}] {what}", f"Fork from step [{s.depth}]: {tip}"))
    return out


class ForkBar(widgets.VBox):
    """The controls under one displayed trace (empty until :meth:`fill` gets the finished run):
    Fork from here (a run whose agent is known) and the label editor (every run)."""

    def __init__(self, trace: Any) -> None:
        self.trace = trace  # the TraceWidget above (its class makes the forks' traces)
        self.result: Any = None
        self.panel: Any = None  # the ForkPanel, once a step was clicked
        self.labeller: Any = None  # the LabelControl (agentnb.notebook.forks.label)
        self.steps: widgets.ToggleButtons | None = None
        super().__init__()
        #: Its display: live, with a static copy of the forks made here beside it; frozen later.
        self.shown = ForkDisplay(self, self._panels, BAR_NOTE, "Fork from here")
        self.add_class("anb-fork-bar")

    def fill(self, result: Any) -> None:
        """Show the label editor of ``result``, and one fork control per step when its agent is known."""
        if self.frozen or self.result is not None or result is None:
            return
        from agentnb.notebook.forks.label import LabelControl

        self.result = result
        self.labeller = LabelControl(result, on_change=self._labelled)
        self.children = (self.labeller,)
        labels = step_labels(result) if getattr(result, "agent", None) is not None else []
        if not labels:
            return
        self.depths = [s.depth for s in steps_of(result)]
        # one widget for every step (each widget costs a few comm messages per displayed run)
        self.steps = widgets.ToggleButtons(
            options=[(label, d) for (label, _), d in zip(labels, self.depths, strict=True)],
            value=None,
            tooltips=[tip for _, tip in labels],
            description="Fork from here:",
            style={"button_width": "auto", "description_width": "initial"},
        )
        self.steps.add_class("anb-fork-steps")
        self.steps.observe(lambda change: self.open_at(change["new"]), names="value")
        self.children = (self.steps, self.labeller)

    def _labelled(self) -> None:
        """A label was saved: the bar's static copy, and the trace's own static display, show it."""
        self.shown.refresh()
        self.trace._publish_static()

    def open_at(self, at: int | None) -> Any:
        """What a click on step ``at`` does: the fork editor, prefilled at that step."""
        if at is None or self.steps is None or self.frozen:  # no steps: a run that cannot be forked
            return self.panel
        if self.panel is None:
            from agentnb.notebook.forks.panel import ForkPanel

            self.panel = ForkPanel(self.result, type(self.trace), at=at, on_change=self.shown.refresh)
            self.panel.step.observe(lambda change: self._pick(change["new"]), names="value")
            self.children = (*self.children, self.panel)
        elif self.panel.step.value != at:
            self.panel.step.value = at  # the editor refills for that step
        self._pick(at)
        return self.panel

    def _pick(self, at: int) -> None:
        if self.steps is not None and self.steps.value != at:
            self.steps.value = at

    @property
    def forks(self) -> list[Any]:
        """The RunResults of the forks made from this bar, in order."""
        return [] if self.panel is None else list(self.panel.forks)

    # --- display and freezing (agentnb.notebook.forks.display) ----------------------------

    @property
    def frozen(self) -> bool:
        """Whether a later cell froze the bar into its static copy."""
        return self.shown.frozen

    def _panels(self) -> list[Any]:
        """What the static copy shows: the forks, after the labels where the trace above cannot
        show them itself (a trace whose display is updated in place shows them: not twice)."""
        labeller = None if self.trace._display_handles() else self.labeller
        return [p for p in (labeller, self.panel) if p is not None]

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.shown.live_bundle()  # a static export drops the widget view (export.StaticTraces)

    def static_bundle(self) -> dict[str, Any]:
        """What the bar leaves in the notebook: the forks made here, static and sanitized."""
        return self.shown.static_bundle()

    def freeze(self) -> None:
        """Replace the bar's displays by its static form and close its widgets (a later cell
        runs); a fork still running is waited for."""
        self.shown.freeze()


def show_bar(trace: Any) -> ForkBar | None:
    """Display a fork bar after ``trace`` (called when the trace is displayed); None outside a
    kernel's cell, where no click could reach it."""
    shown = trace.__dict__.get("_anb_fork_bar")
    if kernel_cell() is None or (shown is not None and not shown.frozen):  # one live bar per trace
        return None
    if trace.state.finished is not None and trace.result is None:
        return None  # a finished run known only from its events: nothing to fork or label
    bar = ForkBar(trace)
    trace.__dict__["_anb_fork_bar"] = bar
    if trace.result is not None and trace.state.finished is not None:
        bar.fill(trace.result)
    bar.shown.show(ready=lambda: trace.state.finished is not None)  # frozen once the run has ended
    return bar
