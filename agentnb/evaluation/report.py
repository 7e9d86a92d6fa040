"""Views of a finished evaluation: summary text, an HTML table and a plot (the widget: :mod:`.view`).

Every text from a model, a tool or the dataset goes through :mod:`agentnb.untrusted`.
The HTML (``Evaluation._repr_html_``) needs no kernel: it survives saving and nbconvert.
"""

from __future__ import annotations

import math
from typing import Any

from agentnb.untrusted import NO_MATH, untrusted_html, untrusted_terminal

#: Table rows shown in HTML (the DataFrame has them all).
MAX_ROWS = 50
#: Characters of one cell shown in HTML.
MAX_CELL = 120


def summary_lines(ev: Any) -> list[str]:
    """One line per agent: pass rate and interval, errors, tokens, latency."""
    lines = []
    for rec in ev.summary().to_dict(orient="records"):
        rate = "n/a" if rec["n"] == 0 else f"{rec['pass_rate']:.0%} [{rec['ci_low']:.0%}, {rec['ci_high']:.0%}]"
        p50, p95 = rec["latency_p50"], rec["latency_p95"]
        lat = "" if math.isnan(p50) else f"  latency p50 {p50:.2f} s p95 {p95:.2f} s"
        if rec.get("queue_wait_p50", 0) >= 0.005:  # runs waited for a busy in-process model: apart from their time
            lat += f" (queue wait p50 {rec['queue_wait_p50']:.2f} s)"
        # a scorer that raised scores nothing: say so, or its rows read as plain failures
        failed = f"  scorer errors {rec['scorer_errors']} (table column scorer_errors)" if rec["scorer_errors"] else ""
        lines.append(
            f"{untrusted_terminal(rec['agent'])}: {rec['passed']}/{rec['n']} passed {rate}  errors {rec['errors']}"
            f"{failed}  tokens {rec['input_tokens']} in / {rec['output_tokens']} out{lat}"
        )
    return lines


def summary_text(ev: Any) -> str:
    head = f"Evaluation: {len(ev.rows)} rows, {len(ev.agents)} agent(s), scorers {ev.scorers}"
    if ev.stopped:
        head += f" ({stopped_note(ev)})"
    lines = [head, *("  " + line for line in summary_lines(ev))]
    if len(ev.agents) >= 2:
        lines.append("  " + untrusted_terminal(ev.compare().verdict()))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    if len(text) > MAX_CELL:
        text = text[: MAX_CELL - 1] + "…"
    return untrusted_html(text)


def summary_html(ev: Any) -> str:
    rows = "".join(f"<li>{untrusted_html(line)}</li>" for line in summary_lines(ev))
    extra = ""
    if len(ev.agents) >= 2:
        extra = f"<p>{untrusted_html(ev.compare().verdict())}</p>"
    state = f" ({untrusted_html(stopped_note(ev))})" if ev.stopped else ""
    return f"<b>Evaluation</b>{state}: {len(ev.rows)} rows<ul>{rows}</ul>{extra}"


def stopped_note(ev: Any) -> str:
    """What a stopped evaluation's views say: what is left, and how to finish it."""
    if ev.log:
        return "stopped: run the same call again to resume from the log; the logged cases are not run twice"
    return "stopped: evaluate with log=... to be able to resume"


