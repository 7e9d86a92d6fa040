"""A fork's edit read and checked: the step, the reply, one call's arguments or result.

Every bad argument of :meth:`~agentnb.RunResult.fork` is a :class:`~agentnb.errors.UserError`
saying what is wrong and how to put it right, raised before anything is sent or run. At a step
with several calls, an edit names its call by name, or by id where two calls share a name.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def calc(expr: str) -> str:
...     '''Evaluate an expression.'''
...     return expr
>>> r = Agent(ScriptedProvider([[call("calc", expr="1+1"), call("calc", expr="2+2")], "2, 4"]),
...           tools=[calc]).run("1+1 and 2+2?")
>>> r.fork(0, tool_result={"calc": "5"})
Traceback (most recent call last):
...
agentnb.errors.UserError: fork at step 0: 2 calls to 'calc' (ids call_1, call_2); name one by its id: {'call_1': ...}
>>> r.fork("0", reply="x")
Traceback (most recent call last):
...
agentnb.errors.UserError: fork step '0' is a str: a step is an int, as the trace numbers them ([0] to [1])
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import ToolCall, ToolMessage
from agentnb.providers.base import Completion
from agentnb.timetravel.recording import Step

#: The keyword arguments of ``RunResult.fork``.
EDITS = ("agent", "reply", "arguments", "tool_result", "system", "on_event", "stream")


def check_names(edits: dict[str, Any]) -> None:
    """Refuse a keyword ``fork`` does not take (a typo would otherwise fork with no edit)."""
    unknown = [k for k in edits if k not in EDITS]
    if unknown:
        raise UserError(f"fork takes no {', '.join(map(repr, unknown))}: its edits are {', '.join(EDITS)}")


def check_kinds(agent: Any, system: Any, on_event: Any, stream: Any) -> None:
    """``agent=`` is an agent, ``system=`` a text, ``on_event=`` a callable, ``stream=`` a bool."""
    if agent is not None and not callable(getattr(agent, "arun", None)):
        raise UserError(f"fork agent= takes an agentnb Agent, not {type(agent).__name__}")
    if system is not None and not isinstance(system, str):
        raise UserError(f"fork system= takes the new system prompt as text, not {type(system).__name__}")
    if on_event is not None and not callable(on_event):
        raise UserError(f"fork on_event= takes a callable that sees each event, not {type(on_event).__name__}")
    if stream is not None and not isinstance(stream, bool):
        raise UserError(f"fork stream= takes True, False or None, not {type(stream).__name__}")


def pick_step(steps: list[Step], at: Any) -> Step:
    """The recorded step ``at``, or a UserError saying which steps there are."""
    depths = [s.depth for s in steps]
    span = f"[{depths[0]}] to [{depths[-1]}]" if depths else "none: this run made no model step"
    if isinstance(at, bool) or not isinstance(at, int):
        raise UserError(
            f"fork step {at!r} is a {type(at).__name__}: a step is an int, as the trace numbers them ({span})"
        )
    if at not in depths:
        raise UserError(f"fork step {at} is out of range: this run has steps {span.replace('[', '').replace(']', '')}")
    return steps[depths.index(at)]


def reply_completion(reply: Any, agent: Any, at: int) -> Completion:
    """The model's reply at ``at`` as the edit gives it: a text, or calls checked as the debugger checks them."""
    if isinstance(reply, str):
        return Completion(reply, finish_reason="stop")
    how = "a text, or a list of calls (ToolCall or {'name': ..., 'arguments': {...}})"
    if isinstance(reply, (ToolCall, dict)):
        items: list[Any] = [reply]
    elif isinstance(reply, (list, tuple)) and reply:
        items = list(reply)
    else:
        what = "an empty list" if isinstance(reply, (list, tuple)) else type(reply).__name__
        raise UserError(f"fork reply= takes {how}, not {what}")
    calls = []
    for i, item in enumerate(items):
        if isinstance(item, ToolCall):
            c = item
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            c = ToolCall(str(item.get("id") or ""), item["name"], item.get("arguments") or {})
        else:
            raise UserError(f"fork reply item {i}: a call is a ToolCall or {{'name': ..., 'arguments': {{...}}}}")
        check_call(agent, c.name, c.arguments, at)
        calls.append(ToolCall(c.id or f"fork_{at}_{i}", c.name, c.arguments))
    return Completion(None, tuple(calls), finish_reason="tool_calls")


