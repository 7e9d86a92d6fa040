"""The step-through debugger: ``stepper`` (the model: pauses, no widgets), ``view`` (its
control bar) and ``debugger`` (the two together).
"""

from __future__ import annotations

from agentnb.notebook import lazy

_LAZY = {
    "Debugger": "agentnb.notebook.debugger.debugger",
    "Pause": "agentnb.notebook.debugger.debugger",
}
__all__ = sorted(_LAZY)
__getattr__ = lazy(__name__, _LAZY)
