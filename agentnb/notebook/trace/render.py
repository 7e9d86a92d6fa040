"""HTML for the trace widget: one block per depth (no widgets here; the header line is in header.py).

Everything user- or model-provided is escaped. Long results are cut to a preview with a
``<details>`` element that expands to the full text in the browser.

>>> from agentnb.notebook.trace.state import TraceState
>>> from agentnb.events import ModelRequest
>>> s = TraceState()
>>> s.add(ModelRequest(depth=0, n_messages=2, tools=(), tool_choice="none"))
>>> "Model call" in depth_html(s.depths[0])
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentnb.events import (
    CallDecision,
    CallRepair,
    CallsFromText,
    CallSteered,
    ConstraintDropped,
    ContextCompacted,
    ModelLoading,
    ProviderAnswered,
    ReasoningSummary,
    RequestRetried,
    RouteSwitched,
    StepDecision,
    UserInterjected,
)
from agentnb.events import GuidanceSkipped as Skipped
from agentnb.kernel.highlight import code_diff_html, code_html, code_of, code_outcome_html
from agentnb.notebook.trace.answer import answer_html, output_html
from agentnb.notebook.trace.blocks import copyable
from agentnb.notebook.trace.header import fmt_seconds
from agentnb.notebook.trace.nested import inner_html
from agentnb.notebook.trace.notes import note_html, said_html
from agentnb.notebook.trace.state import CallView, DepthView, Pause
from agentnb.printer import plural
from agentnb.untrusted import untrusted_html, untrusted_image
from agentnb.untrusted import untrusted_html as escape


def _secs(s: float) -> str:
    return escape(fmt_seconds(s))


@dataclass(frozen=True, slots=True)
class Section:
    """One depth as the widget shows it: a collapsible section with a title."""

    title: str
    html: str
    open: bool


def section_html(depth: int, title: str, inner: str, open: bool) -> str:
    """A depth as a ``<details>`` element (collapsible in the browser, no widget needed)."""
    attr = " open" if open else ""
    return f'<details class="anb-depth" data-depth="{escape(depth)}"{attr}><summary>{escape(title)}</summary>{inner}</details>'


def depth_title(v: DepthView, pause: Pause | None = None) -> str:
    """The section title of a depth, e.g. ``Depth 1 · add ✓, search ✗ · 0.84 s · 57 tokens``."""
    bits = [
        c.name + (" (paused)" if pause and pause.call_id == c.call_id else _call_mark(c, v.ended))
        for c in v.calls.values()
    ]
    if v.final is not None:
        bits.append("answer")
    elif pause is not None and pause.target == "model" and pause.depth == v.depth:
        bits.append("paused before the model call")
    elif v.response is None and v.request is not None:
        bits.append(_ENDED.get(v.ended or "", "stopped") if v.ended else "asking the model…")
    title = f"Depth {v.depth}" + (" · " + ", ".join(bits) if bits else "")
    seconds = v.seconds
    if seconds is not None:
        title += f" · {fmt_seconds(seconds)}"
    if v.response is not None and v.response.usage.total_tokens:
        title += f" · {plural(v.response.usage.total_tokens, 'token')}"
    return title


_ENDED = {"cancelled": "stopped", "error": "failed"}


def _past(limit: Any) -> str:
    """Why a call asked for past a limit was not run."""
    if limit.limit == "tool_calls":
        return f"past the tool-call limit ({escape(limit.max_tool_calls)}); the model was told"
    return f"past the {escape(limit.limit)} limit; the model was told"


def _call_mark(c: CallView, ended: str | None = None) -> str:
    if ended and not c.settled:
        return " ■"
    if c.unknown or (c.validation and not c.validation.ok) or (c.finished and c.finished.error):
        return " ✗"
    if c.dedup and c.dedup.action == "skip":
        return " ↺"
    if any(d.action == "skip" for d in c.decisions):
        return " ⤼"
    if c.over_limit:
        return " ⊘"
    if c.finished:
        return " ✓"
    return " ✗" if c.settled else " …"  # settled without running: denied


#: Notes a provider reports in ``Completion.events``, before the model call's reply.
_PROVIDER_NOTES = (
    RouteSwitched,
    ConstraintDropped,
    CallRepair,
    CallSteered,
    CallsFromText,
    ReasoningSummary,
    RequestRetried,
    ModelLoading,
    ProviderAnswered,
    Skipped,
    ContextCompacted,
)


def depth_html(v: DepthView, preview: int = 400, pause: Pause | None = None) -> str:
    """One depth: its model call, its tool calls, notes (the final answer is shown once, below)."""
    # What the provider reported while it answered (a route switch, a re-asked call...) happened
    # before this depth's tool calls ran: shown under the model call, above the calls.
    notes = [n for n in v.notes if not isinstance(n, StepDecision)]
    if v.request is None and v.response is None and v.final is not None:  # no model call here
        model = (
            '<div class="anb-block anb-model"><span class="anb-m">no model call: agentnb wrote the answer</span></div>'
        )
    else:
        model = _model_html(v, pause)
    said = [said_html(n) for n in notes if isinstance(n, UserInterjected)]  # went in before the request
    out = ['<div class="anb">', *said, model]
    out += [note_html(n) for n in notes if isinstance(n, _PROVIDER_NOTES)]
    out += [_call_html(c, preview, v.ended, pause) for c in v.calls.values()]
    out += [note_html(n) for n in notes if not isinstance(n, (*_PROVIDER_NOTES, UserInterjected))]
    if v.output is not None:
        out.append(output_html(v.output))
    if v.dropped:
        out.append(
            '<div class="anb-block anb-note"><span class="anb-warn">dropped</span> <span class="anb-m">the run was '
            "stopped before this step finished: its tool calls are not in the transcript and not counted</span></div>"
        )
    out.append("</div>")
    return "".join(out)


def _model_html(v: DepthView, pause: Pause | None) -> str:
    r = v.request
    head = '<span class="anb-h">Model call</span>'
    if r is not None:
        offer = f"tools: {escape(', '.join(r.tools))} ({escape(r.tool_choice)})" if r.tools else "no tools offered"
        head += f' <span class="anb-m">{escape(plural(r.n_messages, "message"))} · {offer}</span>'
    body = []
    if v.text and v.final is None:  # the final answer is shown once, rendered, below the trace
        body.append(f"<pre>{escape(''.join(v.text))}</pre>")
    if v.call_deltas and v.response is None:
        for i, parts in sorted(v.call_deltas.items()):
            body.append(f'<div class="anb-m">streaming call #{escape(i)}: <code>{escape(parts[0])}</code></div>')
            body.append(f"<pre>{escape(''.join(parts[1:]))}</pre>")
    if v.output_mode is not None:
        m = v.output_mode
        body.append(f'<div class="anb-m">structured output via <b>{escape(m.mode)}</b> · {escape(m.detail)}</div>')
    resp = v.response
    speed = _speed(v)
    if resp is not None:
        what = plural(len(resp.tool_calls), "tool call") if resp.tool_calls else "text"
        if v.final is not None:
            what += " (the final answer, below)"
        u = resp.usage
        tokens = f" · {escape(u.input_tokens)} in / {escape(u.output_tokens)} out tokens" if u.total_tokens else ""
        body.append(f'<div class="anb-m">replied with {escape(what)} in {_secs(resp.duration)}{speed}{tokens}</div>')
        if resp.tool_calls and r is not None and not r.tools:  # answered "not executed" by the loop
            names = escape(", ".join(c.name for c in resp.tool_calls))
            body.append(
                f'<div><span class="anb-warn">⊘ not run</span> <span class="anb-m">{names}: no tools were offered '
                "in this call; the model was told</span></div>"
            )
        if resp.text and not v.text and v.final is None:
            body.append(f"<pre>{escape(resp.text)}</pre>")
    elif pause is not None and pause.target == "model" and pause.depth == v.depth:
        body.append('<div class="anb-warn">paused before this model call</div>')
    elif v.unsent:
        body.append('<div class="anb-bad">stopped in the debugger: this model call was never sent</div>')
    elif v.ended and (v.text or v.call_deltas or v.n_deltas):
        what = "stopped" if v.ended == "cancelled" else "failed"
        body.append(f'<div class="anb-bad">{what} while the model was replying: its reply above is unfinished</div>')
    elif v.ended:
        body.append(f'<div class="anb-bad">{_ENDED_MODEL.get(v.ended, "stopped before the model replied")}</div>')
    elif v.n_deltas or v.text or v.call_deltas:
        body.append(f'<div class="anb-m">streaming…{speed}</div>')
    elif v.loading is not None and v.loading.seconds is None:
        body.append(f'<div class="anb-m">{escape(v.loading.describe())}</div>')
    else:
        body.append('<div class="anb-m">waiting for the model…</div>')
    if v.decision is not None:
        body.append(decision_html(v.decision))
    return f'<div class="anb-block anb-model">{head}{"".join(body)}</div>'


def decision_html(d: CallDecision) -> str:
    """Why the model called or answered: the verdict, its reason, and the tool ranking."""
    verdict = "called a tool" if d.action == "call" else "answered in text"
    rows = [
        f'<div class="anb-decision"><span class="anb-h">Why it {verdict}</span> <span class="anb-m">{escape(d.reason)}</span>'
    ]
    if d.ranking:
        cells = "".join(
            f'<tr><td><code>{escape(name)}</code></td><td class="anb-num">{score:+.2f}</td></tr>'
            for name, score in d.ranking[:5]
        )
        rows.append(
            '<table class="anb-value anb-rank"><tr><th>tool</th><th class="anb-num">fit vs. no tool</th></tr>'
            f"{cells}</table>"
        )
    rows.append("</div>")
    return "".join(rows)


_ENDED_MODEL = {"cancelled": "stopped before the model replied", "error": "the model call failed"}


def _speed(v: DepthView) -> str:
    ttft, speed = v.ttft, v.tokens_per_second
    if ttft is None:
        return ""
    out = f" · first token after {_secs(ttft)}"
    if speed is not None:
        rate, exact = speed
        out += f" · {'' if exact else '~'}{rate:.0f} tokens/s"
    return out


def _pretty(arguments: Any) -> str:
    if arguments is None:
        return "(arguments are not valid JSON)"
    return json.dumps(arguments, indent=2, ensure_ascii=False, default=str)


def _call_html(c: CallView, preview: int, ended: str | None = None, pause: Pause | None = None) -> str:
    bad = c.unknown is not None or (c.validation is not None and not c.validation.ok)
    rows = [
        f'<span class="anb-h">Tool call <code>{escape(c.name)}</code></span> <span class="anb-m">{escape(c.call_id)}</span>'
        + (f' <span class="anb-src" title="tool source">from {escape(c.source)}</span>' if c.source else "")
    ]
    code, old_code = code_of(c.arguments), code_of(c.original)
    if c.original is not None and code is not None and old_code is not None:
        rows.append(
            f'<div class="anb-edit"><span class="anb-warn">code edited {_edited_by(c)}</span>'
            f'<div class="anb-m">changes to the model\'s code</div>{code_diff_html(old_code, code)}'
            f'<div class="anb-m">→ run</div>{code_html(code)}</div>'
        )
    elif c.original is not None:
        rows.append(
            f'<div class="anb-edit"><span class="anb-warn">arguments edited {_edited_by(c)}</span>'
            f'<div class="anb-m">the model asked for</div><pre class="anb-old">{escape(_pretty(c.original))}</pre>'
            f'<div class="anb-m">→ run with</div>{copyable(_pretty(c.arguments))}</div>'
        )
    elif code is not None:
        rows.append(code_html(code))
    else:
        rows.append(copyable(_pretty(c.arguments)))
    if c.over_limit is not None:
        rows.append(
            f'<div><span class="anb-warn">⊘ not run</span> <span class="anb-m">{_past(c.over_limit)}</span></div>'
        )
    if c.unknown is not None:
        rows.append(
            f'<div><span class="anb-bad">✗ unknown tool</span> <span class="anb-m">available: '
            f"{escape(', '.join(c.unknown.available) or '(none)')}; the model was told</span></div>"
        )
    for d in c.decisions:
        if d.action == "skip":
            rows.append(
                '<div><span class="anb-warn"><i class="fa fa-hand-paper-o"></i> skipped by the debugger</span></div>'
            )
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
    if c.approval is not None and not (ended and c.approval.kind == "approval_requested"):  # after the checks, as asked
        rows.append(_approval_html(c.approval))
    if c.inner is not None:  # the run that produces the result, above it
        rows.append(inner_html(c.inner, lambda v: (depth_title(v), depth_html(v, preview)), answer_html))
    if c.finished is not None:
        rows.append(_result_html(c, preview))
    elif ended and not c.settled:
        what = "cancelled: stopped while it ran" if c.started else "not run: the run was stopped first"
        rows.append(f'<div class="anb-bad">{what}</div>')
    elif pause is not None and pause.call_id == c.call_id:
        rows.append('<div class="anb-warn">paused before this tool call</div>')
    elif c.started:
        rows.append('<div class="anb-m">running…</div>')
    if c.images:
        rows.append("<div>" + "".join(untrusted_image(i.data, i.mime) for i in c.images) + "</div>")
    cls = "anb-toolbad" if bad or (c.finished is not None and c.finished.error) else "anb-tool"
    return f'<div class="anb-block {cls}">{"".join(rows)}</div>'


def _edited_by(c: CallView) -> str:
    a = c.approval
    if a is not None and a.kind == "approval_decided" and a.decision == "edit":
        return f"by {untrusted_html(a.by)}"
    return "in the debugger"


def _approval_html(a: Any) -> str:
    """A call's approval: waiting for a decision, or the decision and who made it."""
    if a.kind == "approval_requested":
        return f'<div class="anb-warn anb-approval"><i class="fa fa-pause"></i> waiting for approval ({untrusted_html(a.approver)})</div>'
    by = untrusted_html(a.by)
    if a.decision == "deny":
        reason = untrusted_html(a.reason or "")
        return (
            f'<div class="anb-approval"><span class="anb-bad">✗ denied</span> <span class="anb-m">by {by}; '
            f"not run; the model was told: {reason}</span></div>"
        )
    what = "approved" if a.decision == "approve" else "approved with edited arguments"
    return f'<div class="anb-approval"><span class="anb-ok">✓ {what}</span> <span class="anb-m">by {by}</span></div>'


def _dedup_html(c: CallView) -> str:
    d = c.dedup
    assert d is not None
    fp = f'<span class="anb-fp" title="{escape(d.fingerprint)}">{escape(d.fingerprint[:12])}</span>'
    if d.action == "execute":
        verdict, text = '<span class="anb-ok">new call</span>', "not seen before"
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
    took = f'<span class="anb-m">in {_secs(f.duration)}</span>'
    if f.error:
        head = f'<div><span class="anb-bad">✗ failed</span> <code>{escape(f.error)}</code> {took}</div>'
    else:
        head = f'<div><span class="anb-ok">result</span> {took}</div>'
    return head + copyable(f.result, preview) + code_outcome_html(f.structured)
