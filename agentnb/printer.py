"""A plain-text event printer for terminals and logs (the CLI and the text fallback use it).

>>> from agentnb.events import ToolStarted
>>> format_event(ToolStarted(depth=1, call_id="c1", name="add", arguments={"a": 1}))
'  [1] run add(a=1)'
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from agentnb.context.size import gauge_text
from agentnb.control.cost import format_cost
from agentnb.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttachmentAdded,
    CallDecision,
    CallRepair,
    CallsFromText,
    CallSteered,
    ConstraintDropped,
    ContextCompacted,
    DedupDecision,
    DirectOutput,
    Event,
    FinalAnswer,
    Forked,
    GuidanceSkipped,
    HistoryTrimmed,
    LimitReached,
    ModelLoading,
    ModelRequest,
    ModelResponse,
    OutputMode,
    OutputValidated,
    ProviderAnswered,
    ReasoningSummary,
    RequestRetried,
    RouteSwitched,
    RunFinished,
    RunStarted,
    StepDecision,
    SubAgentEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallRequested,
    ToolFinished,
    ToolStarted,
    UnknownTool,
    UserInterjected,
    ValidationResult,
)
from agentnb.run.budget import overrun_text, without_tools_text
from agentnb.untrusted import untrusted_terminal


def limit_text(name: str, value: float | None, used: float | None) -> str:
    """A budget in words: ``total_tokens limit (100; used 120)``, ``cost limit ($0.01; used unknown)``."""
    if name == "cost":
        return f"cost limit ({format_cost(value)}; used {format_cost(used)})"
    if name == "requests" and value is not None and used is not None:  # reached: one left, for the answer
        # (the count includes the request about to be made, as the header's "model calls" will)
        return f"request limit ({value:g}; request {used + 1:g} of {value:g} is the last, for the answer)"
    show = (lambda x: f"{x:g}") if name == "seconds" else (lambda x: str(x))
    amount = "" if used is None else f"; used {show(used)}"
    return f"{name} limit ({show(value) if value is not None else '?'}{amount})"


def format_arguments(arguments: Any) -> str:
    """Arguments as `k=v` pairs with JSON values (what the trace shows)."""
    if not isinstance(arguments, dict):
        return "<invalid JSON>"
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def plural(n: int, noun: str) -> str:
    """``1 message``, ``2 messages``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def millis(seconds: float) -> str:
    """``<0.1 ms``, ``3.2 ms``."""
    return "<0.1 ms" if seconds < 0.0001 else f"{seconds * 1000:.1f} ms"


