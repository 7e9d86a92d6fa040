"""Fork: a new run whose first steps come from a recording, with an edit at step ``at``.

Steps before ``at`` are the recording's: no model request, no tool run, zero cost. Step ``at``
takes the edit, then the run continues live with ``agent`` (by default the one that made the
run). An edit of the reply, of one call's arguments or of one tool's result keeps step ``at``'s
recorded request (no model request for it; a tool-result edit runs no tool of step ``at``
either); an edit of the system prompt, or another agent, sends step ``at`` live.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def weather(city: str) -> str:
...     '''The weather in a city.'''
...     return "sunny"
>>> model = ScriptedProvider([call("weather", city="Paris"), "It is sunny.", "Take an umbrella."])
>>> r = Agent(model, tools=[weather]).run("Weather in Paris?")
>>> f = r.fork(0, tool_result="rain")  # step 0 from the recording, its result edited; step 1 live
>>> f.output, f.messages[2].content, len(model.requests)
('Take an umbrella.', 'rain', 3)
>>> r.fork(0, arguments={"town": "Paris"})
Traceback (most recent call last):
...
agentnb.errors.UserError: fork at step 0: the arguments of weather fail its schema: 'city' is a required property; Additional properties are not allowed ('town' was unexpected)
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from agentnb.errors import UserError
from agentnb.events import Event, Forked
from agentnb.messages import Message, SystemMessage, ToolCall, ToolMessage
from agentnb.providers.base import Chunk, Completion, Provider, Request, TextChunk, model_name
from agentnb.timetravel.recording import Step, recorded_steps


class Primed(Provider):
    """Answers the first request with a given reply (no request sent), then asks ``inner``."""

    primed = True  # a cassette records what ``inner`` says, never the given reply

    def __init__(self, inner: Provider, first: Completion) -> None:
        self.inner, self.first = inner, first
        self.name = inner.name
        self.model = model_name(inner)
        self.supports_native_tools = inner.supports_native_tools
        self.supports_streaming = inner.supports_streaming

    async def complete(self, request: Request) -> Completion:
        if self.first is not None:
            first, self.first = self.first, None  # type: ignore[assignment]
            return first
        return await self.inner.complete(request)

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:  # type: ignore[override]
        if self.first is not None:
            first, self.first = self.first, None  # type: ignore[assignment]
            if first.text:
                yield TextChunk(first.text)
            yield first
            return
        async for item in self.inner.stream(request):
            yield item


async def afork(
    result: Any,
    at: int,
    *,
    agent: Any = None,
    reply: Any = None,
    arguments: dict[str, Any] | None = None,
    tool_result: Any = None,
    system: str | None = None,
    on_event: Callable[[Event], Any] | None = None,
    stream: bool | None = None,
) -> Any:
    """Fork ``result`` at step ``at`` (see the module); returns the fork's :class:`~agentnb.RunResult`.

    Args:
        at: the step, as the widget numbers them (``[0]``, ``[1]``, ...).
        agent: the agent that goes on from step ``at`` (a new system prompt, model or tool
            set); by default the one that made ``result``.
        reply: the model's reply at ``at``: a text, or a list of calls (``ToolCall``,
            ``{"name": ..., "arguments": {...}}``).
        arguments: one call's new arguments: the arguments themselves when step ``at`` made
            one call, else ``{call name or id: arguments}``.
        tool_result: one tool's new result: a text when step ``at`` made one call, else
            ``{call name or id: text}``.
        system: a new system prompt from step ``at`` on.
        on_event: sees every event of the fork, the recorded prefix first.
    """
    live = agent if agent is not None else getattr(result, "agent", None)
    if live is None:
        raise UserError("this result has no agent (it was loaded from a transcript): fork it with agent=...")
    if sum(x is not None for x in (reply, arguments, tool_result)) > 1:
        raise UserError("fork takes one of reply=, arguments= and tool_result= at a time")
    steps = recorded_steps(result)
    step = _step(steps, at)
    edit: dict[str, Any] = {}
    first: Completion | None = None
    if reply is not None:
        first = _reply(reply, live, at)
        edit["reply"] = _jsonable_reply(first)
    elif arguments is not None:
        first, edit["arguments"] = _arguments(step, arguments, live, at)
    history = list(result.messages[: step.n_messages])
    start = at
    if tool_result is not None:
        history, edit["tool_result"], changed = _tool_result(result, steps, step, tool_result, at)
        start = at + 1
    new_system = system if system is not None else (live.system if agent is not None else None)
    if new_system is not None:
        history = _with_system(history, new_system)
        edit["system"] = new_system
    if agent is not None:
        edit["agent"] = {"name": agent.name, "provider": agent.provider.name, "tools": list(agent.tools)}
    runner = live
    if first is not None or (start > 0 and live.tool_choice not in ("auto", "none")):
        runner = copy.copy(live)
        if first is not None:
            runner.provider = Primed(live.provider, first)
        if start > 0 and live.tool_choice not in ("auto", "none"):
            runner.tool_choice = "auto"  # a forcing choice is the run's first step's, long past
    lineage = Forked(0, result.run_id, at, edit, start)
    prefix = [e for e in result.events if e.depth < start and e.kind not in ("run_started", "run_finished", "forked")]
    if tool_result is not None:
        prefix = [_edited_result(e, changed) for e in prefix]
    feed = _Feed(on_event, result.events[0], lineage, prefix, start)
    from agentnb.tracing.observe import RunLink  # the recorded calls: a repeat is answered from them

    link = RunLink(seen=_seen(history, live.tools), first_depth=start)  # live steps numbered from ``start``
    limits = _limits(live, result, start)
    done = await runner.arun(
        [], history=history, on_event=feed, stream=stream, limits=limits, on_cancel="return", _link=link
    )
    return dataclasses.replace(done, events=feed.assemble(done.events), tool_calls=done.tool_calls + _calls(prefix),
                               agent=live)  # fmt: skip


def _step(steps: list[Step], at: int) -> Step:
    depths = [s.depth for s in steps]
    if isinstance(at, bool) or not isinstance(at, int) or at not in depths:
        span = f"steps 0 to {depths[-1]}" if depths else "no model step"
        raise UserError(f"fork step {at!r} is out of range: this run has {span}")
    return steps[depths.index(at)]


def _reply(reply: Any, agent: Any, at: int) -> Completion:
    if isinstance(reply, str):
        return Completion(reply, finish_reason="stop")
    items = [reply] if isinstance(reply, (ToolCall, dict)) else list(reply)
    calls = []
    for i, item in enumerate(items):
        if isinstance(item, ToolCall):
            c = item
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            c = ToolCall(str(item.get("id") or ""), item["name"], item.get("arguments") or {})
        else:
            raise UserError(f"fork reply item {i}: a call is a ToolCall or {{'name': ..., 'arguments': {{...}}}}")
        _check_call(agent, c.name, c.arguments, at)
        calls.append(ToolCall(c.id or f"fork_{at}_{i}", c.name, c.arguments))
    return Completion(None, tuple(calls), finish_reason="tool_calls")


def _check_call(agent: Any, name: str, args: Any, at: int) -> None:
    """Validated like the debugger's edits: the tool exists and the arguments fit its schema."""
    tool = agent.tools.get(name)
    if tool is None:
        raise UserError(f"fork at step {at}: no tool named {name!r} (tools: {', '.join(agent.tools) or 'none'})")
    errors = tool.validate(args) if isinstance(args, dict) else ["the arguments must be a JSON object"]
    if errors:
        raise UserError(f"fork at step {at}: the arguments of {name} fail its schema: {'; '.join(errors)}")


