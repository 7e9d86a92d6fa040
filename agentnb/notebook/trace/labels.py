"""A run's labels as the trace shows them: HTML made of escaped text, and plain text.

The note and the expected answer are a person's text, often pasted from a model's answer:
they are escaped (:func:`~agentnb.untrusted.untrusted_html`), never rendered as Markdown, and
every view that shows them sits under a no-math root (``static_view``, ``html_widget``).

>>> from agentnb import Label
>>> bad = Label(good=False, expected="Paris", note="<b>Lyon</b> is wrong", at="2026-01-02T03:04:05.000+00:00")
>>> print(labels_text([bad]))
label: 👎 bad · expected: Paris · note: <b>Lyon</b> is wrong (2026-01-02 03:04 UTC)
>>> "&lt;b&gt;Lyon&lt;/b&gt;" in labels_html([bad]), labels_html([])
(True, '')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.untrusted import untrusted_html as escape

_GOOD = {True: ("👍 good", "anb-ok"), False: ("👎 bad", "anb-bad"), None: ("no verdict", "anb-m")}


def labels_html(labels: Sequence[Any]) -> str:
    """The run's label (the last one) and, folded, the earlier ones; empty without labels."""
    if not labels:
        return ""
    *earlier, last = labels
    html = f'<div class="anb anb-label"><b>Label</b> {_one_html(last)}'
    if earlier:
        rows = "".join(f"<li>{_one_html(label)}</li>" for label in reversed(earlier))
        html += f"<details><summary>earlier labels ({len(earlier)})</summary><ul>{rows}</ul></details>"
    return html + "</div>"


def _one_html(label: Any) -> str:
    verdict, css = _GOOD[label.good]
    parts = [f'<span class="{css}">{verdict}</span>', f'<span class="anb-m">{escape(when(label.at))}</span>']
    if label.note is not None:
        parts.append(f'<div class="anb-label-note">note: <span>{escape(label.note)}</span></div>')
    if label.expected is not None:
        parts.append(f'<div class="anb-label-expected">expected:<pre>{escape(label.expected)}</pre></div>')
    return " ".join(parts)


def labels_text(labels: Sequence[Any]) -> str:
    """One line per label, oldest first (the last is the run's label)."""
    lines = []
    for label in labels:
        said = [_GOOD[label.good][0]]
        if label.expected is not None:
            said.append(f"expected: {label.expected}")
        if label.note is not None:
            said.append(f"note: {label.note}")
        lines.append(f"label: {' · '.join(said)} ({when(label.at)})")
    return "\n".join(lines)


def when(at: str) -> str:
    """A label's ISO timestamp, short: ``2026-01-02 03:04 UTC``."""
    return at[:16].replace("T", " ") + " UTC"