def shorten(text: str, width: int = 200) -> str:
    """One line, at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def format_event(event: Event, *, width: int = 200) -> str | None:
    """One readable line (or a few) for an event; None for events shown elsewhere (deltas)."""
    d = f"  [{event.depth}]"
    match event:
        case RunStarted(provider=p, tools=t, max_tool_calls=m, agent_name=a):
            who = f"{a}: " if a else ""
            return f"{who}run started: model {p}, tools {', '.join(t) or '(none)'}, max {m} tool calls"
        case Forked(parent=p, forked_at=at):
            return f"  forked from run {p or '(unknown)'} at step {at}: {event.describe()}; {event.recorded_text()}"
        case SubAgentEvent(event=inner):
            line = format_event(inner, width=width)  # the inner agent's own line, indented under its call
            if line is None:
                return None
            return "\n".join(f"{d}   | {part.lstrip()}" for part in line.splitlines())
        case HistoryTrimmed(dropped_turns=t, dropped_messages=m, kept_messages=k, reason=why):
            return f"{d} history: {plural(t, 'earlier turn')} ({plural(m, 'message')}) left out ({why}); the model reads {plural(k, 'message')}"
        case ContextCompacted():
            return f"{d} {event.describe()} ({event.reason[:120]})"
        case UserInterjected(text=t):
            return f"{d} you said (to the running agent): {shorten(t, width)}"
        case ModelRequest(n_messages=n, tools=t, tool_choice=c, context_tokens=size):
            offer = f"{plural(len(t), 'tool')}, choice {c}" if t else "no tools"
            gauge = "" if size is None else f"; {gauge_text(size, event.context_window, event.context_exact)}"
            return f"{d} ask model ({plural(n, 'message')}, {offer}{gauge})"
        case ModelResponse(tool_calls=calls, usage=u, duration=s):
            what = plural(len(calls), "tool call") if calls else "text"
            tokens = f", {u.input_tokens}+{u.output_tokens} tokens" if u.total_tokens else ""
            tokens += f", {format_cost(u.cost)}" if u.cost is not None else ""
            return f"{d} model replied with {what} in {s:.2f}s{tokens}"
        case ToolCallRequested(name=n, arguments=a):
            return f"{d} call {n}({format_arguments(a)})"
        case UnknownTool(name=n, available=a):
            return f"{d} unknown tool {n!r}; available: {', '.join(a)}"
        case ValidationResult(errors=errs) if errs:
            return f"{d} invalid arguments: " + "; ".join(errs)
        case DedupDecision(fingerprint=fp, seen_before=True, action=act):
            return f"{d} repeat call {fp[:12]}: {'not run, earlier result given' if act == 'skip' else 'run again (allow_repeat)'}"
        case StepDecision(target=t, action=a, arguments=args):
            return f"{d} debugger: {a} {t}" + (f" with {format_arguments(args)}" if args is not None else "")
        case ApprovalRequested(name=n, arguments=a, approver=who):
            return f"{d} {n}({format_arguments(a)}) needs approval: asking {who}"
        case ApprovalDecided(name=n, decision=dec, by=who, reason=why, arguments=args):
            what = {"approve": "approved", "deny": "denied", "edit": "approved with edited arguments"}[dec]
            tail = f": {shorten(why or '', width)}" if dec == "deny" else ""
            tail += f" {format_arguments(args)}" if args is not None else ""
            return f"{d} {n} {what} by {who}{tail}"
        case ToolStarted(name=n, arguments=a, source=src):
            return f"{d} run {n}({format_arguments(a)})" + (f" [{src}]" if src else "")
        case ToolFinished(name=n, result=r, error=e, duration=s):
            status = f"failed: {e}" if e else f"-> {shorten(r, width)}"
            return f"{d} {n} {status} ({millis(s)})"
        case AttachmentAdded(name=n, image=img):
            return f"{d} {n} attached an image ({img.mime}, {len(img.data)} bytes)"
        case LimitReached(max_tool_calls=m, limit="tool_calls"):
            return f"{d} tool-call limit ({m}) reached: the model must answer now"
        case LimitReached(limit=name, value=v, used=u):
            return f"{d} {limit_text(name, v, u)} reached: the model must answer now"
        case DirectOutput(name=n):
            return f"{d} {n} returned the final answer directly"
        case ReasoningSummary(text=t):
            return f"{d} reasoning summary: {shorten(t, width)}"
        case FinalAnswer(text=t):
            return f"answer: {t}"
        case OutputMode(mode=m, detail=x):
            return f"{d} structured output via {m}" + (f": {x}" if x else "")
        case OutputValidated(type_name=n, errors=errs, value=v, retry=r) if errs:
            then = "sent back to the model" if r else "no retries left"
            return f"{d} answer is not a valid {n} ({then}): " + "; ".join(errs)
        case OutputValidated(type_name=n, value=v):
            return f"{d} answer is a valid {n}: {shorten(v or '', width)}"
        case RunFinished(stop_reason=r, tool_calls=n, usage=u, duration=s, error=e):
            tail = f", error: {e}" if e else ""
            tokens = f", {plural(u.total_tokens, 'token')}" if u.total_tokens else ""  # 0: none reported
            tokens += f", cost {format_cost(u.cost)}" if u.cost is not None else ""
            tail += f"; {overrun_text(event.overrun)}" if event.overrun else ""  # type: ignore[union-attr]
            tail += f"; {without_tools_text(event.without_tools)}" if event.without_tools else ""  # type: ignore[union-attr]
            return f"run finished: {r}, {plural(n, 'tool call')}{tokens}, {s:.2f}s{tail}"
        case _:
            return guidance_line(event, d, width)


def guidance_line(event: Event, d: str, width: int) -> str | None:
    """The line of what a provider decided on its own (guidance, repairs, retries, fallbacks)."""
    match event:
        case CallDecision(action=a, reason=why, ranking=ranks):
            best = ", ".join(f"{n} {s:+.2f}" for n, s in ranks[:3])
            return f"{d} {'call a tool' if a == 'call' else 'answer in text'}: {why}" + (
                f" [fit: {best}]" if best else ""
            )
        case RouteSwitched(provider=p, route=r, reason=why):
            return f"{d} {p}: switched to {r} tool calling from now on ({shorten(why, width)})"
        case ConstraintDropped(provider=p, mechanism=m, reason=why):
            return f"{d} {p}: no longer sends {m} ({shorten(why, width)})"
        case CallRepair(provider=p, name=n, errors=errs, repaired=ok, detail=x):
            head = "repaired" if ok else "not repaired"
            return (
                f"{d} {p}: call to {n} broke its schema ({shorten('; '.join(errs), width)}); asked again: {head}, {x}"
            )
        case CallsFromText(provider=p, names=ns, detail=x):
            return f"{d} {p}: read {plural(len(ns), 'tool call')} ({', '.join(ns)}) from the reply's text ({x})"
        case CallSteered(provider=p, name=n, requests=r, tokens=t, changed=c, detail=x):
            how = f"steering chose {c} of {t} tokens" + (f" ({shorten(x, width)})" if x else "")
            return f"{d} {p}: call to {n} steered token by token in {r} request{'s' if r != 1 else ''}; {how}"
        case GuidanceSkipped(provider=p, step=st, reason=why):
            return f"{d} {p}: skipped {st} this step ({shorten(why, width)})"
        case ProviderAnswered(provider=p, passed=passed):
            before = "; ".join(f"{n}: {shorten(why, width)}" for n, why in passed)
            return f"{d} answered by {p}" + (f" (after {before})" if before else "")
        case RequestRetried(provider=p) | ModelLoading(provider=p):
            return f"{d} {p}: {event.describe()}"  # type: ignore[union-attr]
        case _:
            return None


class TextPrinter:
    """Prints events as they come; streamed text is written as it arrives.

    >>> import io
    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> out = io.StringIO()
    >>> _ = Agent(ScriptedProvider(["Hi."])).run("hello", on_event=TextPrinter(out))
    >>> "answer: Hi." in out.getvalue()
    True
    """

    def __init__(self, file: TextIO | None = None, *, width: int = 200) -> None:
        self.file = file if file is not None else sys.stdout
        self.width = width
        self._streaming = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, (TextDelta, ToolCallDelta)):
            if isinstance(event, TextDelta):
                if not self._streaming:
                    self._write(f"  [{event.depth}] model: ")
                    self._streaming = True
                self._write(event.text)
                self.file.flush()
            return
        if self._streaming:
            self._write("\n")
            self._streaming = False
        line = format_event(event, width=self.width)
        if line is not None:
            self._write(line + "\n")
            self.file.flush()

    def _write(self, text: str) -> None:
        text = untrusted_terminal(text)  # model text may carry escape sequences: shown, never sent
        try:
            self.file.write(text)
        except UnicodeEncodeError:  # a lone surrogate from a model, or a narrow terminal encoding
            encoding = getattr(self.file, "encoding", None) or "utf-8"
            self.file.write(text.encode(encoding, "backslashreplace").decode(encoding))
