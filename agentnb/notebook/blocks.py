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

from agentnb.events import RunStarted
from agentnb.messages import AssistantMessage, Message, ToolMessage, UserMessage
from agentnb.transcript import transcript_bytes
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
        rows.append(f"<dt>prompt</dt><dd>{copyable(started.prompt)}</dd>")
    rows.append(f"<dt>system</dt><dd>{copyable(started.system) if started.system else '(none)'}</dd>")
    if started.backend:
        rows.append(f"<dt>provider</dt><dd><code>{escape(started.backend)}</code></dd>")
    rows.append(f"<dt>model</dt><dd><code>{escape(started.provider)}</code></dd>")
    rows.append(f"<dt>tools</dt><dd>{escape(', '.join(started.tools) or '(none)')}</dd>")
    first = (started.prompt or "").strip().splitlines()[0] if (started.prompt or "").strip() else ""
    short = first if len(first) <= 80 else first[:79] + "…"
    turn = f"Turn {started.turn} · " if started.turn > 1 else ""
    out = [
        f'<details class="anb-ctx"><summary>{turn}Prompt: {escape(short)} · system prompt, provider, model</summary>'
        f"<dl>{''.join(rows)}</dl></details>"
    ]
    turns = _turns(earlier)
    if turns:
        items = "".join(
            f'<li><span class="anb-m">turn {i}</span>{copyable(q)}<div class="anb-m">{escape(how)}</div>'
            + (copyable(a) if a else "")
            + "</li>"
            for i, (q, how, a) in enumerate(turns, 1)
        )
        out.append(
            f'<details class="anb-ctx anb-earlier"><summary>Earlier turns ({len(turns)})</summary>'
            f'<ol style="list-style:none;padding-left:0;margin:4px 0">{items}</ol></details>'
        )
    return '<div class="anb">' + "".join(out) + "</div>"


def _turns(messages: Sequence[Message]) -> list[tuple[str, str, str | None]]:
    """(prompt, what happened, answer) for each earlier user prompt."""
    from agentnb.loop import ATTACHMENT_NOTE

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
