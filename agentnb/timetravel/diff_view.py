"""How a :class:`~agentnb.timetravel.diff.RunDiff` looks: plain text for a terminal, HTML for a
notebook (and its static export). Every value from a run is untrusted text: it goes through
:mod:`agentnb.untrusted` as it is inserted, and the HTML's last step is
:func:`~agentnb.untrusted.static_view` (sanitized, styled inline, under a root MathJax skips).

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> from agentnb.timetravel.diff import diff
>>> a = Agent(ScriptedProvider(["<b>Paris</b>"])).run("Capital?")
>>> html = diff_html(diff(a, a.fork(0, reply="<script>x</script>")))
>>> "<script>" in html, "&lt;script&gt;" in html
(False, True)
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agentnb.kernel.highlight import code_diff, code_diff_html, code_of
from agentnb.untrusted import static_view, untrusted_terminal
from agentnb.untrusted import untrusted_html as esc

#: At most this many characters of one value in a view (the rest is the transcript's).
CLIP = 400


def _clip(text: str) -> str:
    return text if len(text) <= CLIP else text[: CLIP - 1] + "…"


def describe(step: Any) -> list[str]:
    """A step as short lines: the reply, each call, each result."""
    if step is None:
        return ["(no such step)"]
    lines = []
    if step.context:
        lines.append(f"context compacted: {step.context}")
    if step.reply:
        lines.append(f"says: {_clip(step.reply)}")
    for name, args in step.calls:
        lines.append(f"calls {name}({_clip(json.dumps(args, ensure_ascii=False, default=str))})")
    for name, result, error in step.results:
        lines.append(f"{name} -> {'error: ' if error else ''}{_clip(error or result)}")
    return lines or ["(no reply)"]


def code_changes(x: Any, y: Any) -> list[tuple[str, str, str]]:
    """The code steps whose ``code`` differs between two paired steps: (tool, a's code, b's code)."""
    if x is None or y is None:
        return []
    out = []
    for (name, args), (_, other) in zip(x.calls, y.calls, strict=False):
        old, new = code_of(args), code_of(other)
        if old is not None and new is not None and old != new:
            out.append((name, old, new))
    return out


def _headline(d: Any) -> str:
    a, b = d.labels
    if d.first_divergence is None:
        return f"{a} and {b} are the same run ({len(d.steps)} steps)"
    return f"{a} and {b} differ first at step {d.first_divergence} ({d.field})"


def diff_text(d: Any) -> str:
    """The diff as plain text; run text is made safe for a terminal (no escape sequences)."""
    a, b = d.labels
    out = [_headline(d)]
    for i, (x, y) in enumerate(d.steps):
        if d.first_divergence is None or i < d.first_divergence:
            out.append(f"  [{i}] same")
            continue
        out.append(f"  [{i}]")
        if x is not None and y is not None and x.system != y.system:
            out.append(f"    {a} system: {_clip(x.system or '')}")
            out.append(f"    {b} system: {_clip(y.system or '')}")
        for label, step in ((a, x), (b, y)):
            out.extend(f"    {label}: " + line.replace("\n", "\n" + " " * (len(label) + 6)) for line in describe(step))
        for name, old, new in code_changes(x, y):
            out.append(f"    {name} code ({a} -, {b} +):")
            out.extend(f"      {line}" for line in code_diff(old, new).splitlines())
    out.append(f"answer ({a} -, {b} +):")
    out.extend(f"  {line}" for line in d.answer_diff())
    return untrusted_terminal("\n".join(out))


#: The diff's styles, written inline by :func:`~agentnb.untrusted.static_view` (an untrusted
#: notebook drops ``<style>``). Cells are left-aligned: JupyterLab right-aligns table cells in an
#: HTML output. Every row whose steps differ is marked, the first one more strongly.
_CSS = (
    ".anb-diff{font-family:var(--jp-code-font-family,monospace);font-size:12px;text-align:left}"
    ".anb-diff table{border-collapse:collapse;margin:4px 0}"
    ".anb-diff th,.anb-diff td{text-align:left;vertical-align:top;padding:2px 8px;white-space:pre-wrap}"
    ".anb-diff .same{color:#888}.anb-diff .differs{background:rgba(255,200,0,.15)}"
    ".anb-diff .first{background:rgba(255,200,0,.3);border-left:3px solid #d4a72c}"
    ".anb-diff .del{background:rgba(255,0,0,.12)}.anb-diff .add{background:rgba(0,160,0,.12)}"
    ".anb-diff .anb-del{background:rgba(255,0,0,.12)}.anb-diff .anb-add{background:rgba(0,160,0,.12)}"
    ".anb-diff pre.anb-code{margin:2px 0;white-space:pre-wrap}"
)


def _cell(step: Any) -> str:
    return "<br>".join(esc(line) for line in describe(step))


def _differs(x: Any, y: Any) -> bool:
    """Whether two paired steps differ in anything the diff compares (their depth aside)."""
    return x is None or y is None or dataclasses.replace(x, depth=y.depth) != y


def diff_html(d: Any) -> str:
    """The diff as HTML: the shared steps folded, the rest side by side (each row that differs
    marked, the first one most), the answers' line diff; sanitized, under a no-math root."""
    a, b = d.labels
    rows = []
    same = d.first_divergence if d.first_divergence is not None else len(d.steps)
    if same:
        rows.append(f'<tr class="same"><td>[0–{esc(str(same - 1))}]</td><td colspan="2">the same in both</td></tr>')
    for i, (x, y) in enumerate(d.steps[same:], start=same):
        mark = "differs first" if i == d.first_divergence else "differs" if _differs(x, y) else "same"
        rows.append(f'<tr class="{mark}"><td>[{esc(str(i))}]</td><td>{_cell(x)}</td><td>{_cell(y)}</td></tr>')
        for name, old, new in code_changes(x, y):
            rows.append(
                f'<tr class="{mark}"><td></td><td colspan="2">{esc(name)} code ({esc(a)} −, {esc(b)} +)'
                f"{code_diff_html(old, new)}</td></tr>"
            )
    answer = []
    for line in d.answer_diff():
        cls = {"-": "del", "+": "add"}.get(line[:1], "same")
        answer.append(f'<div class="{cls}">{esc(line)}</div>')
    return static_view(
        f'<div class="anb-diff"><div><b>{esc(_headline(d))}</b></div>'
        f"<table><tr><th>step</th><th>{esc(a)}</th><th>{esc(b)}</th></tr>{''.join(rows)}</table>"
        f"<div><b>answer</b> ({esc(a)} −, {esc(b)} +)</div>{''.join(answer)}</div>",
        _CSS,
    )
