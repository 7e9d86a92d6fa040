"""A finished trace as one static HTML page fragment, for exports that cannot run widgets.

The widget puts it in its output's metadata (``metadata["agentnb"]``; nbval does not compare
metadata), and :mod:`agentnb.notebook.export` swaps it in for the widget when nbconvert writes
HTML, so the trace reads offline: header, prompt and context, every depth as a ``<details>``
section, and the final answer (its Markdown rendered by nbconvert).

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> from agentnb.notebook.trace.widget import TraceWidget
>>> w = TraceWidget()
>>> _ = Agent(ScriptedProvider(["**Hi**"])).run("hello", on_event=w)
>>> meta = snapshot_metadata(w)
>>> "Depth 0" in meta["html"], meta["answer"]
(True, '**Hi**')
"""

from __future__ import annotations

from typing import Any

from agentnb.notebook.trace.blocks import COPY_BUTTON, STYLE
from agentnb.notebook.trace.labels import labels_html
from agentnb.run.result import RunResult
from agentnb.untrusted import NO_MATH, static_view

#: The output-metadata key the snapshot is stored under.
KEY = "agentnb"


def snapshot_metadata(trace: Any, above: str = "") -> dict[str, Any] | None:
    """``{"html": ..., "answer": ...}`` for a finished trace widget; None while it runs.

    The HTML is the static view without the answer (the export renders it from ``answer``),
    already sanitized (:func:`~agentnb.untrusted.static_view`); the export sanitizes it again,
    since a notebook file's metadata is untrusted too.
    """
    if trace.state.finished is None:
        return None
    return {"html": static_html(trace, above, answer=False, save=False), "answer": trace.state.answer}


def static_html(trace: Any, above: str = "", *, answer: bool = True, save: bool = True) -> str:
    """The whole trace as one static HTML fragment: what a saved notebook shows without a kernel.

    The same sections as the live widget (header, context, every depth as ``<details>``, the
    answer, the run's labels, the transcript link), built only from the widget's already-escaped HTML; no
    JavaScript: Copy buttons are left out (the text can be selected), the toolbar too. The
    stylesheet is written inline (an untrusted notebook drops ``<style>``) and the fragment is
    then sanitized: :func:`~agentnb.untrusted.static_view` is the last step, nothing rewrites
    the HTML after it. The stylesheet itself (a constant) is sent first, for trusted views.
    """
    trace._caught_up()
    final = ""
    if answer and trace.answer_html.value:
        final = (
            '<div class="anb anb-answer" style="border-left:3px solid #1a7f37;padding:0 0 0 10px;margin:6px 0">'
            '<span class="anb-ok">Final answer</span>' + _strip_style(trace.answer_html.value) + "</div>"
        )
    parts = [
        f'<div class="anb-static anb-trace {NO_MATH}">',
        above,
        '<div style="display:flex;justify-content:space-between;align-items:center">',
        _strip_style(trace._header.value),
        _strip_style(trace._save.value) if save else "",
        "</div>",
        _strip_style(trace._context.value),
        trace._settled_box.value,
        trace._live_box.value,
        final,
        labels_html(getattr(trace.result, "labels", ())),  # a person's labels of the run, escaped
        "</div>",
    ]
    return STYLE + static_view("".join(parts).replace(COPY_BUTTON, ""), _CSS)


_CSS = STYLE.removeprefix("<style>").removesuffix("</style>")


def _strip_style(html: str) -> str:
    return html.replace(STYLE, "")


def events_result(state: Any) -> RunResult:
    """A transcript of a run known only from its events (a widget fed through ``on_event``).

    It replays (``TraceWidget.replay``) like a full one; it has no messages to continue from.
    """
    end = state.finished
    return RunResult(
        output=state.answer or "",
        messages=(),
        events=tuple(state.events),
        usage=end.usage,
        stop_reason=end.stop_reason,
        tool_calls=end.tool_calls,
        duration=end.duration,
        error=end.error,
    )
