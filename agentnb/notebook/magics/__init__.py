"""The ``%agent`` / ``%%agent`` magics (``agent``), their options (``options``), what they
name in the notebook (``lookup``), ``%agent_eval`` (``evaluate``) and a ``--step`` run's pending
result (``pending``).
"""

from __future__ import annotations

from agentnb.notebook import lazy

_LAZY = {
    "AgentMagics": "agentnb.notebook.magics.agent",
    "load_ipython_extension": "agentnb.notebook.magics.agent",
}
__all__ = sorted(_LAZY)
__getattr__ = lazy(__name__, _LAZY)
