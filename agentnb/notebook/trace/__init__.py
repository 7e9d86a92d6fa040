"""The live trace: a run's depths, calls and decisions, folded from events and drawn.

``state`` folds events into what is shown, one ``depths`` view per depth (no widgets);
``render``, ``blocks``, ``header``, ``answer``, ``notes`` and ``nested`` make its HTML; ``widget`` is the ipywidget and
``controls`` its Stop and waits; ``display`` and ``snapshot`` turn it static when the run ends;
``text`` is its plain-text form.
"""

from __future__ import annotations

from agentnb.notebook import lazy

_LAZY = {
    "TraceWidget": "agentnb.notebook.trace.widget",
    "fork_editor": "agentnb.notebook.trace.widget",
}
__all__ = sorted(_LAZY)
__getattr__ = lazy(__name__, _LAZY)
