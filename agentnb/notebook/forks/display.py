"""Fork controls in a notebook output: live while their kernel answers, a static copy always.

A widget output needs the kernel that made it: a notebook saved while the fork bar under a
finished trace (:mod:`agentnb.notebook.forks.bar`) or the ``%agent --fork N`` editor is live,
then reopened without that kernel, read "Error displaying widget: model not found", and the
forks made there were lost. So such a display carries, in the same output bundle as its widget
view, a ``text/html`` *static copy* of every fork made in it (each fork's sanitized trace and
diff, and the forks made from those forks), updated in place (an IPython display update) when a
fork starts or ends. Its metadata says so (:data:`~agentnb.notebook.trace.display.STATIC_KEY`):
agentnb's JupyterLab extension (``labextension/``, which Notebook 7 loads too) shows that copy
instead of the widget when the widget's model is missing, or was restored from saved widget
state without its kernel (where its buttons would do nothing). A notebook saved at any moment
then reopens with every fork made in it.

When a later cell runs the display *freezes*: the widget view leaves the bundle (only the static
copy stays, which every renderer shows: nbviewer, GitHub, an HTML export) and its widgets are
closed. A fork still running then is waited for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agentnb.notebook.trace.display import BAR_KEY, LIVE_MARKER, STATIC_KEY, _as_current_cell, kernel_cell
from agentnb.untrusted import static_view

#: What the ``%agent --fork N`` editor's static copy says above its forks while it is live.
EDITOR_NOTE = (
    '<div class="anb-static">Fork editor (<code>%agent --fork</code>): its controls need the kernel '
    "that made them (run the cell again).</div>"
)


class ForkDisplay:
    """The display of one widget of fork controls (``widget``), whose forks are made in the
    fork panels that ``panels()`` returns; ``note`` (HTML) heads its static copy while it is
    live, ``label`` its text.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> from agentnb.notebook.trace import fork_editor
    >>> panel = fork_editor(Agent(ScriptedProvider(["Hi.", "Hello."])).run("hi"), at=0)
    >>> shown = ForkDisplay(panel, lambda: [panel], EDITOR_NOTE, "Fork editor")
    >>> panel.editor.value = "Hello."
    >>> _ = panel.fork()
    >>> data, meta = shown.live_bundle()
    >>> sorted(data), meta
    (['application/vnd.jupyter.widget-view+json', 'text/html', 'text/plain'], {'agentnb_fork_bar': True, 'agentnb_static': True})
    >>> "fork of step [0]" in data["text/html"], "Hello." in shown.static_bundle()["text/html"]
    (True, True)
    """

    def __init__(self, widget: Any, panels: Callable[[], list[Any]], note: str, label: str) -> None:
        self.widget = widget
        self.panels = panels
        self.note = note
        self.label = label
        self.handles: list[Any] = []
        self.frozen = False

    def copy(self) -> tuple[str, list[str]]:
        """The forks made so far: ``(html, texts)``."""
        html, texts = "", []
        for panel in self.panels():
            h, t = panel.static_copy()
            html += h
            texts += [t] if t else []
        return html, texts

    def live_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget view, with the static copy beside it (what a renderer without it shows)."""
        import ipywidgets as widgets

        data = dict(widgets.Widget._repr_mimebundle_(self.widget))  # the view, whatever the class shows
        html, texts = self.copy()
        data["text/plain"] = "\n".join([LIVE_MARKER, f"{self.label} (needs the kernel)", *texts])
        data["text/html"] = f"<!--{LIVE_MARKER}\n-->" + static_view(self.note + html)
        return data, {BAR_KEY: True, STATIC_KEY: True}

    def static_bundle(self) -> dict[str, Any]:
        """What the display leaves in the notebook once frozen: the forks, static and sanitized."""
        html, texts = self.copy()
        html = static_view(html) if html else ""  # sanitized again as a whole, under one no-math root
        return {"text/html": f"<!--{LIVE_MARKER}\n-->" + html, "text/plain": "\n".join([LIVE_MARKER, *texts])}

    def show(self, ready: Callable[[], bool] = lambda: True) -> bool:
        """Display the controls live; freeze them when a later cell runs and ``ready()`` (the
        run they fork has ended). False where nothing could be shown with a display id."""
        from IPython import get_ipython
        from IPython.display import display

        data, meta = self.live_bundle()
        handle = display(data, raw=True, metadata=meta, display_id=True)
        if handle is None:
            return False
        self.handles.append(handle)
        events = get_ipython().events

        def later(*_: Any) -> None:
            if ready() or self.frozen:
                events.unregister("pre_run_cell", later)
                self.freeze()

        events.register("pre_run_cell", later)
        return True

    def refresh(self) -> None:
        """The forks changed: bring the static copy beside the live view up to date."""
        if not self.frozen and self.handles:
            self._publish(*self.live_bundle())

    def freeze(self) -> None:
        """Replace the displays by the static copy alone and close the widgets (a later cell
        runs); forks still running are waited for first."""
        running = [t for panel in self.panels() for t in panel.running()]
        if running:
            gathered = asyncio.gather(*running, return_exceptions=True)
            gathered.add_done_callback(lambda _: self.freeze())
            return
        if self.frozen:
            return
        self.frozen = True
        self._publish(self.static_bundle(), {})
        self.handles = []
        _close_tree(self.widget)

    def _publish(self, data: dict[str, Any], meta: dict[str, Any]) -> None:
        for handle in self.handles:
            handle.update(data, raw=True, metadata=meta)
        with _as_current_cell() as moved:  # nbclient reads only the running cell's messages
            if moved:
                for handle in self.handles:
                    handle.update(data, raw=True, metadata=meta)


def show_editor(panel: Any) -> bool:
    """Display a fork editor (``%agent --fork N``) that keeps its forks in the notebook and
    freezes when a later cell runs; False outside a kernel's cell (nothing shown)."""
    if kernel_cell() is None:
        return False
    shown = ForkDisplay(panel, lambda: [panel], EDITOR_NOTE, "Fork editor")
    panel.on_change = shown.refresh
    return shown.show()


def _close_tree(widget: Any) -> None:
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    widget.close()