def check_call(agent: Any, name: str, args: Any, at: int) -> None:
    """Validated like the debugger's edits: the tool exists and the arguments fit its schema."""
    tool = agent.tools.get(name)
    if tool is None:
        raise UserError(f"fork at step {at}: no tool named {name!r} (tools: {', '.join(agent.tools) or 'none'})")
    if not isinstance(args, dict):
        raise UserError(
            f"fork at step {at}: the arguments of {name} are a dict (a JSON object), not {type(args).__name__}"
        )
    errors = tool.validate(args)
    if errors:
        raise UserError(f"fork at step {at}: the arguments of {name} fail its schema: {'; '.join(errors)}")


def calls_of(step: Step) -> tuple[ToolCall, ...]:
    return step.completion.tool_calls if step.completion is not None else ()


def pick_call(step: Step, which: Any, at: int, what: str) -> tuple[int, ToolCall]:
    """The call an edit names (``which``: its name or id; None where the step made one call)."""
    calls = calls_of(step)
    if not calls:
        raise UserError(f"fork at step {at}: the model called no tool at that step, so it has no {what} to edit")
    if which is None:
        if len(calls) > 1:
            names = ", ".join(f"{c.name} ({c.id})" for c in calls)
            raise UserError(f"fork at step {at}: {len(calls)} calls ({names}); say which: {{name or id: ...}}")
        return 0, calls[0]
    for i, c in enumerate(calls):
        if which == c.id:
            return i, c
    named = [(i, c) for i, c in enumerate(calls) if which == c.name]
    if len(named) > 1:
        ids = ", ".join(c.id for _, c in named)
        raise UserError(
            f"fork at step {at}: {len(named)} calls to {which!r} (ids {ids}); name one by its id: {{{named[0][1].id!r}: ...}}"
        )
    if named:
        return named[0]
    names = ", ".join(f"{c.name} ({c.id})" for c in calls)
    raise UserError(f"fork at step {at}: no call to {which!r} at that step (its calls: {names})")


def keyed(value: Any, step: Step, leaf: type, params: Any = ()) -> tuple[Any, Any]:
    """``(which call, value)`` of an edit: ``{call name or id: value}`` picks a call, else None.

    A one-key dict is read as the arguments themselves when its key is one of ``params`` (the
    only call's parameters) and names no call.
    """
    if isinstance(value, dict) and len(value) == 1:
        ((k, v),) = value.items()
        names_call = any(k in (c.id, c.name) for c in calls_of(step))
        if k not in params and (names_call or isinstance(v, leaf)):
            return k, v
        if names_call and isinstance(v, leaf):
            return k, v
    return None, value


def edited_arguments(step: Step, arguments: Any, agent: Any, at: int) -> tuple[Completion, ToolCall]:
    """Step ``at``'s recorded reply with one call's arguments replaced, and that call as edited."""
    calls = calls_of(step)
    only = agent.tools.get(calls[0].name) if len(calls) == 1 else None
    params = (only.parameters.get("properties") or {}) if only is not None else ()
    which, args = keyed(arguments, step, dict, params)
    i, call = pick_call(step, which, at, "arguments")
    check_call(agent, call.name, args, at)
    assert step.completion is not None
    edited = list(calls)
    edited[i] = ToolCall(call.id, call.name, dict(args))
    done = dataclasses.replace(
        step.completion, tool_calls=tuple(edited), events=(), usage=type(step.completion.usage)()
    )
    return done, edited[i]


def edited_result(value: Any, step: Step, at: int) -> tuple[ToolCall, str]:
    """The call whose result an edit replaces, and the new text."""
    which, text = keyed(value, step, str)
    _, call = pick_call(step, which, at, "tool result")
    if not isinstance(text, str):
        raise UserError(f"fork at step {at}: the result of {call.name} is text, not {type(text).__name__}")
    return call, text


def recorded_results(result: Any, step: Step, end: int, skip: str) -> dict[str, tuple[ToolMessage, Any]]:
    """``{call id: (its message, its tool_finished event)}`` for each call of ``step`` that ran in
    the recording, but the one with id ``skip``: what a fork that edits that one reuses."""
    messages = {m.tool_call_id: m for m in result.messages[step.n_messages : end] if isinstance(m, ToolMessage)}
    finished = {
        e.call_id: e
        for e in result.events
        if e.kind == "tool_finished" and e.depth == step.depth  # type: ignore[attr-defined]
    }
    return {
        c.id: (messages[c.id], finished[c.id])
        for c in calls_of(step)
        if c.id != skip and c.id in messages and c.id in finished
    }
