"""The cassette of the ``with agentnb.cassette(...)`` block a run is inside (a context variable).

Its own small module: the agent reads it once per run, and ``import agentnb`` stays light.
"""

from __future__ import annotations

import contextvars
from typing import Any

#: The open :class:`~agentnb.timetravel.cassette.Cassette`, or None outside any block.
CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("agentnb_cassette", default=None)
