"""An improvement as text and as static HTML: the summary, the candidates, the diff, the test.

Every text from a model, a tool, the dataset or the reflector goes through
:mod:`agentnb.untrusted` (escaped; numbers too); nothing rewrites the HTML afterwards.
"""

from __future__ import annotations

from typing import Any

from agentnb.untrusted import NO_MATH, untrusted_html, untrusted_terminal

#: Characters of a candidate's text shown in a table cell (the DataFrame has it all).
MAX_CELL = 160
#: Candidates shown in HTML.
MAX_ROWS = 40


def summary_lines(imp: Any) -> list[str]:
    sizes = imp.sizes
    recs = imp._search.records
    count = {s: sum(1 for r in recs if r["status"] == s) for s in ("accepted", "rejected", "skipped", "stopped")}
    best = next((r for r in recs if r["id"] == imp.best_id and r["val_mean"] is not None), None)
    seed = recs[0] if recs else None
    lines = [
        f"splits: {sizes['train']} train, {sizes['validation']} validation, {sizes['test']} test; "
        f"runs {imp.spent}/{imp.budget}",
        f"candidates: {count['accepted']} accepted, {count['rejected']} rejected, {count['skipped']} skipped"
        + (f", {count['stopped']} stopped (a Stop cut its runs short)" if count["stopped"] else ""),
    ]
    if seed is not None and best is seed:
        lines.append(f"validation: original {seed['val_mean']:.0%}; no candidate beat it, so the best is the original")
    elif seed is not None and best is not None:
        lines.append(
            f"validation: original {seed['val_mean']:.0%}, best {best['val_mean']:.0%} (candidate {imp.best_id}); "
            "selection used these cases, so this figure is optimistic"
        )
    if imp.reason:
        lines.append(f"ended: {imp.reason}")
    lines.append(imp.verdict)
    return lines


def summary_text(imp: Any) -> str:
    body = "\n".join("  " + untrusted_terminal(line) for line in summary_lines(imp))
    diff = imp.diff()
    tail = "\n  the best texts are the original's" if not diff else "\n" + untrusted_terminal(diff)
    return "Improvement\n" + body + tail


def _cell(value: Any, limit: int = MAX_CELL) -> str:
    text = "" if value is None else f"{value:.0%}" if isinstance(value, float) else str(value)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return untrusted_html(text)


def candidates_html(imp: Any, limit: int = MAX_ROWS) -> str:
    """The candidates as an escaped table; the best one in bold."""
    recs = imp._search.records
    if not recs:
        return "<p>No candidate scored yet.</p>"
    cols = ["id", "parent", "status", "component", "val_mean", "runs", "minibatch", "text / reason"]
    head = "".join(f"<th>{untrusted_html(c)}</th>" for c in cols)
    body = []
    for r in recs[-limit:]:
        mb = "" if r.get("child_minibatch") is None else f"{r['parent_minibatch']:g} → {r['child_minibatch']:g}"
        what = r.get("reason") if r["status"] in ("skipped", "stopped") else r.get("text")
        cells = [r["id"] or "–", r["parent"] or "–", r["status"], r["component"] or "–", r["val_mean"], r["runs"], mb]
        tds = "".join(f"<td>{_cell(v)}</td>" for v in cells) + f"<td>{_cell(what)}</td>"
        style = ' style="font-weight:bold"' if r["id"] == imp.best_id and r["val_mean"] is not None else ""
        body.append(f"<tr{style}>{tds}</tr>")
    more = f"<p>{len(recs) - limit} earlier rows in <code>.candidates</code></p>" if len(recs) > limit else ""
    return f'<table class="agentnb-improve"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{more}'


def diff_html(diff: str) -> str:
    """A unified diff, each line escaped, additions green and removals red."""
    if not diff:
        return "<p>The best texts are the original's.</p>"
    lines = []
    for line in diff.splitlines():
        color = "#1a7f37" if line.startswith("+") else "#cf222e" if line.startswith("-") else "#57606a"
        lines.append(f'<div style="color:{color}">{untrusted_html(line) or "&nbsp;"}</div>')
    return f'<pre style="white-space:pre-wrap">{"".join(lines)}</pre>'


def improvement_html(imp: Any) -> str:
    items = "".join(f"<li>{untrusted_html(line)}</li>" for line in summary_lines(imp))
    return (
        f'<div class="{NO_MATH}"><b>Improvement</b><ul>{items}</ul>{candidates_html(imp)}'
        f"<p><b>best against original</b></p>{diff_html(imp.diff())}</div>"
    )
