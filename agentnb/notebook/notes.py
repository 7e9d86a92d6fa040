"""HTML for provider notes added after the trace's first notes (kept apart from render.py).

>>> from agentnb.events import GuidanceSkipped
>>> html = skipped_html(GuidanceSkipped(0, "m", "tool ranking", "~40 s <at> 20 ms per token", 40.0, 5.0))
>>> "guidance skipped" in html and "&lt;at&gt;" in html
True
"""

from __future__ import annotations

from agentnb.events import GuidanceSkipped
from agentnb.untrusted import untrusted_html


def skipped_html(n: GuidanceSkipped) -> str:
    """A guidance step skipped for its cost: which, and why (the provider's words, escaped)."""
    return (
        f'<div class="anb-block anb-note"><span class="anb-warn">guidance skipped: {untrusted_html(n.step)}</span> '
        f'<span class="anb-m">{untrusted_html(n.provider)}: {untrusted_html(n.reason)}</span></div>'
    )
