"""A finished trace as one static HTML page fragment, for exports that cannot run widgets.

The widget puts it in its output's metadata (``metadata["agentnb"]``; nbval does not compare
metadata), and :mod:`agentnb.notebook.export` swaps it in for the widget when nbconvert writes
HTML, so the trace reads offline: header, prompt and context, every depth as a ``<details>``
section, and the final answer (its Markdown rendered by nbconvert).

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> from agentnb.notebook.trace import TraceWidget
>>> w = TraceWidget()
>>> _ = Agent(ScriptedProvider(["**Hi**"])).run("hello", on_event=w)
>>> meta = snapshot_metadata(w)
>>> "Depth 0" in meta["html"], meta["answer"]
(True, '**Hi**')
"""

from __future__ import annotations

from typing import Any

#: The output-metadata key the snapshot is stored under.
KEY = "agentnb"


def snapshot_metadata(trace: Any, above: str = "") -> dict[str, Any] | None:
    """``{"html": ..., "answer": ...}`` for a finished trace widget; None while it runs."""
    if trace.state.finished is None:
        return None
    trace._caught_up()
    parts = [
        '<div class="anb-static">',
        above,
        trace._header.value,
        trace._context.value,
        trace._settled_box.value,
        trace._live_box.value,
        "</div>",
    ]
    return {"html": "".join(parts), "answer": trace.state.answer}