def _pick(step: Step, which: Any, at: int, what: str) -> tuple[int, ToolCall]:
    calls = step.completion.tool_calls if step.completion is not None else ()
    if not calls:
        raise UserError(f"fork at step {at}: the model called no tool at that step, so it has no {what} to edit")
    if which is None:
        if len(calls) > 1:
            names = ", ".join(f"{c.name} ({c.id})" for c in calls)
            raise UserError(f"fork at step {at}: {len(calls)} calls ({names}); say which: {{name or id: ...}}")
        return 0, calls[0]
    for i, c in enumerate(calls):
        if which in (c.id, c.name):
            return i, c
    names = ", ".join(c.name for c in calls)
    raise UserError(f"fork at step {at}: no call to {which!r} at that step (its calls: {names})")


def _keyed(value: Any, step: Step, leaf: type, params: Any = ()) -> tuple[Any, Any]:
    """``(which call, value)`` of an edit: ``{call name or id: value}`` picks a call, else None.

    A one-key dict is read as the arguments themselves when its key is one of ``params`` (the
    only call's parameters) and names no call.
    """
    calls = step.completion.tool_calls if step.completion is not None else ()
    if isinstance(value, dict) and len(value) == 1:
        ((k, v),) = value.items()
        if isinstance(v, leaf) and (any(k in (c.id, c.name) for c in calls) or k not in params):
            return k, v
    return None, value


def _arguments(step: Step, arguments: Any, agent: Any, at: int) -> tuple[Completion, dict[str, Any]]:
    calls = step.completion.tool_calls if step.completion is not None else ()
    only = agent.tools.get(calls[0].name) if len(calls) == 1 else None
    params = (only.parameters.get("properties") or {}) if only is not None else ()
    which, args = _keyed(arguments, step, dict, params)
    i, call = _pick(step, which, at, "arguments")
    _check_call(agent, call.name, args, at)
    assert step.completion is not None
    edited = list(step.completion.tool_calls)
    edited[i] = ToolCall(call.id, call.name, dict(args))
    done = dataclasses.replace(
        step.completion, tool_calls=tuple(edited), events=(), usage=type(step.completion.usage)()
    )
    return done, {"call": call.name, "arguments": dict(args)}


