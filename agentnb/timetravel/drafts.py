"""A fork's edit as text: what an editor shows prefilled for a step, and the edit read back.

The widget's "Fork from here" and ``%agent --fork N`` use these; they hold no widget.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def weather(city: str) -> str:
...     '''The weather in a city.'''
...     return "sunny"
>>> r = Agent(ScriptedProvider([call("weather", city="Paris"), "Sunny."]), tools=[weather]).run("Paris?")
>>> [label for label, _ in step_choices(r)]
['[0] calls weather', '[1] says: Sunny.']
>>> prefill(r, 0, "tool_result"), prefill(r, 0, "arguments")
('sunny', '{\\n  "city": "Paris"\\n}')
>>> edit_from_text(r, 0, "arguments", '{"city": "Oslo"}')
{'arguments': {'city': 'Oslo'}}
"""

from __future__ import annotations

import json
from typing import Any

from agentnb.errors import UserError
from agentnb.timetravel.diff import steps_of
from agentnb.timetravel.recording import recorded_steps

#: What an edit can change, as the editor names them.
KINDS = {"tool_result": "tool result", "arguments": "arguments", "reply": "reply", "system": "system prompt"}


def step_choices(result: Any) -> list[tuple[str, int]]:
    """``(label, step)`` for each step of the run, as the widget numbers them."""
    out = []
    for s in steps_of(result):
        if s.calls:
            what = "calls " + ", ".join(name for name, _ in s.calls)
        else:
            text = (s.reply or "").replace("\n", " ")
            what = "says: " + (text if len(text) <= 40 else text[:39] + "…")
        out.append((f"[{s.depth}] {what}", s.depth))
    return out


def _step(result: Any, at: int) -> Any:
    for s in steps_of(result):
        if s.depth == at:
            return s
    raise UserError(f"fork step {at!r} is out of range: this run has steps 0 to {len(steps_of(result)) - 1}")


def prefill(result: Any, at: int, kind: str) -> str:
    """The editor's text for an edit of ``kind`` at step ``at``: what the recording holds there."""
    s = _step(result, at)
    if kind == "system":
        return s.system or ""
    if kind == "reply":
        if s.calls:
            return json.dumps([{"name": n, "arguments": a} for n, a in s.calls], indent=2, ensure_ascii=False)
        return s.reply or ""
    if kind == "arguments":
        args = _by_call(result, at, "arguments")
        if len(args) == 1:
            return json.dumps(next(iter(args.values())), indent=2, ensure_ascii=False)
        return json.dumps(args, indent=2, ensure_ascii=False)
    if kind == "tool_result":
        results = _by_call(result, at, "result")
        if len(results) == 1:
            return str(next(iter(results.values())))
        return json.dumps(results, indent=2, ensure_ascii=False)
    raise UserError(f"an edit is one of {', '.join(KINDS)}, not {kind!r}")


def edit_from_text(result: Any, at: int, kind: str, text: str) -> dict[str, Any]:
    """The keyword arguments of :meth:`~agentnb.RunResult.fork` for the editor's ``text``."""
    _step(result, at)
    if kind == "system":
        return {"system": text}
    if kind == "reply":
        if text.lstrip().startswith("["):
            return {"reply": _json(text, "a reply with calls is a JSON list of {name, arguments}")}
        return {"reply": text}
    if kind == "arguments":
        value = _json(text, "the arguments are a JSON object")
        if not isinstance(value, dict):
            raise UserError("the arguments are a JSON object, not " + type(value).__name__)
        args = _by_call(result, at, "arguments")
        return {"arguments": _one_changed(value, args, "arguments") if len(args) > 1 else value}
    if kind == "tool_result":
        results = _by_call(result, at, "result")
        if len(results) > 1:
            value = _json(text, "with several calls at this step, the results are a JSON object {call: text}")
            return {"tool_result": _one_changed(value, results, "result")}
        return {"tool_result": text}
    raise UserError(f"an edit is one of {', '.join(KINDS)}, not {kind!r}")


def recorded_steps_text(at: int, kind: str) -> str:
    """Which steps of a fork at ``at`` with an edit of ``kind`` are the recording's, in words.

    >>> recorded_steps_text(0, "reply"), recorded_steps_text(2, "tool_result")
    ('it is the first step: no step is taken from the recording', "steps [0] to [2] are the recording's, step [2]'s result edited (folded)")
    """
    n = at + 1 if kind == "tool_result" else at
    if n == 0:
        return "it is the first step: no step is taken from the recording"
    took = "step [0] is" if n == 1 else f"steps [0] to [{n - 1}] are"
    edited = f", step [{at}]'s result edited" if kind == "tool_result" else ""
    return f"{took} the recording's{edited} (folded)"


def _by_call(result: Any, at: int, what: str) -> dict[str, Any]:
    """``{call: its arguments or its recorded result}`` for each call of step ``at``, keyed by the
    call's name, or by its id where two calls share a name (as ``fork`` reads them)."""
    from agentnb.messages import ToolMessage

    step = next(s for s in recorded_steps(result) if s.depth == at)
    calls = step.completion.tool_calls if step.completion is not None else ()
    names = [c.name for c in calls]
    said = {m.tool_call_id: m.content for m in result.messages[step.n_messages :] if isinstance(m, ToolMessage)}
    out: dict[str, Any] = {}
    for c in calls:
        if what == "result" and c.id not in said:
            continue  # it never ran: no result to edit
        key = c.name if names.count(c.name) == 1 else c.id
        out[key] = c.arguments if what == "arguments" else said[c.id]
    return out


def _one_changed(value: Any, recorded: dict[str, Any], what: str) -> dict[str, Any]:
    """The one entry of the editor's ``{call: ...}`` that differs from the recording."""
    if not isinstance(value, dict):
        raise UserError(f"with several calls at this step, the {what}s are a JSON object {{call: ...}}")
    unknown = [k for k in value if k not in recorded]
    if unknown:
        raise UserError(f"no call {unknown[0]!r} at this step (its calls: {', '.join(recorded)})")
    picked = {k: v for k, v in value.items() if v != recorded[k]}
    if len(picked) != 1:
        raise UserError(f"change the {what} of one call at a time ({len(picked)} changed)")
    return picked


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UserError(f"{what}: {exc}") from None
