"""HTML for the trace widget: the header line and one block per depth (no widgets here).

Everything user- or model-provided is escaped. Long results are cut to a preview with a
``<details>`` element that expands to the full text in the browser.

>>> from agentnb.notebook.state import TraceState
>>> from agentnb.events import ModelRequest
>>> s = TraceState()
>>> s.add(ModelRequest(depth=0, n_messages=2, tools=(), tool_choice="none"))
>>> "Model call" in depth_html(s.depths[0])
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from typing import Any

from agentnb.events import DirectOutput, LimitReached, StepDecision
from agentnb.notebook.state import CallView, DepthView, TraceState

STYLE = """<style>
.anb{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;line-height:1.45;
  color:var(--jp-ui-font-color1,#1f2328)}
.anb-head{display:flex;align-items:center;gap:10px;flex-wrap:wrap}
.anb-title{font-weight:700}
.anb-badge{display:inline-block;padding:1px 9px;border-radius:10px;font-weight:600;font-size:12px;color:#fff}
.anb-s-running{background:#0969da}.anb-s-paused{background:#bf8700}.anb-s-answer,.anb-s-direct_output{background:#1a7f37}
.anb-s-limit{background:#bc4c00}.anb-s-invalid_output{background:#cf222e}.anb-s-cancelled{background:#6e7781}.anb-s-error{background:#cf222e}.anb-s-waiting{background:#8c959f}
.anb-stat{color:var(--jp-ui-font-color2,#57606a)}
.anb-stat b{color:var(--jp-ui-font-color1,#1f2328)}
.anb-depth{border:1px solid var(--jp-border-color2,#d0d7de);border-radius:6px;margin:6px 0;padding:0 10px 2px 10px;
  font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px}
.anb-depth>summary{cursor:pointer;font-weight:600;padding:6px 0 4px 0;color:var(--jp-ui-font-color1,#1f2328)}
.anb-block{border-left:3px solid #8c959f;padding:2px 0 2px 10px;margin:4px 0 8px 0}
.anb-model{border-left-color:#8250df}.anb-tool{border-left-color:#0969da}.anb-toolbad{border-left-color:#cf222e}
.anb-note{border-left-color:#bc4c00}.anb-final{border-left-color:#1a7f37}
.anb-h{font-weight:600}
.anb-m{color:var(--jp-ui-font-color2,#57606a);font-size:12px}
.anb-ok{color:#1a7f37;font-weight:600}.anb-bad{color:#cf222e;font-weight:600}.anb-warn{color:#9a6700;font-weight:600}
.anb pre{background:var(--jp-layout-color2,#f6f8fa);border-radius:4px;padding:5px 8px;margin:3px 0;
  white-space:pre-wrap;word-break:break-word;font-size:12px;max-height:360px;overflow:auto}
.anb code{font-size:12px}
.anb-fp{font-family:var(--jp-code-font-family,monospace);font-size:11px;background:var(--jp-layout-color2,#f6f8fa);
  padding:0 4px;border-radius:3px}
.anb details summary{cursor:pointer;color:#0969da;font-size:12px}
.anb table.anb-value{border-collapse:collapse;margin:3px 0;font-size:12px}
.anb table.anb-value td,.anb table.anb-value th{border:1px solid var(--jp-border-color2,#d0d7de);padding:1px 6px;text-align:left}
.anb img{max-width:320px;max-height:240px;border:1px solid #d0d7de;border-radius:4px;margin:4px 4px 0 0}
</style>"""

_STOP_TEXT = {
    "answer": "finished",
    "direct_output": "finished (direct output)",
    "limit": "finished at the tool-call limit",
    "cancelled": "stopped",
    "error": "failed",
    "invalid_output": "invalid output",
}


def fmt_seconds(s: float) -> str:
    """``0.4 ms``, ``12 ms``, ``1.23 s``, ``2 min 5 s``."""
    if s < 0.01:
        return f"{s * 1000:.1f} ms"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"
    return f"{int(s // 60)} min {int(s % 60)} s"


def header_html(state: TraceState, elapsed: float | None, pause: str | None = None) -> str:
    status = "paused" if pause and state.finished is None else state.status
    label = _STOP_TEXT.get(status, status)
    parts = [f'<span class="anb-title">agentnb</span> <span class="anb-badge anb-s-{status}">{escape(label)}</span>']
    steps = sum(1 for v in state.depths.values() if v.request is not None)
    limit = state.started.max_tool_calls if state.started else None
    calls = f"{state.tool_calls}/{limit}" if limit is not None else str(state.tool_calls)
    stats = [f"depth <b>{state.current_depth}</b>", f"model calls <b>{steps}</b>", f"tool calls <b>{calls}</b>"]
    if elapsed is not None:
        stats.append(f"<b>{fmt_seconds(elapsed)}</b>")
    if state.usage.total_tokens:
        stats.append(f"tokens <b>{state.usage.input_tokens}</b> in · <b>{state.usage.output_tokens}</b> out")
    if state.started is not None:
        stats.append(f"model <b>{escape(state.started.provider)}</b>")
    parts.append('<span class="anb-stat">' + " · ".join(stats) + "</span>")
    if state.finished is not None and state.finished.error:
        parts.append(f'<span class="anb-bad">{escape(state.finished.error)}</span>')
    return f'<div class="anb anb-head">{"".join(parts)}</div>'


@dataclass(frozen=True, slots=True)
class Section:
    """One depth as the widget shows it: a collapsible section with a title."""

    title: str
    html: str
    open: bool


def section_html(depth: int, title: str, inner: str, open: bool) -> str:
    """A depth as a ``<details>`` element (collapsible in the browser, no widget needed)."""
    attr = " open" if open else ""
    return f'<details class="anb-depth" data-depth="{depth}"{attr}><summary>{escape(title)}</summary>{inner}</details>'


def depth_title(v: DepthView) -> str:
    """The accordion title of a depth, e.g. ``Depth 1 · add ✓, search ✗``."""
    bits = []
    for c in v.calls.values():
        bits.append(c.name + _call_mark(c))
    if v.final is not None:
        bits.append("answer")
    elif v.response is None and v.request is not None:
        bits.append("asking the model…")
    return f"Depth {v.depth}" + (" · " + ", ".join(bits) if bits else "")


def _call_mark(c: CallView) -> str:
    if c.unknown or (c.validation and not c.validation.ok) or (c.finished and c.finished.error):
        return " ✗"
    if c.dedup and c.dedup.action == "skip":
        return " ↺"
    if any(d.action == "skip" for d in c.decisions):
        return " ⤼"
    if c.finished:
        return " ✓"
    return " …"


def depth_html(v: DepthView, preview: int = 400) -> str:
    out = ['<div class="anb">', _model_html(v)]
    out += [_call_html(c, preview) for c in v.calls.values()]
    out += [_note_html(n) for n in v.notes if not isinstance(n, StepDecision)]
    if v.output is not None:
        out.append(output_html(v.output))
    if v.final is not None:
        out.append('<div class="anb-block anb-final"><span class="anb-ok">Final answer</span> (shown below)</div>')
    out.append("</div>")
    return "".join(out)


def _model_html(v: DepthView) -> str:
    r = v.request
    head = '<span class="anb-h">Model call</span>'
    if r is not None:
        offer = f"tools: {escape(', '.join(r.tools))} ({escape(r.tool_choice)})" if r.tools else "no tools offered"
        plural = "" if r.n_messages == 1 else "s"
        head += f' <span class="anb-m">{r.n_messages} message{plural} · {offer}</span>'
    body = []
    if v.text:
        body.append(f"<pre>{escape(''.join(v.text))}</pre>")
    if v.call_deltas and v.response is None:
        for i, parts in sorted(v.call_deltas.items()):
            body.append(f'<div class="anb-m">streaming call #{i}: <code>{escape(parts[0])}</code></div>')
            body.append(f"<pre>{escape(''.join(parts[1:]))}</pre>")
    if v.output_mode is not None:
        m = v.output_mode
        body.append(f'<div class="anb-m">structured output via <b>{escape(m.mode)}</b> · {escape(m.detail)}</div>')
    resp = v.response
    if resp is None:
        body.append('<div class="anb-m">waiting for the model…</div>')
    else:
        what = f"{len(resp.tool_calls)} tool call(s)" if resp.tool_calls else "text"
        u = resp.usage
        tokens = f" · {u.input_tokens} in / {u.output_tokens} out tokens" if u.total_tokens else ""
        body.append(f'<div class="anb-m">replied with {what} in {fmt_seconds(resp.duration)}{tokens}</div>')
        if resp.text and not v.text:
            body.append(f"<pre>{escape(resp.text)}</pre>")
    return f'<div class="anb-block anb-model">{head}{"".join(body)}</div>'


def _pretty(arguments: Any) -> str:
    if arguments is None:
        return "(arguments are not valid JSON)"
    return json.dumps(arguments, indent=2, ensure_ascii=False, default=str)


def _call_html(c: CallView, preview: int) -> str:
    bad = c.unknown is not None or (c.validation is not None and not c.validation.ok)
    rows = [
        f'<span class="anb-h">Tool call <code>{escape(c.name)}</code></span> <span class="anb-m">{escape(c.call_id)}</span>',
        f"<pre>{escape(_pretty(c.arguments))}</pre>",
    ]
    if c.unknown is not None:
        rows.append(
            f'<div><span class="anb-bad">✗ unknown tool</span> <span class="anb-m">available: '
            f"{escape(', '.join(c.unknown.available) or '(none)')}; the model was told</span></div>"
        )
    for d in c.decisions:
        what = "skipped by the debugger" if d.action == "skip" else "arguments edited in the debugger"
        rows.append(f'<div><span class="anb-warn"><i class="fa fa-hand-paper-o"></i> {what}</span></div>')
    if c.validation is not None:
        if c.validation.ok:
            rows.append(
                '<div><span class="anb-ok">✓ valid</span> <span class="anb-m">arguments match the schema</span></div>'
            )
        else:
            errs = "".join(f"<li>{escape(e)}</li>" for e in c.validation.errors)
            rows.append(
                f'<div><span class="anb-bad">✗ invalid arguments</span> <span class="anb-m">not run; the model was told</span>'
                f'<ul style="margin:2px 0">{errs}</ul></div>'
            )
    if c.dedup is not None:
        rows.append(_dedup_html(c))
    if c.finished is not None:
        rows.append(_result_html(c, preview))
    elif c.started:
        rows.append('<div class="anb-m">running…</div>')
    if c.images:
        rows.append("<div>" + "".join(f'<img src="{i.data_url}" alt="attached image">' for i in c.images) + "</div>")
    cls = "anb-toolbad" if bad or (c.finished is not None and c.finished.error) else "anb-tool"
    return f'<div class="anb-block {cls}">{"".join(rows)}</div>'


def _dedup_html(c: CallView) -> str:
    d = c.dedup
    assert d is not None
    fp = f'<span class="anb-fp" title="{escape(d.fingerprint)}">{escape(d.fingerprint[:12])}</span>'
    if d.action == "execute":
        verdict, text = '<span class="anb-ok">new call</span>', "executed"
    elif d.action == "skip":
        verdict, text = (
            '<span class="anb-warn"><i class="fa fa-repeat"></i> repeat</span>',
            "not executed again; the model got the earlier result",
        )
    else:
        verdict, text = (
            '<span class="anb-warn"><i class="fa fa-repeat"></i> repeat</span>',
            "executed again (allow_repeat)",
        )
    return f'<div>dedup {verdict} {fp} <span class="anb-m">{text}</span></div>'


def _result_html(c: CallView, preview: int) -> str:
    f = c.finished
    assert f is not None
    took = f'<span class="anb-m">in {fmt_seconds(f.duration)}</span>'
    if f.error:
        head = f'<div><span class="anb-bad">✗ failed</span> <code>{escape(f.error)}</code> {took}</div>'
    else:
        head = f'<div><span class="anb-ok">result</span> {took}</div>'
    text = f.result
    if len(text) <= preview:
        return head + f"<pre>{escape(text)}</pre>"
    return (
        head + f"<pre>{escape(text[:preview])}…</pre>"
        f"<details><summary>show all {len(text):,} characters</summary><pre>{escape(text)}</pre></details>"
    )


def output_html(e: Any) -> str:
    """A structured answer's check: valid (its fields as a small table) or invalid (the errors)."""
    if not e.errors:
        head = f'<span class="anb-ok">✓ valid {escape(e.type_name)}</span>'
        return f'<div class="anb-block anb-final">{head}{value_table(e.value)}</div>'
    then = "sent back to the model to repair" if e.retry else "no retries left: the run ends"
    errs = "".join(f"<li>{escape(x)}</li>" for x in e.errors)
    head = f'<span class="anb-bad">✗ not a valid {escape(e.type_name)}</span> <span class="anb-m">{then}</span>'
    return f'<div class="anb-block anb-toolbad">{head}<ul style="margin:2px 0">{errs}</ul></div>'


def value_table(value_json: str | None, max_rows: int = 20) -> str:
    """A value as HTML: an object's fields, or a list of objects, as a table; else JSON.

    >>> value_table('{"name": "Oslo", "population": 709000}').count("<tr>")
    2
    """
    try:
        value = json.loads(value_json) if value_json is not None else None
    except ValueError:
        return f"<pre>{escape(str(value_json))}</pre>"

    def cell(x: Any) -> str:
        text = x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)
        return escape(text if len(text) <= 200 else text[:199] + "…")

    if isinstance(value, dict) and value:
        rows = "".join(f"<tr><th>{escape(str(k))}</th><td>{cell(v)}</td></tr>" for k, v in value.items())
        return f'<table class="anb-value">{rows}</table>'
    if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
        cols = list(dict.fromkeys(k for r in value for k in r))
        head = "<tr>" + "".join(f"<th>{escape(str(c))}</th>" for c in cols) + "</tr>"
        body = "".join(
            "<tr>" + "".join(f"<td>{cell(r.get(c, ''))}</td>" for c in cols) + "</tr>" for r in value[:max_rows]
        )
        more = f'<div class="anb-m">{len(value)} rows, first {max_rows} shown</div>' if len(value) > max_rows else ""
        return f'<table class="anb-value">{head}{body}</table>{more}'
    return f"<pre>{escape(json.dumps(value, ensure_ascii=False, indent=1))}</pre>"


def _note_html(n: object) -> str:
    if isinstance(n, LimitReached):
        return (
            f'<div class="anb-block anb-note"><span class="anb-warn">tool-call limit reached</span> '
            f'<span class="anb-m">{n.tool_calls}/{n.max_tool_calls}: the model must answer in text now</span></div>'
        )
    if isinstance(n, DirectOutput):
        return (
            f'<div class="anb-block anb-note"><span class="anb-ok">direct output</span> '
            f'<span class="anb-m"><code>{escape(n.name)}</code> returned the final answer</span></div>'
        )
    return ""
