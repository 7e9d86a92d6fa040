"""The notebook front end: ``%agent`` magics, the live trace widget, the step-through debugger.

Layer: the top, beside :mod:`agentnb.evaluation`; may import every other package.

Nothing in the core imports this package; ipywidgets is imported only when a widget is built.

>>> from agentnb.notebook import Debugger, TraceWidget  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "TraceWidget": "agentnb.notebook.trace",
    "Debugger": "agentnb.notebook.debugger",
    "Pause": "agentnb.notebook.debugger",
    "AgentMagics": "agentnb.notebook.magics",
    "load_ipython_extension": "agentnb.notebook.magics",
    "trace_text": "agentnb.notebook.text",
    "fork_editor": "agentnb.notebook.trace",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentnb.notebook' has no attribute {name!r}")
