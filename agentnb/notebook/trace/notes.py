"""HTML for the notes of a step: what a provider, the guidance, the limits or the history did.

>>> from agentnb.events import GuidanceSkipped
>>> html = skipped_html(GuidanceSkipped(0, "m", "tool ranking", "~40 s <at> 20 ms per token", 40.0, 5.0))
>>> "guidance skipped" in html and "&lt;at&gt;" in html
True
"""

from __future__ import annotations

import json
from typing import Any

from agentnb.events import (
    CallRepair,
    CallsFromText,
    CallSteered,
    ConstraintDropped,
    ContextCompacted,
    DirectOutput,
    Forked,
    GuidanceSkipped,
    HistoryTrimmed,
    LimitReached,
    ModelLoading,
    ProviderAnswered,
    ReasoningSummary,
    RequestRetried,
    RouteSwitched,
    UserInterjected,
)
from agentnb.notebook.trace.nested import trimmed_html
from agentnb.printer import limit_text
from agentnb.untrusted import untrusted_html
from agentnb.untrusted import untrusted_html as escape


def skipped_html(n: GuidanceSkipped) -> str:
    """A guidance step skipped for its cost: which, and why (the provider's words, escaped)."""
    return (
        f'<div class="anb-block anb-note"><span class="anb-warn">guidance skipped: {untrusted_html(n.step)}</span> '
        f'<span class="anb-m">{untrusted_html(n.provider)}: {untrusted_html(n.reason)}</span></div>'
    )


def said_html(n: UserInterjected) -> str:
    """A person's message to the running agent, where it went in (before the step's model call).

    >>> said_html(UserInterjected(2, "<b>also</b> $x$"))
    '<div class="anb-block anb-note anb-said"><span class="anb-warn">you said</span> <span class="anb-m">while the run went on; the model reads it from this step on</span><div style="white-space:pre-wrap">&lt;b&gt;also&lt;/b&gt; $x$</div></div>'
    """
    return (
        '<div class="anb-block anb-note anb-said"><span class="anb-warn">you said</span> '
        '<span class="anb-m">while the run went on; the model reads it from this step on</span>'
        f'<div style="white-space:pre-wrap">{escape(n.text)}</div></div>'
    )