def table_html(ev: Any, sort_by: str | None = None, ascending: bool = True, limit: int = MAX_ROWS) -> str:
    """The table as escaped HTML: failing rows first (or sorted by ``sort_by``), at most ``limit``."""
    table = ev.table
    if not len(table):
        return "<p>No rows.</p>"
    table = table.reset_index().rename(columns={"index": "row"})
    if sort_by is None:
        table = table.sort_values(["passed", "row"], kind="stable")
    else:
        table = table.sort_values(sort_by, ascending=ascending, kind="stable", key=_sortable)
    cols = [
        "row",
        "case",
        "agent",
        "input",
        "output",
        "expected",
        *ev.scorers,
        "passed",
        "stop_reason",
        "error",
        "latency",
    ]
    if any(r.get("queue_wait") for r in ev.rows):
        cols.append("queue_wait")
    if max(r.get("repeat", 0) for r in ev.rows) > 0:
        cols.insert(3, "repeat")
    head = "".join(f"<th>{untrusted_html(c)}</th>" for c in cols)
    body = []
    for rec in table.head(limit).to_dict(orient="records"):
        style = "" if rec["passed"] else ' style="background:#fdecea"'
        cells = "".join(f"<td>{_cell(_fmt(rec.get(c), c))}</td>" for c in cols)
        body.append(f"<tr{style}>{cells}</tr>")
    more = f"<p>{len(table) - limit} more rows in <code>.table</code></p>" if len(table) > limit else ""
    return f'<table class="agentnb-eval"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{more}'


def _sortable(col: Any) -> Any:
    return col.map(lambda v: (0, v) if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, str(v)))


def _fmt(v: Any, column: str = "") -> Any:
    if column in ("latency", "queue_wait") and isinstance(v, float):
        return f"{v:.2f} s"
    if isinstance(v, float):
        return f"{v:.3g}"
    return v


def evaluation_html(ev: Any) -> str:
    return f'<div class="{NO_MATH}">{summary_html(ev)}{table_html(ev)}</div>'


def plot(ev: Any) -> Any:
    """Pass rate per agent (with 95% intervals), per metadata column value, and a latency histogram."""
    import matplotlib.pyplot as plt

    summary = ev.summary()
    meta = _meta_columns(ev)
    n = 2 + len(meta)
    fig, axes = plt.subplots(1, n, figsize=(4 * n, 3.2), squeeze=False)
    ax = axes[0][0]
    rates = summary["pass_rate"].fillna(0).tolist()
    err = [
        [max(0.0, r - lo) for r, lo in zip(rates, summary["ci_low"], strict=True)],
        [max(0.0, hi - r) for r, hi in zip(rates, summary["ci_high"], strict=True)],
    ]
    ax.bar(summary["agent"].tolist(), rates, yerr=err, capsize=4, color="#4c78a8")
    ax.set_ylim(0, 1.05)
    ax.set_title("pass rate (95% CI)")
    table = ev.table
    for k, col in enumerate(meta, start=1):
        ax = axes[0][k]
        grouped = table.groupby([col, "agent"], sort=True)["passed"].mean().unstack("agent")
        grouped = grouped.reindex(columns=[a for a in ev.agents if a in grouped.columns])
        grouped.plot.bar(ax=ax, rot=0, legend=len(ev.agents) > 1)
        ax.set_ylim(0, 1.05)
        ax.set_title(f"pass rate by {col}")
        ax.set_xlabel("")
    ax = axes[0][n - 1]
    for agent in ev.agents:
        lat = [r["latency"] for r in ev.rows if r.get("agent") == agent and r.get("latency") is not None]
        ax.hist(lat, bins=min(20, max(1, len(lat))), alpha=0.6, label=str(agent))
    ax.set_title("latency (s)")
    if len(ev.agents) > 1:
        ax.legend()
    fig.tight_layout()
    plt.close(fig)  # shown by the notebook's display of the returned figure, not twice
    return fig


def _meta_columns(ev: Any, most: int = 2) -> list[str]:
    """Metadata columns with a few repeated values (categories), not ids or free text."""
    values: dict[str, set[str]] = {}
    for r in ev.rows:
        for k, v in (r.get("metadata") or {}).items():
            if k != "id" and isinstance(v, (str, int, bool)):
                values.setdefault(k, set()).add(str(v))
    n_cases = len({r["case"] for r in ev.rows})
    return [k for k, vs in values.items() if 1 < len(vs) <= min(8, max(2, n_cases // 2))][:most]
