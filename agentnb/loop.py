"""The core: ask the model, run the tools it asks for, append the results, ask again.

One async generator, :func:`run_loop`, yields typed events and renders nothing. It is written
as a loop over recursion depths (depth ``d`` is the ``d``-th model call of the run) rather than
as literal recursion, so long runs cannot hit Python's recursion limit.

Limit semantics (one name, one default): ``max_tool_calls`` counts every tool call the model
asks for that the loop *handles* -- executed, or answered with an error because the tool was
unknown, the arguments were invalid, or the call was a repeat. At most that many are handled;
once the count reaches the limit the model is asked once more with no tools and must answer in
text. Calls beyond the budget in the same turn are answered "not executed".
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from time import perf_counter
from typing import Any, Literal

from agentnb.approval import bad_edit_message, denied_message
from agentnb.budget import Gauge, capped, hold, holds_tokens, out_of_tokens
from agentnb.cost import priced
from agentnb.dedupe import Deduplicator, fingerprint, repeat_message
from agentnb.endings import OpenStep, no_answer_text, out_of_requests
from agentnb.errors import ModelBehaviorError, StopRun
from agentnb.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttachmentAdded,
    DedupAction,
    DedupDecision,
    DirectOutput,
    Event,
    FinalAnswer,
    LimitReached,
    ModelRequest,
    ModelResponse,
    RequestRetried,
    StepDecision,
    SubAgentEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallRequested,
    ToolStarted,
    UnknownTool,
    ValidationResult,
)
from agentnb.history import MessageView
from agentnb.limits import Ledger
from agentnb.live import may_retry, one, with_notes
from agentnb.loop_nested import nested_calls
from agentnb.loop_types import ATTACHMENT_NOTE, LoopConfig, RunState, StepController, ToolDecision
from agentnb.messages import AssistantMessage, Image, Message, ToolCall, ToolMessage, UserMessage
from agentnb.providers.base import Completion, Request, TextChunk
from agentnb.toolexec import Execution, execute, execute_all, finished_event, result_limit
from agentnb.toolrun import (
    SYNC_TOOLS_IN_THREAD,
    clip,
    invalid_message,
    unknown_message,
)

__all__ = [
    "ATTACHMENT_NOTE",
    "EventCallback",
    "LoopConfig",
    "RunState",
    "StepController",
    "ToolDecision",
    "run_loop",
]

#: What the model reads when it calls a tool where none is offered (after the limit).
ANSWER_NOW = (
    "You cannot call tools any more in this run. Answer my request now in plain text, using the tool results above."
)


async def run_loop(cfg: LoopConfig, state: RunState) -> AsyncIterator[Event]:
    """Drive one run to its end, yielding every event; results accumulate in ``state``."""
    tools = cfg.tools
    all_tools = tuple(tools.values())
    names = tuple(tools)
    dedup = Deduplicator()
    depth = 0
    choice = cfg.tool_choice
    asked_again = False  # a call where none is offered gets one more chance to answer in text
    threaded = SYNC_TOOLS_IN_THREAD.get()
    limit_chars = cfg.max_result_chars
    gate = cfg.approval
    ledger = Ledger(cfg.limits, cfg.max_tool_calls, cfg.above)
    live = may_retry(cfg.provider)
    gauge = Gauge(cfg.provider) if holds_tokens(ledger) else None
    while True:
        if cfg.refresh is not None and (fresh := cfg.refresh()) is not None:
            tools, all_tools, names = fresh, tuple(fresh.values()), tuple(fresh)
        if ledger.budgets:  # this run's limits, and those of the runs that called it
            if state.limit is None and (hit := ledger.reached()) is not None:
                state.limit, value, amount = hit
                yield LimitReached(depth, cfg.max_tool_calls, state.tool_calls, limit=hit[0], value=value, used=amount)
            if ledger.spent():  # no request left: the run ends with the text it has
                state.stop_reason = "limit"
                state.limit = state.limit or "requests"
                state.output, who = out_of_requests(state.output, state.messages, ledger.requests)
                yield FinalAnswer(depth, state.output, by=who)
                return
        limited = ledger.calls_left() <= 0 or state.limit is not None
        offer = bool(tools) and not limited and choice != "none"
        request = Request(
            MessageView(state.messages),
            all_tools if offer else (),
            choice if offer else "none",
            cfg.settings,
            None,
            cfg.output,
        )
        if gauge is not None:  # a token budget: hold it before sending (agentnb.budget)
            held = hold(ledger, need := gauge.estimate(request))
            if held.verdict == "last" and offer:  # a second request would not fit: answer now
                state.limit, limited, offer = state.limit or held.limit, True, False
                yield LimitReached(
                    depth,
                    cfg.max_tool_calls,
                    state.tool_calls,
                    limit=held.limit or "",
                    value=held.value,
                    used=held.used,
                )
                request = dataclasses.replace(request, tools=(), tool_choice="none")
                held = hold(ledger, need := gauge.estimate(request))
            if held.verdict == "refuse":  # it would not fit: never sent
                if state.limit is None:
                    state.limit = held.limit
                    yield LimitReached(
                        depth,
                        cfg.max_tool_calls,
                        state.tool_calls,
                        limit=held.limit or "",
                        value=held.value,
                        used=held.used,
                    )
                state.stop_reason = "limit"
                state.output, who = out_of_tokens(state.output, state.messages, held, need)
                yield FinalAnswer(depth, state.output, by=who)
                return
            request = dataclasses.replace(request, settings=capped(request.settings, cfg.provider, held.reply_cap))
        ledger.add_request()  # now, before any wait: a parallel run sees it at once
        yield ModelRequest(depth, len(request.messages), names if offer else (), request.tool_choice)
        if cfg.controller is not None:
            try:
                await cfg.controller.before_model(depth, request)
            except StopRun:  # announced above, never sent: say so, so no view counts it
                yield StepDecision(depth, "model", "stop")
                raise
        start = perf_counter()
        if cfg.stream or live:  # live: retries come out as they wait (agentnb.live)
            completion = None
            source = cfg.provider.stream(request) if cfg.stream else one(cfg.provider.complete, request)
            async with aclosing(with_notes(source) if live else source) as chunks:  # type: ignore[type-var]
                async for item in chunks:
                    if isinstance(item, Completion):
                        completion = item
                    elif isinstance(item, TextChunk):
                        yield TextDelta(depth, item.text)
                    elif isinstance(item, RequestRetried):
                        yield dataclasses.replace(item, depth=depth)
                    else:
                        yield ToolCallDelta(depth, item.index, item.name, item.arguments)
            if completion is None:
                raise ModelBehaviorError(f"{cfg.provider!r} ended its stream without a completion")
        else:
            completion = await cfg.provider.complete(request)
        used = completion.usage
        if gauge is not None:
            gauge.learn(used)
        if used.input_tokens or used.output_tokens:
            used = priced(cfg.provider, used)
            state.usage += used
            ledger.add_usage(used)
        calls = completion.tool_calls
        state.step = OpenStep(depth, completion)
        for note in completion.events:  # the provider's own decisions, at this depth
            yield dataclasses.replace(note, depth=depth)
        yield ModelResponse(
            depth,
            completion.text,
            calls,
            used,
            perf_counter() - start,
            finish_reason=completion.finish_reason,
            model=completion.model,
        )
        # A named or required choice forces the first call only (as the OpenAI Agents SDK
        # resets it): forcing every turn would loop until the limit.
        choice = "auto" if choice != "none" else choice

        if not calls or not offer:
            pending: list[Message] = [AssistantMessage(completion.text, calls, reasoning=completion.reasoning)]
            pending += [ToolMessage(c.id, c.name, "Not executed: no tools are available now.", True) for c in calls]
            state.messages.extend(pending)
            state.step = None
            state.output = completion.text or ""
            if calls and not asked_again:
                # A call where none is offered: ask once more, plainly, for a text answer.
                asked_again = True
                state.messages.append(UserMessage(ANSWER_NOW))
                depth += 1
                continue
            state.output = completion.text or ""
            by: Literal["model", "agentnb"] = "model"
            if calls and not state.output.strip():  # it would only call: say so, in agentnb's words
                if state.limit is not None and state.limit != "tool_calls":
                    why = f"the {state.limit} limit"
                elif limited:
                    why = f"the tool-call limit ({cfg.max_tool_calls})"
                else:
                    why = f"tool_choice={cfg.tool_choice!r}"
                state.output = no_answer_text(state.messages, [c.name for c in calls], why)
                by = "agentnb"
            # "limit" only when the limit changed something: with max_tool_calls=0 a plain
            # answer is an answer.
            state.stop_reason = (
                "limit" if limited and (state.tool_calls or calls or asked_again or state.limit) else "answer"
            )
            if state.stop_reason == "limit" and state.limit is None:
                state.limit = "tool_calls"
            if cfg.output is not None and by == "model":  # structured output: validate, maybe repair
                from agentnb.output import output_step  # only runs with an output_type

                verdict, check, repair = output_step(
                    cfg.output, state.output, depth, cfg.max_output_retries - state.output_retries
                )
                yield verdict
                if repair is not None:
                    state.output_retries += 1
                    state.messages.append(repair)
                    depth += 1
                    continue
                state.value = check.value
                if not check.ok:
                    state.stop_reason = "invalid_output"
            yield FinalAnswer(depth, state.output, by=by)
            return

        # Decide what to do with each call, in order; only executions need work afterwards.
        budget = ledger.calls_left()
        plans: list[ToolMessage | Execution | int] = []  # int: a repeat of plans[int] in this turn
        state.step.plans, state.step.budget = plans, budget
        in_turn: dict[str, int] = {}
        for i, call in enumerate(calls):
            yield ToolCallRequested(depth, call.id, call.name, call.arguments)
            if i >= budget or ledger.calls_left() <= 0:  # (a parallel run may have used what was left)
                state.step.budget = budget = min(budget, i)
                plans.append(ToolMessage(call.id, call.name, "Not executed: the tool-call limit was reached.", True))
                continue
            state.tool_calls += 1
            ledger.add_tool_call()
            tool = tools.get(call.name)
            if tool is None:
                yield UnknownTool(depth, call.id, call.name, names)
                plans.append(ToolMessage(call.id, call.name, unknown_message(call, names), True))
                continue
            arguments = call.arguments
            if cfg.controller is not None:
                decision = await cfg.controller.before_tool(depth, call)
                if decision.action == "skip":
                    yield StepDecision(depth, "tool", "skip", call.id)
                    plans.append(ToolMessage(call.id, call.name, "The user skipped this call; it was not run.", True))
                    continue
                if decision.arguments is not None and decision.arguments != arguments:
                    arguments = decision.arguments
                    yield StepDecision(depth, "tool", "edit", call.id, arguments)
            errors = (
                (call.parse_error or "arguments are not valid JSON",) if arguments is None else tool.validate(arguments)
            )
            yield ValidationResult(depth, call.id, call.name, tuple(errors))
            if errors or arguments is None:
                plans.append(ToolMessage(call.id, call.name, invalid_message(tool, errors), True))
                continue
            fp = fingerprint(call.name, {**tool.defaults, **arguments} if tool.defaults else arguments)
            earlier = dedup.lookup(fp)
            seen = earlier is not None or fp in in_turn
            action: DedupAction = "execute" if not seen else ("allow_repeat" if tool.allow_repeat else "skip")
            yield DedupDecision(depth, call.id, call.name, fp, seen, action)
            if action != "skip":
                if gate is not None and gate.needs(tool):  # no decision, no execution
                    yield ApprovalRequested(depth, call.id, call.name, arguments, gate.by)
                    answer = await gate.decide(ToolCall(call.id, call.name, arguments), tool)
                    if answer.action == "deny":
                        reason = str(answer.reason)
                        yield ApprovalDecided(depth, call.id, call.name, "deny", gate.by, reason)
                        plans.append(ToolMessage(call.id, call.name, denied_message(reason), True))
                        continue
                    if answer.action == "edit":
                        arguments = answer.arguments
                        yield ApprovalDecided(depth, call.id, call.name, "edit", gate.by, None, arguments)
                        errors = tool.validate(arguments) if isinstance(arguments, dict) else ["not a JSON object"]
                        yield ValidationResult(depth, call.id, call.name, tuple(errors))
                        if errors:  # the approver's edit, not the model's call, is invalid
                            plans.append(
                                ToolMessage(call.id, call.name, bad_edit_message(call.name, gate.by, errors), True)
                            )
                            continue
                        fp = fingerprint(call.name, {**tool.defaults, **arguments} if tool.defaults else arguments)
                    else:
                        yield ApprovalDecided(depth, call.id, call.name, "approve", gate.by)
                in_turn.setdefault(fp, len(plans))
                plans.append(Execution(len(plans), call, tool, arguments, fp))
            elif earlier is not None:
                plans.append(ToolMessage(call.id, call.name, repeat_message(call.name, earlier)))
            else:
                plans.append(in_turn[fp])

        execs = [p for p in plans if isinstance(p, Execution)]
        for p in execs:
            yield ToolStarted(depth, p.call.id, p.call.name, p.arguments, source=p.tool.source)
        if any(getattr(p.tool, "nested", False) for p in execs):
            # Agents as tools: their runs' events come out live, and count toward this run.
            said = (*state.messages, AssistantMessage(completion.text, calls, reasoning=completion.reasoning))
            nested = nested_calls(execs, depth, cfg.controller, ledger, execute, cfg.tool_timeout, said)
            async with aclosing(nested) as items:  # type: ignore[type-var]
                async for item in items:
                    if isinstance(item, SubAgentEvent):
                        inner = item.event
                        if inner.kind == "run_finished":  # deeper runs are in their parent's total
                            state.usage += inner.usage  # (the limits saw it live: the ledger)
                            state.tool_calls += inner.tool_calls
                        yield item
                    else:
                        yield finished_event(depth, item)
        elif len(execs) == 1:
            await execute(execs[0], depth, cfg.tool_timeout, threaded=threaded)
            yield finished_event(depth, execs[0])
        elif execs:
            async with aclosing(execute_all(execs, depth, cfg.tool_timeout)) as finished:  # type: ignore[type-var]
                async for p in finished:
                    yield finished_event(depth, p)

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
                    dedup.record(plan.fp, text)
                ctx = plan.ctx
                if ctx is not None:
                    for image in ctx.images:
                        yield AttachmentAdded(depth, plan.call.id, plan.call.name, image)
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
            yield DirectOutput(depth, direct[0].call.id, direct[0].call.name, state.output)
            yield FinalAnswer(depth, state.output)
            return
        if ledger.calls_left() <= 0:
            yield LimitReached(depth, cfg.max_tool_calls, state.tool_calls)
        depth += 1


EventCallback = Callable[[Event], Any]