def note_html(n: object) -> str:
    """A note as a block of the trace (empty for an event that is not a note)."""
    if isinstance(n, ProviderAnswered):
        cls = "anb-warn" if n.passed else "anb-ok"
        before = "".join(f"<li>{untrusted_html(name)}: {untrusted_html(why)}</li>" for name, why in n.passed)
        return (
            f'<div class="anb-block anb-note"><span class="{cls}">answered by {untrusted_html(n.provider)}</span>'
            + (f'<ul class="anb-m" style="margin:2px 0">{before}</ul>' if before else "")
            + "</div>"
        )
    if isinstance(n, (RequestRetried, ModelLoading)):  # a retry warns; a model loaded is a fact
        cls = "anb-warn" if isinstance(n, RequestRetried) else "anb-m"
        return (
            f'<div class="anb-block anb-note"><span class="{cls}">{untrusted_html(n.describe())}</span> '
            f'<span class="anb-m">{untrusted_html(n.provider)}</span></div>'
        )
    own = _OWN.get(type(n))
    if own is not None:  # the history kept in the window: a session's trim, a compaction
        return own(n)
    if isinstance(n, Forked):
        return (
            f'<div class="anb-block anb-note"><span class="anb-warn">forked at step {escape(str(n.forked_at))}</span> '
            f'<span class="anb-m">from run {escape(n.parent or "(unknown)")}: {escape(n.describe())}; '
            f"{escape(n.recorded_text())}</span></div>"
        )
    if isinstance(n, LimitReached) and n.limit != "tool_calls":
        return (
            f'<div class="anb-block anb-note"><span class="anb-warn">{untrusted_html(limit_text(n.limit, n.value, n.used))}'
            ' reached</span> <span class="anb-m">the model must answer in text now</span></div>'
        )
    if isinstance(n, LimitReached):
        return (
            f'<div class="anb-block anb-note"><span class="anb-warn">tool-call limit reached</span> '
            f'<span class="anb-m">{escape(n.tool_calls)}/{escape(n.max_tool_calls)}: the model must answer in text now</span></div>'
        )
    if isinstance(n, ReasoningSummary):
        return (
            f'<div class="anb-block anb-note"><span class="anb-m">reasoning summary</span>'
            f"<div>{escape(n.text)}</div></div>"
        )
    if isinstance(n, DirectOutput):
        return (
            f'<div class="anb-block anb-note"><span class="anb-ok">direct output</span> '
            f'<span class="anb-m"><code>{escape(n.name)}</code> returned the final answer</span></div>'
        )
    if isinstance(n, RouteSwitched):
        return (
            f'<div class="anb-block anb-note"><span class="anb-warn">switched to {escape(n.route)} tool calling</span> '
            f'<span class="anb-m">{escape(n.provider)}, from now on: {escape(n.reason)}</span></div>'
        )
    if isinstance(n, ConstraintDropped):
        return (
            f'<div class="anb-block anb-note"><span class="anb-warn">{escape(n.mechanism)} dropped</span> '
            f'<span class="anb-m">{escape(n.provider)}: {escape(n.reason)}</span></div>'
        )
    if isinstance(n, CallsFromText):
        names = ", ".join(f"<code>{escape(name)}</code>" for name in n.names)
        return (
            f'<div class="anb-block anb-note"><span class="anb-warn">calls read from text</span> '
            f'<span class="anb-m">{names}: {escape(n.detail)}</span></div>'
        )
    if isinstance(n, CallSteered):
        plural = "s" if n.requests != 1 else ""
        changed = f"steering chose {n.changed} of {n.tokens} tokens" + (f": {n.detail}" if n.detail else "")
        return (
            f'<div class="anb-block anb-note"><span class="anb-ok">call steered</span> '
            f'<span class="anb-m"><code>{escape(n.name)}</code> decoded token by token on {escape(n.provider)} '
            f"in {escape(n.requests)} request{plural}; {escape(changed)}</span></div>"
        )
    if isinstance(n, GuidanceSkipped):
        return skipped_html(n)
    if isinstance(n, CallRepair):
        cls, head = ("anb-ok", "call repaired") if n.repaired else ("anb-warn", "call not repaired")
        rejected = escape(json.dumps(n.rejected, ensure_ascii=False))
        return (
            f'<div class="anb-block anb-note"><span class="{cls}">{head}</span> '
            f'<span class="anb-m"><code>{escape(n.name)}</code> {rejected} broke its schema: '
            f"{escape('; '.join(n.errors))}; asked again once: {escape(n.detail)}</span></div>"
        )
    return ""


def compacted_html(n: ContextCompacted) -> str:
    """A compaction, folded: its line (steps, tokens before and after), then what went and the
    summary (the model's text, escaped).

    >>> e = ContextCompacted(2, ("clear",), 7000, 3000, 8000, "at=0.8", 5, (), (("c1", "read", 6000),))
    >>> html = compacted_html(e)
    >>> "context compacted" in html and "read" in html and "<details" in html
    True
    """
    cls = "anb-warn" if n.reason.startswith("overflow") or n.note else "anb-m"
    rows = [
        f"<li>{escape(name)} (call {escape(cid)}): {escape(f'{chars:,}')} characters cleared</li>"
        for cid, name, chars in n.cleared
    ]
    if n.dropped_messages:
        rows.append(f"<li>{escape(n.dropped_messages)} earlier messages left out</li>")
    body = f'<ul class="anb-m" style="margin:2px 0">{"".join(rows)}</ul>' if rows else ""
    if n.summary:
        body += f'<div class="anb-m">summary:</div><pre class="anb-c">{untrusted_html(n.summary)}</pre>'
    why = f"; {escape(n.note)}" if n.note else ""
    return (
        f'<div class="anb-block anb-note"><details><summary><span class="{cls}">{escape(n.describe())}</span> '
        f'<span class="anb-m">({escape(n.reason[:200])}{why})</span></summary>{body}</details></div>'
    )


_OWN: dict[type, Any] = {HistoryTrimmed: trimmed_html, ContextCompacted: compacted_html}
