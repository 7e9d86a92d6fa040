"""How a trace is displayed: a live widget while its run goes on, static HTML once it has ended.

A widget output needs a kernel (and the widget's state) to render: a notebook reopened
without one, GitHub, nbviewer or an HTML export would show "Error displaying widget: model not
found". So a display of a trace is a widget only while the run goes on; when the run ends the
display is *replaced* (an IPython display update) by a bundle that renders anywhere: static
``text/html`` with the same content (every depth a ``<details>`` section, no JavaScript) and
``text/plain``. A trace displayed after its run ended is static from the start.

Displays that are updated in place are marked (``agentnb live trace`` first in ``text/plain``
and in an HTML comment) for nbval, which compares a display as first shown: its sanitizer
(notebooks/sanitize.cfg) then compares only the marker.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> from agentnb.notebook.trace.widget import TraceWidget
>>> w = TraceWidget()
>>> _ = Agent(ScriptedProvider(["Hi"])).run("hello", on_event=w)
>>> data, meta = w.static_bundle()
>>> sorted(data), "anb-static" in data["text/html"], meta
(['text/html', 'text/plain'], True, {})
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from agentnb.untrusted import no_math

#: First line of the text/plain of a display that is updated in place while a run goes on.
LIVE_MARKER = "agentnb live trace"
#: Output metadata marking a trace's fork bar (agentnb.notebook.forks.bar): a static export drops
#: its widget view, which means nothing without the kernel, and keeps its note.
BAR_KEY = "agentnb_fork_bar"
#: Output metadata saying that the bundle's ``text/html`` is a static copy of its widget view:
#: agentnb's JupyterLab extension shows it where the widget cannot be live (its model missing,
#: or restored from saved widget state without its kernel) instead of "model not found".
STATIC_KEY = "agentnb_static"

_PLACEHOLDER = no_math(
    '<div class="anb-static"><b>agentnb</b> trace: the run was still going when this output was saved; '
    "its live view needs the kernel.</div>"
)


class LiveDisplay:
    """Mixin for a widget that shows a run: display it live, then swap in its static form.

    Subclasses say whether their run has ended (:meth:`_run_ended`) and what they look like
    without a kernel (:meth:`static_html`, :meth:`text`), and call :meth:`_publish_static` when
    the run has ended.
    """

    _live: bool = False

    def _run_ended(self) -> bool:
        raise NotImplementedError

    def static_html(self) -> str:
        raise NotImplementedError

    def text(self) -> str:
        raise NotImplementedError

    def _marked(self, text: str, html: bool = False) -> str:
        if not self._live:
            return text
        return f"<!--{LIVE_MARKER}\n-->{text}" if html else f"{LIVE_MARKER}\n{text}"

    def static_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The display that needs no kernel: static HTML and the text trace."""
        return {"text/html": self._marked(self.static_html(), True), "text/plain": self._marked(self.text())}, {}

    def live_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The widget view (plus a note for renderers without the kernel)."""
        data, meta = self._repr_mimebundle_()  # type: ignore[attr-defined]
        data["text/html"] = self._marked(_PLACEHOLDER, True)
        return data, {**meta, STATIC_KEY: True}

    def _ipython_display_(self) -> None:
        from IPython.display import display

        shown = self.__dict__.get("_anb_shown_in")
        if shown is not None and shown == kernel_cell():
            return  # shown live when its run started in this cell (``run(on_event=w); w``)
        if self._run_ended():
            data, meta = self.static_bundle()
            display(data, raw=True, metadata=meta)
        else:
            self._live = True  # this display is updated in place when the run ends
            data, meta = self.live_bundle()
            handle = display(data, raw=True, metadata=meta, display_id=True)
            if handle is not None:
                self._display_handles().append(handle)
        self._after_display()

    def _after_display(self) -> None:
        """What a subclass displays right after this view (the trace's fork bar)."""

    def _show_on_start(self) -> None:
        """A run starts feeding this widget, displayed nowhere yet, in a kernel's cell: show it
        live now, so ``agent.run(..., on_event=w); w`` is live; the cell's own display of it
        at its end is then a no-op (no second view)."""
        if self._display_handles():
            return
        cell = kernel_cell()
        if cell is None:
            return
        self._ipython_display_()
        self.__dict__["_anb_shown_in"] = cell

    def show(self) -> Any:
        """Display it now: live while the run goes on, static once it has ended."""
        self._ipython_display_()
        return self

    def _display_handles(self) -> list[Any]:
        handles = self.__dict__.get("_anb_handles")
        if handles is None:
            handles = self.__dict__["_anb_handles"] = []
        return handles  # type: ignore[no-any-return]

    def _publish_static(self) -> None:
        """Replace every live display of this widget by its static form."""
        handles = self._display_handles()
        if not handles:
            return
        data, meta = self.static_bundle()
        for handle in handles:
            handle.update(data, raw=True, metadata=meta)
        with _as_current_cell() as moved:  # again, for nbconvert/nbclient (see _as_current_cell)
            if moved:
                for handle in handles:
                    handle.update(data, raw=True, metadata=meta)


def kernel_cell() -> int | None:
    """The number of the cell a Jupyter kernel runs now; None outside a kernel (a terminal,
    a script, a test's shell)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    count = getattr(shell, "execution_count", None)
    return count if isinstance(count, int) else None


@contextlib.contextmanager
def _as_current_cell() -> Iterator[bool]:
    """Publish as the cell that runs now, not the one that started the run (yields whether
    that differs).

    A run started in one cell often ends while a later cell runs (``await dbg.wait()``): its
    display update carries the first cell's header. JupyterLab applies it; nbclient (nbconvert,
    which stores the notebooks GitHub and nbviewer show) reads only the running cell's messages
    and dropped it, so the saved file kept "the run was still going". ipykernel keeps the
    header per task (a context variable) and the latest one apart; nothing changes elsewhere.
    """
    try:
        from IPython import get_ipython

        pub = getattr(get_ipython(), "display_pub", None)
        var, latest = pub._parent_header, pub._parent_header_global  # type: ignore[union-attr]
        moved = bool(latest) and latest != var.get()
    except Exception:  # not ipykernel (a terminal, another kernel): nothing to move
        yield False
        return
    token = var.set(latest) if moved else None
    try:
        yield moved
    finally:
        if token is not None:
            var.reset(token)


def show_until_next_cell(view: Any) -> None:
    """Display ``view`` (its ``_repr_mimebundle_``) with a display id kept in ``view._handles``,
    and call ``view.freeze()`` when the next cell runs: a live view becomes its static copy,
    which is what a saved notebook keeps (the evaluation view, the runs view)."""
    from IPython import get_ipython
    from IPython.display import display

    data, meta = view._repr_mimebundle_()
    handle = display(data, raw=True, metadata=meta, display_id=True)
    shell = get_ipython()
    if handle is None or shell is None:
        return
    view._handles.append(handle)
    events = shell.events

    def left(*_: Any) -> None:  # the next cell runs: the view becomes its static copy
        events.unregister("pre_run_cell", left)
        view.freeze()

    events.register("pre_run_cell", left)


def replace_displays(handles: list[Any], data: dict[str, Any]) -> None:
    """Update each display of ``handles`` to ``data``, in the cell being run too (nbclient reads
    only the running cell's messages: see :func:`_as_current_cell`)."""
    for handle in handles:
        handle.update(data, raw=True)
    with _as_current_cell() as moved:
        if moved:
            for handle in handles:
                handle.update(data, raw=True)


def view_bundle(widget: Any, plain: str, html: str, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A live view's display: ``widget``'s own bundle with ``plain`` after the live marker and
    ``html`` (its static copy, for renderers without widgets: nbviewer, GitHub), marked static."""
    data = widget._repr_mimebundle_(**kwargs)
    data, meta = data if isinstance(data, tuple) else (data, {})
    data = {**data, "text/plain": f"{LIVE_MARKER}\n{plain}", "text/html": html}
    return data, {**meta, STATIC_KEY: True}
