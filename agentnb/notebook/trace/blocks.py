"""HTML pieces of the trace that are not a depth: copyable text, the run's context (prompt,
system prompt, provider, model, earlier turns) and the transcript download link.

The copy button is an inline ``onclick`` (widget HTML runs no ``<script>``): it copies the
full text from a ``.anb-c`` element, so a long result cut to a preview is copied whole.

>>> html = copyable("x" * 10, preview=4)
>>> "xxxx…" in html and 'class="anb-c"' in html and "Copy" in html
True
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from agentnb.context.size import short as short_tokens
from agentnb.events import RunStarted
from agentnb.kernel.highlight import CODE_CSS
from agentnb.kernel.mentions import split_mentions
from agentnb.messages import AssistantMessage, Message, ToolMessage, UserMessage
from agentnb.providers.base import chars_estimate
from agentnb.run.transcript import transcript_bytes
from agentnb.untrusted import untrusted_html as escape

_COPY_JS = (
    "(function(b){var t=b.closest('.anb-copyable').querySelector('.anb-c').textContent;"
    "function ok(){b.textContent='Copied';setTimeout(function(){b.textContent='Copy'},1500)}"
    "function old(){var a=document.createElement('textarea');a.value=t;document.body.appendChild(a);"
    "a.select();document.execCommand('copy');a.remove();ok()}"
    "if(navigator.clipboard){navigator.clipboard.writeText(t).then(ok,old)}else{old()}})(this)"
)
COPY_BUTTON = f'<button class="anb-copy" title="Copy to the clipboard" onclick="{escape(_COPY_JS)}">Copy</button>'

CSS = """
.anb-copyable{position:relative}
.anb-copy{position:absolute;top:3px;right:3px;font-size:11px;padding:0 6px;line-height:18px;cursor:pointer;
  border:1px solid var(--jp-border-color2,#d0d7de);border-radius:4px;background:var(--jp-layout-color1,#fff);
  color:var(--jp-ui-font-color2,#57606a);opacity:.75}
.anb-copy:hover{opacity:1}
.anb-copyable>pre:first-of-type{padding-right:52px}
.anb pre.anb-old{text-decoration:line-through;color:var(--jp-ui-font-color2,#57606a)}
.anb-ctx summary{color:var(--jp-ui-font-color2,#57606a)!important}
.anb-ctx dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:4px 0}
.anb-ctx dt{color:var(--jp-ui-font-color2,#57606a)}.anb-ctx dd{margin:0}
.anb-save{font-size:12px;color:#0969da;text-decoration:none;white-space:nowrap}
"""


def copyable(text: str, preview: int | None = None, *, hidden: bool = False) -> str:
    """``text`` in a ``<pre>`` with a Copy button; cut to ``preview`` characters with a "show all"."""
    if hidden:
        return f'<div class="anb-copyable">{COPY_BUTTON}<pre class="anb-c" hidden>{escape(text)}</pre></div>'
    if preview is None or len(text) <= preview:
        return f'<div class="anb-copyable">{COPY_BUTTON}<pre class="anb-c">{escape(text)}</pre></div>'
    return (
        f'<div class="anb-copyable">{COPY_BUTTON}<pre>{escape(text[:preview])}…</pre>'
        f'<details><summary>show all {len(text):,} characters</summary><pre class="anb-c">{escape(text)}</pre>'
        "</details></div>"
    )


def context_html(started: RunStarted, earlier: Sequence[Message] = ()) -> str:
    """The run's prompt, system prompt, provider and model, folded; earlier turns, folded."""
    rows = []
    if started.prompt is not None:
        rows.append(f"<dt>prompt</dt><dd>{prompt_html(started.prompt)}</dd>")
    rows.append(f"<dt>system</dt><dd>{copyable(started.system) if started.system else '(none)'}</dd>")
    if started.backend:
        rows.append(f"<dt>provider</dt><dd><code>{escape(started.backend)}</code></dd>")
    rows.append(f"<dt>model</dt><dd><code>{escape(started.provider)}</code></dd>")
    rows.append(f"<dt>tools</dt><dd>{escape(', '.join(started.tools) or '(none)')}</dd>")
    typed = split_mentions(started.prompt or "")[0].strip()
    first = typed.splitlines()[0] if typed else ""
    short = first if len(first) <= 80 else first[:79] + "…"
    turn = f"Turn {escape(started.turn)} · " if started.turn > 1 else ""
    out = [
        f'<details class="anb-ctx"><summary>{turn}Prompt: {escape(short)} · system prompt, provider, model</summary>'
        f"<dl>{''.join(rows)}</dl></details>"
    ]
    turns = _turns(earlier)
    if turns:
        items = "".join(
            f'<li><span class="anb-m">turn {i}</span>{prompt_html(q)}<div class="anb-m">{escape(how)}</div>'
            + (copyable(a) if a else "")
            + "</li>"
            for i, (q, how, a) in enumerate(turns, 1)
        )
        out.append(
            f'<details class="anb-ctx anb-earlier"><summary>Earlier turns ({len(turns)}) · '
            f"conversation ~{escape(short_tokens(chars_estimate(earlier)))} tokens</summary>"
            f'<ol style="list-style:none;padding-left:0;margin:4px 0">{items}</ol></details>'
        )
    return '<div class="anb">' + "".join(out) + "</div>"


def prompt_html(prompt: str) -> str:
    """A prompt as typed, then each ``@mention``'s description folded (its first line as the summary).

    >>> from agentnb.kernel.mentions import with_mentions
    >>> html = prompt_html(with_mentions("Look at @t", {"t": "<b>hi</b>"}))
    >>> html.count("<details") == 1 and "@t · t: str" in html and "&lt;b&gt;hi" in html and "<b>" not in html
    True
    """
    typed, mentions = split_mentions(prompt)
    out = copyable(prompt if not mentions else typed)
    for path, body in mentions:
        first = body.splitlines()[0] if body else path
        out += (
            f'<details class="anb-ctx anb-mention"><summary>@{escape(path)} · {escape(first[:100])}</summary>'
            f"{copyable(body)}</details>"
        )
    return out


def _turns(messages: Sequence[Message]) -> list[tuple[str, str, str | None]]:
    """(prompt, what happened, answer) for each earlier user prompt."""
    from agentnb.run.loop import ATTACHMENT_NOTE

    turns: list[tuple[str, str, str | None]] = []
    calls = 0
    answer: str | None = None
    for m in messages:
        if isinstance(m, UserMessage) and m.content != ATTACHMENT_NOTE:
            if turns:
                turns[-1] = (turns[-1][0], _how(calls, answer), answer)
            turns.append((m.content, "", None))
            calls, answer = 0, None
        elif isinstance(m, ToolMessage):
            calls += 1
        elif isinstance(m, AssistantMessage) and not m.tool_calls:
            answer = m.content
    if turns:
        turns[-1] = (turns[-1][0], _how(calls, answer), answer)
    return turns


def _how(calls: int, answer: str | None) -> str:
    tools = (f"{calls} tool result" + ("" if calls == 1 else "s")) if calls else "no tools"
    return f"{tools}, then the answer:" if answer is not None else f"{tools}, no answer (stopped)"


def save_link(result: Any, name: str = "agentnb-transcript.json") -> str:
    """A download link for the run's transcript (``RunResult.save``'s JSON), as a data URL."""
    data = base64.b64encode(transcript_bytes(result.to_dict())).decode()  # lone surrogates escaped
    return (
        f'<a class="anb-save" download="{escape(name)}" href="data:application/json;base64,{data}" '
        'title="Download the transcript (messages and events) as JSON; RunResult.load or TraceWidget.replay read it">'
        '<i class="fa fa-download"></i> Save transcript</a>'
    )


#: The trace's stylesheet (JupyterLab's theme variables, light fallbacks).
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
.anb-src{font-size:11px;border:1px solid #d0d7de;border-radius:8px;padding:0 5px;color:#6e7781}
.anb-ok{color:#1a7f37;font-weight:600}.anb-bad{color:#cf222e;font-weight:600}.anb-warn{color:#9a6700;font-weight:600}
.anb pre{background:var(--jp-layout-color2,#f6f8fa);border-radius:4px;padding:5px 8px;margin:3px 0;
  font-family:var(--jp-code-font-family,monospace);
  white-space:pre-wrap;word-break:break-word;font-size:12px;max-height:360px;overflow:auto}
.anb code{font-size:12px}
.anb-fp{font-family:var(--jp-code-font-family,monospace);font-size:11px;background:var(--jp-layout-color2,#f6f8fa);
  padding:0 4px;border-radius:3px}
.anb details summary{cursor:pointer;color:#0969da;font-size:12px}
.anb table.anb-value{border-collapse:collapse;margin:3px 0;font-size:12px}
.anb table.anb-value td,.anb table.anb-value th{border:1px solid var(--jp-border-color2,#d0d7de);padding:1px 6px;text-align:left}
.anb table.anb-value .anb-num{text-align:right;font-variant-numeric:tabular-nums}
.anb table.anb-rank{color:var(--jp-ui-font-color2,#57606a)}
.anb-md p{margin:4px 0}.anb-md pre{max-height:none}.anb-md table{border-collapse:collapse;margin:4px 0}
.anb-md th,.anb-md td{border:1px solid var(--jp-border-color2,#d0d7de);padding:2px 8px}
.anb-md blockquote{margin:4px 0;padding-left:10px;border-left:3px solid var(--jp-border-color2,#d0d7de)}
.anb-img{color:var(--jp-ui-font-color2,#57606a);font-size:12px}
.anb-static.anb-trace{border:1px solid var(--jp-border-color2,#d0d7de);padding:6px 10px}
.anb-raw summary{color:var(--jp-ui-font-color2,#57606a)!important}
.anb img{max-width:320px;max-height:240px;border:1px solid #d0d7de;border-radius:4px;margin:4px 4px 0 0}
"""
STYLE = STYLE + CSS + CODE_CSS + "</style>"
