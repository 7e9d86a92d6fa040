"""A stop in the middle of a step keeps what the step did.

``StopRun`` from an ``on_event`` callback, a Stop button or Ctrl-C can arrive after the model
answered and tools ran. :func:`settle_stopped_step` keeps the model's turn with each call that
finished and its result; a call that never ran, or was cut off while running, is left out of
the transcript and the count, so no half-run call reads as done and the conversation stays
valid to continue.

>>> from agentnb import Agent, StopRun, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> def stop_after_the_tool(event):
...     if event.kind == "tool_finished":
...         raise StopRun
>>> result = Agent(ScriptedProvider([call("add", a=1, b=2), "3"]), [add]).run("go", on_event=stop_after_the_tool)
>>> result.stop_reason, [m.role for m in result.messages], result.messages[-1].content, result.tool_calls
('cancelled', ['user', 'assistant', 'tool'], '3', 1)
"""

from __future__ import annotations

from typing import Any

from agentnb.events import Event
from agentnb.messages import AssistantMessage, Image, Message, ToolCall, ToolMessage, UserMessage
from agentnb.run.state import ATTACHMENT_NOTE, RunState
from agentnb.tools.dedupe import repeat_message
from agentnb.tools.execution import Execution, finished_event, result_limit
from agentnb.tools.running import clip


def settle_stopped_step(state: RunState, max_result_chars: int | None) -> list[Event]:
    """Commit the step a stop interrupted, as far as it went; returns events still to report.

    Kept: the model's turn with the calls that were handled to the end, each with its tool
    message (a result, or the loop's answer: unknown tool, invalid arguments, skipped, a
    repeat). A call that never ran or was cut off while running is dropped from the turn (not
    in the transcript, not counted), as the trace says. ``state.tool_calls`` then counts the
    handled calls. A parallel call that finished but whose ``ToolFinished`` was not reported
    yet is returned, to be recorded.
    """
    step = state.step
    state.step = None
    if step is None:
        state.tool_calls = state.kept_tool_calls
        return []
    completion = step.completion
    kept: list[tuple[ToolCall, ToolMessage]] = []
    late: list[Event] = []
    images: list[Image] = []
    handled = 0
    for k, call in enumerate(completion.tool_calls):
        plan = step.plans[k] if k < len(step.plans) else None
        if isinstance(plan, int):  # a repeat within the turn: answered from the first call
            first = step.plans[plan]
            if isinstance(first, Execution) and first.done:
                text = clip(first.result, result_limit(first.tool, max_result_chars))
                kept.append((call, ToolMessage(call.id, call.name, repeat_message(call.name, text))))
                handled += 1
        elif isinstance(plan, ToolMessage):  # answered without running (unknown, invalid, ...)
            kept.append((call, plan))
            handled += k < step.budget
        elif isinstance(plan, Execution) and plan.done:
            text = clip(plan.result, result_limit(plan.tool, max_result_chars))
            kept.append((call, ToolMessage(call.id, call.name, text, plan.error is not None)))
            handled += 1
            if not plan.reported:
                late.append(finished_event(step.depth, plan))
            if plan.ctx is not None:
                images += plan.ctx.images
    if kept or completion.text:
        calls = tuple(c for c, _ in kept)
        messages: list[Message] = [AssistantMessage(completion.text, calls, reasoning=completion.reasoning)]
        messages += [m for _, m in kept]
        if images:
            messages.append(UserMessage(ATTACHMENT_NOTE, tuple(images)))
        state.messages.extend(messages)
    state.tool_calls = state.kept_tool_calls + handled
    state.kept_tool_calls = state.tool_calls
    return late


def settle(state: RunState, max_result_chars: int | None, watch: Any) -> list[Event]:
    """Keep what an interrupted step did (:func:`settle_stopped_step`); the events that still
    had to be reported are recorded, shown to ``watch`` (when given) and returned."""
    late = settle_stopped_step(state, max_result_chars)
    state.events.extend(late)
    if watch is not None:
        for event in late:
            watch(event)
    return late
