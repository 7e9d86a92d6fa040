"""A stable plain-text form of a trace: no timings, no memory addresses.

It is what ``text/plain`` shows for the trace widget (nbconvert to text, plain IPython,
nbval comparisons), so two runs of the same script give the same text.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> r = Agent(ScriptedProvider([call("add", a=2, b=3), "5"]), tools=[add]).run("2+3?")
>>> print(trace_text(r.events))
agentnb trace: answer · 2 model calls · 1/10 tool calls
run started: model scripted, tools add, max 10 tool calls
prompt: 2+3?
  [0] ask model (1 message, 1 tool, choice auto)
  [0] model replied with 1 tool call
  [0] call add(a=2, b=3)
  [0] arguments valid
  [0] dedup d6fb174cac0e: new call, run
  [0] run add(a=2, b=3)
  [0] add -> 5
  [1] ask model (3 messages, 1 tool, choice auto)
  [1] model replied with text
answer: 5
run finished: answer, 1 tool call
"""

from __future__ import annotations

from collections.abc import Iterable

from agentnb.events import (
    DedupDecision,
    Event,
    ModelResponse,
    RunFinished,
    RunStarted,
    SubAgentEvent,
    ToolFinished,
    ValidationResult,
)
from agentnb.events.counts import model_calls
from agentnb.printer import format_event, plural, shorten
from agentnb.run.budget import overrun_text, without_tools_text
from agentnb.untrusted import untrusted_terminal

_DEDUP = {
    "execute": "new call, run",
    "skip": "repeat, not run: earlier result given",
    "allow_repeat": "repeat, run again (allow_repeat)",
}


def event_line(event: Event, *, width: int = 200) -> str | None:
    """One line for an event, like :func:`agentnb.printer.format_event` but without timings."""
    d = f"  [{event.depth}]"
    match event:
        case RunStarted(prompt=prompt, turn=turn):
            line = format_event(event, width=width) or ""
            line += f", turn {turn}" if turn > 1 else ""
            return line + (f"\nprompt: {shorten(prompt, width)}" if prompt else "")
        case ModelResponse(tool_calls=calls, usage=u):
            what = plural(len(calls), "tool call") if calls else "text"
            tokens = f", {u.input_tokens}+{u.output_tokens} tokens" if u.total_tokens else ""
            return f"{d} model replied with {what}{tokens}"
        case ValidationResult(errors=errs) if not errs:
            return f"{d} arguments valid"
        case DedupDecision(fingerprint=fp, action=act):
            return f"{d} dedup {fp[:12]}: {_DEDUP.get(act, act)}"
        case ToolFinished(name=n, result=r, error=e):
            return f"{d} {n} failed: {e}" if e else f"{d} {n} -> {shorten(r, width)}"
        case RunFinished(stop_reason=r, tool_calls=n, usage=u, error=e):
            tail = f", error: {e}" if e else ""
            tokens = f", {plural(u.total_tokens, 'token')}" if u.total_tokens else ""  # 0: none reported
            tail += f"; {overrun_text(event.overrun)}" if event.overrun else ""  # type: ignore[union-attr]
            tail += f"; {without_tools_text(event.without_tools)}" if event.without_tools else ""  # type: ignore[union-attr]
            return f"run finished: {r}, {plural(n, 'tool call')}{tokens}{tail}"
        case SubAgentEvent(event=inner):  # an agent tool's run, indented under its call
            line = event_line(inner, width=width)
            return None if line is None else "\n".join(f"{d}   | {part.lstrip()}" for part in line.splitlines())
        case _:
            return format_event(event, width=width)


def summary_line(events: Iterable[Event], status: str | None = None, *, held: int = 0) -> str:
    """``agentnb trace: <status> · N model calls · k/max tool calls``.

    ``held``: model calls asked for but held back (a debugger paused before them), not counted.
    """
    calls = 0
    limit = None
    events = list(events)
    for e in events:
        if isinstance(e, RunStarted):
            limit = e.max_tool_calls
        elif isinstance(e, RunFinished):
            status = status or e.stop_reason
            calls = e.tool_calls
        elif e.kind == "tool_call":
            calls += 1
    of = f"/{limit}" if limit is not None else ""
    made = model_calls(events, held)  # a fork's recorded and edited steps were never sent
    return f"agentnb trace: {status or 'not started'} · {made} · {calls}{of} tool calls"


def trace_text(events: Iterable[Event], status: str | None = None, *, width: int = 200, held: int = 0) -> str:
    """The whole trace as stable text: a summary line, then one line per event."""
    events = list(events)
    lines = [summary_line(events, status, held=held)]
    lines += [line for e in events if (line := event_line(e, width=width)) is not None]
    return untrusted_terminal("\n".join(lines))  # also shown by terminals (IPython's repr)
