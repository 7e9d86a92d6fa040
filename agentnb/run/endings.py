"""The ending of a run whose model will not answer in text: a text written by agentnb.

After the tool-call limit (or under ``tool_choice="none"``) the model is asked once more
without tools. A model (or a server) that still answers with nothing but calls would leave
``output == ""``. :func:`no_answer_text` writes the output instead: what happened and the tool
results so far, marked as written by agentnb (the ``FinalAnswer`` event says ``by="agentnb"``).

>>> from agentnb.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage
>>> history = [UserMessage("go"), AssistantMessage(None, (ToolCall("c1", "add", {"a": 1, "b": 2}),)),
...            ToolMessage("c1", "add", "3")]
>>> print(no_answer_text(history, ("add",), "the tool-call limit (1)"))
[agentnb] The model gave no answer in text: after the tool-call limit (1) it asked for add again instead of answering, and that call was not run. This text was written by agentnb, not by the model.
Tool results so far:
- add(a=1, b=2) -> 3
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentnb.messages import AssistantMessage, Message, ToolMessage

if TYPE_CHECKING:
    from agentnb.providers.base import Completion

#: How a ``FinalAnswer`` that agentnb wrote begins, so readers of the bare text know too.
AGENTNB_MARK = "[agentnb]"
_MAX_RESULTS = 20
_MAX_RESULT_CHARS = 300


@dataclass(slots=True)
class OpenStep:
    """A step whose messages are not committed yet: the model's turn and the plan per call.

    A stop mid-step settles it (:func:`agentnb.run.stopped.settle_stopped_step`).
    """

    depth: int
    completion: Completion
    plans: list[Any] = field(default_factory=list)
    budget: int = 0


def no_answer_text(messages: Sequence[Message], asked: Sequence[str], why: str) -> str:
    """The output of a run whose model would only call tools: what happened, with the results.

    ``asked``: the tools it asked for at the end (not run); ``why``: why tools were not
    offered (``"the tool-call limit (10)"``, ``"tool_choice='none'"``).
    """
    names = ", ".join(dict.fromkeys(n or "?" for n in asked)) or "a tool"
    them = "that call was" if len(asked) == 1 else "those calls were"
    return _with_results(
        f"{AGENTNB_MARK} The model gave no answer in text: after {why} it asked for {names} again instead of "
        f"answering, and {them} not run. This text was written by agentnb, not by the model.",
        messages,
    )


def limit_text(
    messages: Sequence[Message], limit: str, used: str, then: str = "no request was left to ask it for one"
) -> str:
    """The output of a run a budget ended with no request left to ask for a text answer.

    >>> from agentnb.messages import AssistantMessage, ToolCall, ToolMessage
    >>> history = [AssistantMessage(None, (ToolCall("c1", "add", {"a": 1}),)), ToolMessage("c1", "add", "1")]
    >>> print(limit_text(history, "requests", "2 of 2"))
    [agentnb] The run reached its requests limit (2 of 2) before the model answered in text, and no request was left to ask it for one. This text was written by agentnb, not by the model.
    Tool results so far:
    - add(a=1) -> 1
    """
    return _with_results(
        f"{AGENTNB_MARK} The run reached its {limit} limit ({used}) before the model answered in text, and {then}. "
        "This text was written by agentnb, not by the model.",
        messages,
    )


def out_of_requests(output: str, messages: Sequence[Message], requests: int) -> tuple[str, Any]:
    """``(output, by)`` of a run that has no request left: its text, or :func:`limit_text`."""
    if output.strip():
        return output, "model"
    return limit_text(messages, "requests", f"{requests} of {requests}"), "agentnb"


def _with_results(first: str, messages: Sequence[Message]) -> str:
    lines = [first]
    results = _results(messages)
    if results:
        lines.append("Tool results so far:")
        if len(results) > _MAX_RESULTS:
            lines.append(f"(the last {_MAX_RESULTS} of {len(results)})")
        lines += [f"- {r}" for r in results[-_MAX_RESULTS:]]
    else:
        lines.append("No tool produced a result.")
    return "\n".join(lines)


def _results(messages: Sequence[Message]) -> list[str]:
    calls: dict[str, Any] = {}
    out: list[str] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            calls.update((c.id, c) for c in m.tool_calls)
        elif isinstance(m, ToolMessage) and not m.content.startswith(("Not executed:", "Not finished:")):
            c = calls.get(m.tool_call_id)
            args = c.arguments if c is not None and isinstance(c.arguments, dict) else {}
            shown = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items())
            text = " ".join(m.content.split())
            text = text if len(text) <= _MAX_RESULT_CHARS else text[: _MAX_RESULT_CHARS - 1] + "…"
            out.append(f"{m.name}({shown}) -> {'(error) ' if m.is_error else ''}{text}")
    return out
