"""Fork: a new run whose first steps come from a recording, with an edit at step ``at``.

Steps before ``at`` are the recording's: no model request, no tool run, zero cost. Step ``at``
takes the edit, then the run continues live with ``agent`` (by default the one that made the
run). An edit of the reply, of one call's arguments or of one tool's result keeps step ``at``'s
recorded request (no model request for it; a tool-result edit runs no tool of step ``at``
either, and an arguments edit runs only the edited call: the other calls of the step keep their
recorded results); an edit of the system prompt, or another agent, sends step ``at`` live.

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
from agentnb.timetravel.edits import (
    check_kinds,
    edited_arguments,
    edited_result,
    pick_step,
    recorded_results,
    reply_completion,
)
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
    check_kinds(agent, system, on_event, stream)
    steps = recorded_steps(result)
    step = pick_step(steps, at)
    edit: dict[str, Any] = {}
    first: Completion | None = None
    kept: dict[str, Any] = {}  # step ``at``'s calls whose recorded results the fork reuses
    if reply is not None:
        first = reply_completion(reply, live, at)
        edit["reply"] = _jsonable_reply(first)
    elif arguments is not None:
        first, call = edited_arguments(step, arguments, live, at)
        edit["arguments"] = {**_named(step, call), "arguments": dict(call.arguments or {})}
        kept = recorded_results(result, step, _step_end(result, steps, at), call.id)
    history = list(result.messages[: step.n_messages])
    start = at
    if tool_result is not None:
        call, text = edited_result(tool_result, step, at)
        history = _result_history(result, steps, step, call, text)
        edit["tool_result"], changed = {**_named(step, call), "result": text}, (call.id, text)
        start = at + 1
    new_system = system if system is not None else (live.system if agent is not None else None)
    if new_system is not None:
        history = _with_system(history, new_system)
        edit["system"] = new_system
    if agent is not None:
        edit["agent"] = {"name": agent.name, "provider": agent.provider.name, "tools": list(agent.tools)}
    runner = _runner(live, first, start)
    lineage = Forked(0, result.run_id, at, edit, start)
    prefix = [e for e in result.events if _recorded(e, at, start)]
    if tool_result is not None:
        prefix = [_edited_result(e, changed) for e in prefix]
    feed = _Feed(on_event, result.events[0], lineage, prefix, start)
    from agentnb.tracing.observe import RunLink  # the recorded calls: a repeat is answered from them

    def whole(done: Any) -> Any:  # the fork as its caller (and a store of runs) gets it
        return dataclasses.replace(done, events=feed.assemble(done.events), tool_calls=done.tool_calls + feed.calls,
                                   agent=live)  # fmt: skip

    recorded = _kept(kept, live.tools, first)
    compacted = _compacted(result, start, new_system)
    link = RunLink(
        seen=_seen(history, live.tools), first_depth=start, recorded=recorded, whole=whole, compacted=compacted
    )
    limits = _limits(live, result, start)
    done = await runner.arun(
        [], history=history, on_event=feed, stream=stream, limits=limits, on_cancel="return", _link=link
    )
    return whole(done)


def _compacted(result: Any, start: int, system: str | None) -> tuple[Any, int] | None:
    """What the last compaction before step ``start`` sent in place of the history's start
    (:class:`~agentnb.events.ContextCompacted`): the fork goes on from it, as the run did."""
    last = None
    for e in result.events:
        if e.kind == "context_compacted" and e.depth < start:
            last = e
    if last is None:
        return None
    from agentnb.context.compaction import sent_messages

    messages = sent_messages(last.messages, result.messages)
    if system is not None and messages and isinstance(messages[0], SystemMessage):
        messages[0] = SystemMessage(system)
    return tuple(messages), last.upto


def _runner(live: Any, first: Completion | None, start: int) -> Any:
    """The agent that runs the fork: ``live``, its first reply primed, its forcing choice let go."""
    forcing = start > 0 and live.tool_choice not in ("auto", "none")
    if first is None and not forcing:
        return live
    runner = copy.copy(live)
    if first is not None:
        runner.provider = Primed(live.provider, first)
    if forcing:
        runner.tool_choice = "auto"  # a forcing choice is the run's first step's, long past
    return runner


def _named(step: Step, call: ToolCall) -> dict[str, str]:
    """The edited call as the lineage names it: by name, and by id too where the step made
    another call of that name."""
    calls = step.completion.tool_calls if step.completion is not None else ()
    shared = sum(c.name == call.name for c in calls) > 1
    return {"call": call.name, "id": call.id} if shared else {"call": call.name}


def _step_end(result: Any, steps: list[Step], at: int) -> int:
    """Where step ``at``'s messages end: the next step's request, else the transcript's end."""
    later = [s for s in steps if s.depth > at]
    return later[0].n_messages if later else len(result.messages)


def _recorded(event: Any, at: int, start: int) -> bool:
    """Whether ``event`` is of the fork's recorded prefix: its steps before ``start``, and the
    messages a person sent before step ``at``'s request (they are in the fork's history)."""
    if event.kind == "user_interjected":
        return bool(event.depth <= at)
    return bool(event.depth < start and event.kind not in ("run_started", "run_finished", "forked"))


def _result_history(result: Any, steps: list[Step], step: Step, call: ToolCall, text: str) -> list[Message]:
    """The transcript up to step ``at``'s end with ``call``'s result replaced by ``text`` (a
    person's messages sent before the next step's request left out: they came after step ``at``)."""
    end = _step_end(result, steps, step.depth)
    end -= sum(1 for e in result.events if e.kind == "user_interjected" and e.depth == step.depth + 1)
    history = list(result.messages[:end])
    for j in range(step.n_messages, end):
        m = history[j]
        if isinstance(m, ToolMessage) and m.tool_call_id == call.id:
            history[j] = ToolMessage(m.tool_call_id, m.name, text, False)
            return history
    raise UserError(f"fork at step {step.depth}: the call to {call.name} has no result in the recording (it never ran)")


def _kept(kept: dict[str, Any], tools: dict[str, Any], first: Completion | None) -> tuple[Any, ...]:
    """``(call id, fingerprint, message, tool_finished)`` of each reused call (the loop's ``recorded``)."""
    from agentnb.tools.dedupe import fingerprint

    out = []
    for c in first.tool_calls if first is not None else ():
        tool = tools.get(c.name)
        if c.id in kept and tool is not None and isinstance(c.arguments, dict):
            args = {**tool.defaults, **c.arguments} if tool.defaults else c.arguments
            out.append((c.id, fingerprint(c.name, args), *kept[c.id]))
    return tuple(out)


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
