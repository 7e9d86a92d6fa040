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
        if len(s.calls) == 1:
            return json.dumps(s.calls[0][1], indent=2, ensure_ascii=False)
        return json.dumps({n: a for n, a in s.calls}, indent=2, ensure_ascii=False)
    if kind == "tool_result":
        if len(s.results) == 1:
            return s.results[0][1]
        return json.dumps({n: r for n, r, _ in s.results}, indent=2, ensure_ascii=False)
    raise UserError(f"an edit is one of {', '.join(KINDS)}, not {kind!r}")


def edit_from_text(result: Any, at: int, kind: str, text: str) -> dict[str, Any]:
    """The keyword arguments of :meth:`~agentnb.RunResult.fork` for the editor's ``text``."""
    s = _step(result, at)
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
        return {"arguments": value}
    if kind == "tool_result":
        if len(s.results) > 1:
            value = _json(text, "with several calls at this step, the results are a JSON object {call: text}")
            picked = {k: v for k, v in value.items() if v != dict((n, r) for n, r, _ in s.results).get(k)}
            if len(picked) != 1:
                raise UserError("change the result of one call at a time")
            return {"tool_result": picked}
        return {"tool_result": text}
    raise UserError(f"an edit is one of {', '.join(KINDS)}, not {kind!r}")


def _json(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UserError(f"{what}: {exc}") from None