def _tool_result(
    result: Any, steps: list[Step], step: Step, value: Any, at: int
) -> tuple[list[Message], dict[str, Any], tuple[str, str]]:
    which, text = _keyed(value, step, str)
    _, call = _pick(step, which, at, "tool result")
    if not isinstance(text, str):
        raise UserError(f"fork at step {at}: a tool result is text, not {type(text).__name__}")
    later = [s for s in steps if s.depth > at]
    end = later[0].n_messages if later else len(result.messages)
    history = list(result.messages[:end])
    for j in range(step.n_messages, end):
        m = history[j]
        if isinstance(m, ToolMessage) and m.tool_call_id == call.id:
            history[j] = ToolMessage(m.tool_call_id, m.name, text, False)
            break
    else:
        raise UserError(f"fork at step {at}: the call to {call.name} has no result in the recording (it never ran)")
    return history, {"call": call.name, "result": text}, (call.id, text)


def _edited_result(event: Any, changed: tuple[str, str]) -> Any:
    if event.kind == "tool_finished" and event.call_id == changed[0]:
        return dataclasses.replace(event, result=changed[1], error=None)
    return event


def _with_system(history: list[Message], system: str) -> list[Message]:
    if history and isinstance(history[0], SystemMessage):
        return [SystemMessage(system), *history[1:]]
    return [SystemMessage(system), *history]


def _jsonable_reply(c: Completion) -> Any:
    return c.text if not c.tool_calls else [{"name": t.name, "arguments": t.arguments} for t in c.tool_calls]


def _seen(history: list[Message], tools: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """``(fingerprint, result)`` of each call in ``history`` that ran well (the dedup's memory)."""
    from agentnb.messages import AssistantMessage
    from agentnb.tools.dedupe import fingerprint

    calls = {c.id: c for m in history if isinstance(m, AssistantMessage) for c in m.tool_calls}
    out = []
    for m in history:
        c = calls.get(m.tool_call_id) if isinstance(m, ToolMessage) and not m.is_error else None
        tool = tools.get(c.name) if c is not None else None
        if c is not None and tool is not None and isinstance(c.arguments, dict):
            args = {**tool.defaults, **c.arguments} if tool.defaults else c.arguments
            out.append((fingerprint(c.name, args), str(m.content)))
    return tuple(out)


def _calls(prefix: list[Any]) -> int:
    return sum(1 for e in prefix if e.kind == "tool_call")


def _limits(agent: Any, result: Any, start: int) -> Any:
    """The agent's limits with the tool calls the recorded prefix used taken off."""
    from agentnb.control.limits import UsageLimits

    used = sum(1 for e in result.events if e.kind == "tool_call" and e.depth < start)
    base = agent.limits if agent.limits is not None else UsageLimits()
    most = base.tool_calls if base.tool_calls is not None else agent.max_tool_calls
    return dataclasses.replace(base, tool_calls=max(0, most - used))


class _Feed:
    """The fork's events as a consumer sees them: the lineage and the recorded prefix first,
    then the live events (already at their steps in the whole run: ``RunLink.first_depth``)."""

    def __init__(self, sink: Any, parent_start: Any, lineage: Forked, prefix: list[Any], start: int) -> None:
        self.sink, self.parent_start, self.lineage, self.prefix, self.start = sink, parent_start, lineage, prefix, start
        self.started = False
        self.calls = _calls(prefix)

    def head(self, live_start: Any) -> list[Any]:
        first = dataclasses.replace(
            live_start,
            prompt=getattr(self.parent_start, "prompt", None),
            system=getattr(self.parent_start, "system", None),
            turn=getattr(self.parent_start, "turn", 1),
            n_messages=getattr(self.parent_start, "n_messages", live_start.n_messages),
            max_tool_calls=getattr(self.parent_start, "max_tool_calls", live_start.max_tool_calls),
        )
        return [first, self.lineage, *self.prefix]

    def shift(self, event: Any) -> Any:
        """The live events come at their depths in the whole run (``RunLink.first_depth``)."""
        if event.kind == "run_finished":  # the whole run's count: the recorded calls too
            return dataclasses.replace(event, tool_calls=event.tool_calls + self.calls)
        return event

    def __call__(self, event: Any) -> Any:
        if self.sink is None:
            return None
        if event.kind == "run_started" and not self.started:
            self.started = True
            for e in self.head(event):
                self.sink(e)
            return None
        return self.sink(self.shift(event))

    def assemble(self, events: tuple[Any, ...]) -> tuple[Any, ...]:
        return (*self.head(events[0]), *(self.shift(e) for e in events[1:]))
