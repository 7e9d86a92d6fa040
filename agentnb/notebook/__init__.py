"""The notebook front end, one folder for each thing a person sees.

* ``magics/``: ``%agent`` / ``%%agent`` and their options, what they find in the namespace,
  ``%agent_eval``, the result of a ``--step`` run that is still going.
* ``trace/``: the live trace widget, folded from events (``state``), its HTML pieces, its
  controls (Stop), its plain-text form, and how it turns static when the run ends.
* ``debugger/``: the step-through debugger: its model (``stepper``, no widgets) and its view.
* ``forks/``: Fork from here: the bar under a finished trace and the editor panel.
* ``approval``: the approval panel (Approve, Deny, Edit arguments).
* ``cells/``: how a run lives in a kernel cell: blocking or as a background task, and clicks
  served while the cell still runs.
* ``export``: static HTML exports (nbconvert) that show traces offline.

Layer: the top, beside :mod:`agentnb.evaluation`; may import every other package. Inside it, a
view imports its model, never the other way round (``trace/state.py`` and
``debugger/stepper.py`` import no widget).

Nothing in the core imports this package; ipywidgets is imported only when a widget is built.

>>> from agentnb.notebook import Debugger, TraceWidget  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "TraceWidget": "agentnb.notebook.trace.widget",
    "Debugger": "agentnb.notebook.debugger.debugger",
    "Pause": "agentnb.notebook.debugger.debugger",
    "AgentMagics": "agentnb.notebook.magics.agent",
    "load_ipython_extension": "agentnb.notebook.magics.agent",
    "trace_text": "agentnb.notebook.trace.text",
    "fork_editor": "agentnb.notebook.trace.widget",
}

__all__ = sorted(_LAZY)


def lazy(package: str, names: dict[str, str]) -> Any:
    """A module ``__getattr__`` that imports each of ``names`` from its module on first use."""

    def get(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return get


__getattr__ = lazy(__name__, _LAZY)
