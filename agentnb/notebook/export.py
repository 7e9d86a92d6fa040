"""Static HTML exports that show agentnb traces offline (nbconvert).

nbconvert's HTML export renders widgets with JavaScript from a CDN; offline, a widget output
shows nothing. :class:`StaticTraces` replaces each agentnb trace or debugger output with the
static snapshot the widget stored in the output's metadata (see
:mod:`agentnb.notebook.trace.snapshot`): every depth as a collapsible section, the answer rendered
from Markdown and sanitized (:func:`agentnb.untrusted.untrusted_markdown`), the transcript as a download link. Other widgets are left alone.

Use it with the standard HTML exporter::

    jupyter nbconvert --to html --HTMLExporter.preprocessors=agentnb.notebook.export.StaticTraces NB.ipynb

or, with agentnb installed, ``jupyter nbconvert --to agentnb_html NB.ipynb``
(:class:`StaticHTMLExporter`, registered as an nbconvert exporter).
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters import HTMLExporter
from nbconvert.preprocessors import Preprocessor

from agentnb.notebook.trace.blocks import STYLE
from agentnb.notebook.trace.display import BAR_KEY, STATIC_KEY
from agentnb.notebook.trace.snapshot import _CSS, KEY
from agentnb.untrusted import NO_MATH, static_view, untrusted_markdown

WIDGET = "application/vnd.jupyter.widget-view+json"


class StaticTraces(Preprocessor):  # type: ignore[misc]
    """Swap agentnb widget outputs for their static HTML snapshot."""

    def preprocess_cell(self, cell: Any, resources: Any, index: int) -> tuple[Any, Any]:
        for output in cell.get("outputs", ()):
            snap = output.get("metadata", {}).get(KEY)
            data = output.get("data", {})
            meta = output.get("metadata", {})
            if not snap and WIDGET in data and (meta.get(BAR_KEY) or meta.get(STATIC_KEY)) and "text/html" in data:
                del data[WIDGET]  # live fork controls, a live trace: their static copy (or note)
                continue
            if not snap or WIDGET not in data:
                continue
            answer = snap.get("answer")
            # the notebook file is untrusted: its stored snapshot is sanitized again, as a whole
            html = STYLE + static_view(str(snap.get("html", "")), _CSS)
            if answer is not None:
                html += (
                    f'<div class="anb {NO_MATH}" style="border-left:3px solid #1a7f37;padding:0 0 0 10px;margin:6px 0">'
                    f'<span class="anb-ok">Final answer</span>{untrusted_markdown(str(answer), raw=True)}</div>'
                )
            del data[WIDGET]
            data["text/html"] = html
        return cell, resources


class StaticHTMLExporter(HTMLExporter):  # type: ignore[misc]
    """nbconvert's HTML export with agentnb traces as static HTML (``--to agentnb_html``)."""

    export_from_notebook = "HTML (agentnb traces static)"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.register_preprocessor(StaticTraces, enabled=True)
