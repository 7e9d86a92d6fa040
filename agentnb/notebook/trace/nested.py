"""The trace of an agent run by a tool call (:meth:`agentnb.Agent.as_tool`), inside that call.

An inner run is folded into a :class:`~agentnb.notebook.trace.state.TraceState` of its own (on the
call's :class:`~agentnb.notebook.trace.state.CallView`); it is drawn as a ``<details>`` element under
the call, open while it runs, with its depths, its answer and how it ended. Deeper runs nest the
same way. Everything the model or a tool wrote goes through :mod:`agentnb.untrusted`.

>>> from agentnb import Agent
>>> from agentnb.notebook.trace.state import TraceState
>>> from agentnb.testing import ScriptedProvider, call
>>> helper = Agent(ScriptedProvider(["<b>4</b>"]), name="helper")
>>> r = Agent(ScriptedProvider([call("helper", prompt="2+2"), "4"]), tools=[helper.as_tool()]).run("go")
>>> s = TraceState()
>>> for e in r.events:
...     s.add(e)
>>> draw = lambda v: (f"Depth {v.depth}", "...")
>>> html = inner_html(s.depths[0].calls["call_1"].inner, draw, escape)
>>> "helper" in html, "&lt;b&gt;4&lt;/b&gt;" in html, "<b>4</b>" in html
(True, True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentnb.notebook.trace.header import fmt_seconds
from agentnb.printer import plural
from agentnb.untrusted import untrusted_html as escape


def inner_html(inner: Any, depth: Callable[[Any], tuple[str, str]], answer: Callable[[str], str]) -> str:
    """An inner run as a collapsible block (live: call it again as events arrive).

    ``depth`` draws one of its depths as (title, HTML) and ``answer`` its answer: the trace
    widget's own (:mod:`agentnb.notebook.trace.render`) are passed in, so a view never imports back.
    """
    started = inner.started
    name = (started.agent_name if started is not None else None) or "agent"
    done = inner.finished
    if done is None:
        state = "running…"
    else:
        state = f"{done.stop_reason} · {fmt_seconds(done.duration)}"
        if done.usage.total_tokens:
            state += f" · {plural(done.usage.total_tokens, 'token')}"
    prompt = started.prompt if started is not None and started.prompt else ""
    body = [f'<div class="anb-m">asked: {escape(prompt)}</div>'] if prompt else []
    for d in sorted(inner.depths):
        title, html = depth(inner.depths[d])
        body.append(f'<details class="anb-depth" open><summary>{escape(title)}</summary>{html}</details>')
    if inner.answer is not None:
        body.append(f'<div class="anb-block anb-final"><b>answer</b>{answer(inner.answer)}</div>')
    if done is not None and done.error:
        body.append(f'<div class="anb-bad">{escape(done.error)}</div>')
    opened = " open" if done is None or depth_count(inner) <= 2 else ""
    return (
        f'<details class="anb-sub" style="margin:4px 0 2px 12px;border-left:2px solid #8c959f;padding-left:6px"{opened}><summary>agent <code>{escape(name)}</code> · {escape(state)}'
        f"</summary>{''.join(body)}</details>"
    )


def depth_count(inner: Any) -> int:
    return len(inner.depths)


def trimmed_html(n: Any) -> str:
    """A session's note that older turns were left out of what the model reads."""
    return (
        f'<div class="anb-block anb-note"><span class="anb-warn">history trimmed</span> '
        f'<span class="anb-m">{escape(n.dropped_turns)} earlier turn{"s" if n.dropped_turns != 1 else ""} '
        f"({escape(n.dropped_messages)} messages) left out to fit {escape(n.reason)}; the model reads "
        f"{escape(n.kept_messages)} earlier messages</span></div>"
    )
