"""The trace widget's status line: state, turn, model and tool calls, time, tokens, cost, model.

Every figure comes from the events folded into a :class:`~agentnb.notebook.trace.state.TraceState`.

>>> from agentnb.notebook.trace.state import TraceState
>>> "waiting" in header_html(TraceState(), None)
True
"""

from __future__ import annotations

from agentnb.context.size import level, short
from agentnb.control.cost import format_cost
from agentnb.events.counts import ModelCalls
from agentnb.notebook.trace.state import TraceState
from agentnb.printer import plural
from agentnb.run.budget import overrun_text, without_tools_text
from agentnb.untrusted import untrusted_html as escape

_STOP_TEXT = {
    "answer": "finished",
    "direct_output": "finished (direct output)",
    "limit": "finished at the tool-call limit",
    "cancelled": "stopped",
    "error": "failed",
    "invalid_output": "invalid output",
}


#: A budget of :class:`~agentnb.control.limits.UsageLimits` as the header names it.
_LIMIT_NAMES = {"requests": "request", "input_tokens": "input-token", "output_tokens": "output-token",
                "total_tokens": "token", "seconds": "time"}  # fmt: skip


def fmt_seconds(s: float) -> str:
    """``<0.1 ms``, ``0.4 ms``, ``12 ms``, ``1.23 s``, ``2 min 5 s``."""
    if s < 0.0001:
        return "<0.1 ms"
    if s < 0.01:
        return f"{s * 1000:.1f} ms"
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.2f} s" if s < 10 else f"{s:.1f} s"
    return f"{int(s // 60)} min {int(s % 60)} s"


def _secs(s: float) -> str:
    return escape(fmt_seconds(s))


#: The gauge's colours from 70% (amber) and 90% (red) of the window, inline so a static copy keeps them.
_LEVEL_STYLE = {"amber": ' style="color:#9a6700;font-weight:600"', "red": ' style="color:#cf222e;font-weight:600"'}
#: The steps the gauge's hover text lists at most (the last ones).
_HOVER_STEPS = 40


def gauge_html(state: TraceState) -> str:
    """The gauge: the last request's size against the window ("context 9.8k / 32.8k"), amber
    from 70%, red from 90%; each step's size on hover. An unknown window is said, never a share.

    >>> from agentnb.events import ModelRequest
    >>> s = TraceState()
    >>> s.add(ModelRequest(0, 1, (), "auto", 7_000, 10_000, True))
    >>> html = gauge_html(s)
    >>> "anb-gauge-amber" in html, "context <b>7k</b> / 10k" in html, "70% of the window" in html
    (True, True, True)
    """
    last = state.last_request
    assert last is not None and last.context_tokens is not None
    tokens, window = last.context_tokens, last.context_window
    size = ("" if last.context_exact else "~") + short(tokens)
    lvl = level(tokens, window)
    if window:
        text = f"context <b>{escape(size)}</b> / {escape(short(window))}"
        share = f"{100 * tokens / window:.0f}% of the window ({window:,} tokens)"
    else:
        text = f"context <b>{escape(size)}</b> (window unknown)"
        share = "the model's window is unknown"
    how = "counted by the model's tokenizer" if last.context_exact else "estimated (~), corrected by reported usage"
    steps = "; ".join(f"step {d + 1}: {t:,}" for d, t in state.context[-_HOVER_STEPS:])
    title = f"{share}, {how}. Each request: {steps}"
    cls = f"anb-gauge anb-gauge-{lvl}" if lvl is not None else "anb-gauge anb-gauge-unknown"
    return f'<span class="{cls}"{_LEVEL_STYLE.get(lvl or "", "")} title="{escape(title)}">{text}</span>'


def header_html(state: TraceState, elapsed: float | None, paused: float = 0.0) -> str:
    """The status line: state, turn, model and tool calls, time (paused time apart), tokens, model."""
    status = "paused" if state.pause is not None and state.finished is None else state.status
    label = _STOP_TEXT.get(status, status)
    if status == "limit" and state.limit is not None and state.limit.limit != "tool_calls":
        label = f"finished at the {_LIMIT_NAMES.get(state.limit.limit, state.limit.limit)} limit"
    parts = [
        f'<span class="anb-title">agentnb</span> <span class="anb-badge anb-s-{escape(status)}">{escape(label)}</span>'
    ]
    limit = state.started.max_tool_calls if state.started else None
    calls = f"{state.tool_calls}/{limit}" if limit is not None else str(state.tool_calls)
    # A fork: its recorded steps and the reply its edit gave were never sent (as events.counts says).
    recorded, edited = state.recorded_calls, state.edited_calls
    made = ModelCalls(state.model_calls - recorded - edited, recorded, edited)
    made_html = f"model calls <b>{escape(str(made.sent))}</b>{escape(made.unsent_text())}"
    stats = [made_html, f"tool calls <b>{escape(calls)}</b>"]
    if state.started is not None and state.started.turn > 1:
        stats.insert(0, f"turn <b>{escape(state.started.turn)}</b>")
    if elapsed is not None:
        took = f"<b>{_secs(elapsed)}</b>"
        if paused >= 0.05:
            took += f" (+{_secs(paused)} paused)"
        stats.append(took)
    if state.usage.total_tokens:
        stats.append(
            f"tokens <b>{escape(state.usage.input_tokens)}</b> in · <b>{escape(state.usage.output_tokens)}</b> out"
        )
        stats.append(f"cost <b>{escape(format_cost(state.usage.cost))}</b>")
    if state.last_request is not None:
        stats.append(gauge_html(state))
    if state.started is not None:
        stats.append(f"model <b>{escape(state.started.provider)}</b>")
    parts.append('<span class="anb-stat">' + " · ".join(stats) + "</span>")
    dropped = state.dropped_calls
    if dropped:
        what = plural(dropped, "unfinished tool call")
        parts.append(f'<span class="anb-warn" title="not in the transcript, not counted">{escape(what)} dropped</span>')
    if state.finished is not None and state.finished.overrun:
        over = overrun_text(state.finished.overrun)
        parts.append(f'<span class="anb-bad" title="a UsageLimits budget the run went past">{escape(over)}</span>')
    if state.finished is not None and state.finished.without_tools:
        said = without_tools_text(state.finished.without_tools)
        parts.append(f'<span class="anb-warn" title="a UsageLimits budget kept the tools back">{escape(said)}</span>')
    if state.finished is not None and state.finished.error:
        parts.append(f'<span class="anb-bad">{escape(state.finished.error)}</span>')
    return f'<div class="anb anb-head">{"".join(parts)}</div>'
