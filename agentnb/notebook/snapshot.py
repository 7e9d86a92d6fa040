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

import functools
import re
from typing import Any

from agentnb.notebook.blocks import COPY_BUTTON, STYLE
from agentnb.run.result import RunResult
from agentnb.untrusted import NO_MATH

#: The output-metadata key the snapshot is stored under.
KEY = "agentnb"


def snapshot_metadata(trace: Any, above: str = "") -> dict[str, Any] | None:
    """``{"html": ..., "answer": ...}`` for a finished trace widget; None while it runs."""
    if trace.state.finished is None:
        return None
    trace._caught_up()
    parts = [
        f'<div class="anb-static {NO_MATH}">',
        above,
        trace._header.value,
        trace._context.value,
        trace._settled_box.value,
        trace._live_box.value,
        "</div>",
    ]
    return {"html": "".join(parts), "answer": trace.state.answer}


def static_html(trace: Any, above: str = "") -> str:
    """The whole trace as one static HTML fragment: what a saved notebook shows without a kernel.

    The same sections as the live widget (header, context, every depth as ``<details>``, the
    answer, the transcript link), built only from the widget's already-escaped HTML; no
    JavaScript: Copy buttons are left out (the text can be selected), the toolbar too.
    """
    trace._caught_up()
    answer = ""
    if trace.answer_html.value:
        answer = (
            '<div class="anb anb-answer" style="border-left:3px solid #1a7f37;padding:0 0 0 10px;margin:6px 0">'
            '<span class="anb-ok">Final answer</span>' + _strip_style(trace.answer_html.value) + "</div>"
        )
    save = _strip_style(trace._save.value)
    parts = [
        f'<div class="anb-static anb-trace {NO_MATH}">',
        above,
        '<div style="display:flex;justify-content:space-between;align-items:center">',
        _strip_style(trace._header.value),
        save,
        "</div>",
        _strip_style(trace._context.value),
        trace._settled_box.value,
        trace._live_box.value,
        answer,
        "</div>",
    ]
    return STYLE + inlined("".join(parts).replace(COPY_BUTTON, ""))


def inlined(body: str) -> str:
    """``body`` with the stylesheet also written into each element's ``style`` attribute.

    JupyterLab drops ``<style>`` from the outputs of an untrusted notebook (any notebook opened
    from elsewhere: a clone, a download, the shipped docs), which showed the trace unstyled;
    inline styles pass its sanitizer (declarations with theme variables are dropped there, the
    rest stay). The stylesheet is still sent first, for trusted views. Without ``css-inline``
    installed, the body as it is.
    """
    try:
        import css_inline
    except ImportError:
        return body
    try:
        html = str(_inliner(css_inline).inline_fragment(body, _CSS))
    except Exception:  # a fragment it cannot read: unstyled where <style> is dropped, nothing lost
        return body
    return _STYLE_ATTR.sub(lambda m: f'style="{_with_fallbacks(m.group(1))}"', html)


@functools.cache
def _inliner(css_inline: Any) -> Any:
    return css_inline.CSSInliner(keep_style_tags=False, load_remote_stylesheets=False)


_STYLE_ATTR = re.compile(r'style="([^"]*var\(--[^"]*)"')
_VAR = re.compile(r"var\(--[\w-]+,\s*([^()]*)\)")


def _with_fallbacks(style: str) -> str:
    """Each declaration with a theme variable preceded by its light fallback: the sanitizer of an
    untrusted notebook drops ``var(...)`` declarations, so the fallback is what stays there;
    elsewhere the later declaration (the theme's) wins.

    >>> _with_fallbacks("color: var(--jp-ui-font-color1,#1f2328); font-size: 12px")
    'color: #1f2328;color: var(--jp-ui-font-color1,#1f2328); font-size: 12px'
    """
    out = []
    for decl in style.split(";"):
        if "var(--" in decl:
            out.append(_VAR.sub(lambda m: m.group(1), decl))
        out.append(decl)
    return ";".join(out)


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
