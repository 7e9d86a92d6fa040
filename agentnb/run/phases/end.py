"""The end phase: a reply with no call to run is the run's answer, or the reason to ask again."""

from __future__ import annotations

from typing import Literal

from agentnb.events import FinalAnswer
from agentnb.messages import AssistantMessage, Message, ToolMessage, UserMessage
from agentnb.run.endings import no_answer_text
from agentnb.run.state import LoopState

#: What the model reads when it calls a tool where none is offered (after the limit).
ANSWER_NOW = (
    "You cannot call tools any more in this run. Answer my request now in plain text, using the tool results above."
)


def end(run: LoopState) -> None:
    """Decide whether the reply ends the run (its text, validated if typed) or the model is asked again."""
    cfg, state, completion = run.cfg, run.state, run.completion
    assert completion is not None  # the ask phase took a reply
    calls = completion.tool_calls
    pending: list[Message] = [AssistantMessage(completion.text, calls, reasoning=completion.reasoning)]
    pending += [ToolMessage(c.id, c.name, "Not executed: no tools are available now.", True) for c in calls]
    state.messages.extend(pending)
    state.step = None
    state.output = completion.text or ""
    if calls and not run.asked_again:
        # A call where none is offered: ask once more, plainly, for a text answer.
        run.asked_again = True
        state.messages.append(UserMessage(ANSWER_NOW))
        run.depth += 1
        return
    if not calls and cfg.inbox is not None and cfg.inbox.waiting(run.depth + 1):
        run.depth += 1  # a message came while the model answered: it reads it and answers again
        return
    by: Literal["model", "agentnb"] = "model"
    if calls and not state.output.strip():  # it would only call: say so, in agentnb's words
        state.output = no_answer_text(state.messages, [c.name for c in calls], why_no_tools(run))
        by = "agentnb"
    # "limit" only when the limit changed something: with max_tool_calls=0 a plain
    # answer is an answer.
    state.stop_reason = (
        "limit" if run.limited and (state.tool_calls or calls or run.asked_again or state.limit) else "answer"
    )
    if state.stop_reason == "limit" and state.limit is None:
        state.limit = "tool_calls"
    if state.stop_reason == "limit" and by == "model" and state.limit != "tool_calls":
        state.without_tools = state.limit  # a budget, not the tool-call limit, kept its tools back: said
    if cfg.output is not None and by == "model":  # structured output: validate, maybe repair
        from agentnb.output import output_step  # only runs with an output_type

        verdict, check, repair = output_step(
            cfg.output, state.output, run.depth, cfg.max_output_retries - state.output_retries
        )
        run.emit(verdict)
        if repair is not None:
            state.output_retries += 1
            state.messages.append(repair)
            run.depth += 1
            return
        state.value = check.value
        if not check.ok:
            state.stop_reason = "invalid_output"
    run.emit(FinalAnswer(run.depth, state.output, by=by))
    run.over = True


def why_no_tools(run: LoopState) -> str:
    """Why no tool was offered, in the words of agentnb's own answer."""
    limit = run.state.limit
    if limit is not None and limit != "tool_calls":
        return f"the {limit} limit"
    if run.limited:
        return f"the tool-call limit ({run.cfg.max_tool_calls})"
    return f"tool_choice={run.cfg.tool_choice!r}"
