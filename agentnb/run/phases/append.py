"""The append phase: the step's messages are committed; a direct output ends the run."""

from __future__ import annotations

from agentnb.events import AttachmentAdded, DirectOutput, FinalAnswer, LimitReached
from agentnb.messages import AssistantMessage, Image, Message, ToolMessage, UserMessage
from agentnb.run.state import ATTACHMENT_NOTE, LoopState
from agentnb.tools.dedupe import repeat_message
from agentnb.tools.execution import Execution, result_limit
from agentnb.tools.running import clip


def append(run: LoopState) -> None:
    """Decide what the model reads next (results clipped, images attached) and whether a result is the answer."""
    state, depth, limit_chars, plans = run.state, run.depth, run.cfg.max_result_chars, run.plans
    completion = run.completion
    assert completion is not None
    calls = completion.tool_calls
    messages: list[Message] = [AssistantMessage(completion.text, calls, reasoning=completion.reasoning)]
    images: list[Image] = []
    direct: list[Execution] = []
    for k, plan in enumerate(plans):
        if isinstance(plan, int):  # a repeat within the turn answers from the first call
            first = plans[plan]
            assert isinstance(first, Execution)
            call = calls[k]
            text = clip(first.result, result_limit(first.tool, limit_chars))
            messages.append(ToolMessage(call.id, call.name, repeat_message(call.name, text)))
        elif isinstance(plan, ToolMessage):
            messages.append(plan)
        else:
            ok = plan.error is None
            text = clip(plan.result, result_limit(plan.tool, limit_chars))  # the model's copy; events keep all
            messages.append(ToolMessage(plan.call.id, plan.call.name, text, not ok))
            if ok:
                run.dedup.record(plan.fp, text)
            ctx = plan.ctx
            if ctx is not None:
                for image in ctx.images:
                    run.emit(AttachmentAdded(depth, plan.call.id, plan.call.name, image))
                images += ctx.images
                if ok and (plan.tool.direct_output or ctx.direct):
                    direct.append(plan)
    if images:
        messages.append(UserMessage(ATTACHMENT_NOTE, tuple(images)))
    state.messages.extend(messages)  # the step is complete: commit it
    state.kept_tool_calls = state.tool_calls
    state.step = None
    if direct:
        state.output = "\n\n".join(p.result for p in direct)
        state.stop_reason = "direct_output"
        run.emit(DirectOutput(depth, direct[0].call.id, direct[0].call.name, state.output))
        run.emit(FinalAnswer(depth, state.output))
        run.over = True
    elif run.ledger.calls_left() <= 0:
        run.emit(LimitReached(depth, run.cfg.max_tool_calls, state.tool_calls))
