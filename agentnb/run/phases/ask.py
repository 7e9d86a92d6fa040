"""The ask phase: is a request left in the budgets, what the model is offered, and its reply."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from time import perf_counter
from typing import Any

from agentnb.context.gauge import ContextGauge
from agentnb.context.overflow import overflow_error, overflow_of
from agentnb.control.cost import priced
from agentnb.errors import ModelBehaviorError, ProviderError, StopRun
from agentnb.events import (
    FinalAnswer,
    LimitReached,
    ModelLoading,
    ModelRequest,
    ModelResponse,
    RequestRetried,
    StepDecision,
    TextDelta,
    ToolCallDelta,
    UserInterjected,
)
from agentnb.messages import UserMessage
from agentnb.providers.base import Completion, Request, TextChunk
from agentnb.providers.live import noting, one, with_notes
from agentnb.run.budget import capped, hold, out_of_tokens
from agentnb.run.endings import OpenStep, out_of_requests
from agentnb.run.history import MessageView
from agentnb.run.phases.compact import fit, refit
from agentnb.run.state import LoopState, said_so_far


async def ask(run: LoopState) -> None:
    """Decide whether a request is left and what the model is offered; send it; take the reply."""
    cfg, state = run.cfg, run.state
    if cfg.refresh is not None and (fresh := cfg.refresh()) is not None:
        run.tools, run.all_tools, run.names = fresh, tuple(fresh.values()), tuple(fresh)
    if run.ledger.budgets:  # this run's limits, and those of the runs that called it
        budgets(run)
        if run.over:
            return
    if cfg.inbox is not None:  # a person's messages go in now: the last step is complete
        interject(run)
    run.limited = run.ledger.calls_left() <= 0 or state.limit is not None
    run.offer = offer = bool(run.tools) and not run.limited and run.choice != "none"
    emit = run.emit
    request = Request(
        MessageView(state.messages),
        run.all_tools if offer else (),
        run.choice if offer else "none",
        cfg.settings,
        None,
        cfg.output,
    )
    context = run.context = run.context or await open_context(run)  # the window: found at the first request
    if run.fitting is not None:  # a context policy, or a compacted start (agentnb.run.phases.compact)
        request = await fit(run, request)
    if run.gauge is not None:  # a token budget: held before the request is sent
        request = hold_tokens(run, request)
        if run.over:
            return
        offer = run.offer
    size = context.measure(request)
    run.ledger.add_request()  # now, before any wait: a parallel run sees it at once
    names = run.names if offer else ()
    emit(  # n_messages: the history's (a compacted request sends fewer: agentnb.run.phases.compact)
        ModelRequest(run.depth, len(state.messages), names, request.tool_choice, size.tokens, size.window, size.exact)
    )
    await said_so_far(run)
    if cfg.controller is not None:
        try:
            await cfg.controller.before_model(run.depth, request)
        except StopRun:  # announced above, never sent: say so, so no view counts it
            emit(StepDecision(run.depth, "model", "stop"))
            raise
    start = perf_counter()
    refused: ProviderError | None = None
    try:  # live: retries come out as they wait (agentnb.providers.live), at once or relayed from a stream
        if cfg.stream or (run.live and not run.at_once):
            completion = await receive(run, request)
        else:
            sent = cfg.provider.complete(request)
            completion = run.completion = await (noting(sent, retried(run)) if run.live else sent)
    except ProviderError as exc:
        refused = exc
    if refused is not None:  # out of the except: a ContextOverflow chains no HTTP error
        completion = await overflowed(run, request, refused)
    used = completion.usage
    context.learn(used)
    if run.gauge is not None:
        run.gauge.learn(used)
    if used.input_tokens or used.output_tokens:
        used = priced(cfg.provider, used)
        state.usage += used
        run.ledger.add_usage(used)
    state.step = OpenStep(run.depth, completion)
    for note in completion.events:  # the provider's own decisions, at this depth
        emit(dataclasses.replace(note, depth=run.depth))
    emit(
        ModelResponse(
            run.depth,
            completion.text,
            completion.tool_calls,
            used,
            perf_counter() - start,
            finish_reason=completion.finish_reason,
            model=completion.model,
        )
    )
    # A named or required choice forces the first call only (as the OpenAI Agents SDK
    # resets it): forcing every turn would loop until the limit.
    run.choice = "auto" if run.choice != "none" else run.choice


async def overflowed(run: LoopState, request: Request, error: ProviderError) -> Completion:
    """After a provider error: a server's overflow compacts the request once and sends it again
    (:mod:`agentnb.run.phases.compact`); else, or when it is refused again, the run ends (with a
    ContextOverflow for an overflow)."""
    over = overflow_of(error)
    if over is None:
        raise error
    request = await refit(run, request, over, error)
    try:
        return await send_once(run, request)
    except ProviderError as exc:
        again = overflow_of(exc)
        if again is None:
            raise
        window = run.fitting.window if run.fitting is not None else None
        failed = overflow_error(again, window, "compacted once and sent again, it still did not fit", exc)
    raise failed from None


async def send_once(run: LoopState, request: Request) -> Completion:
    """The model's reply to ``request``."""
    cfg = run.cfg
    if cfg.stream or (run.live and not run.at_once):
        return await receive(run, request)
    sent = cfg.provider.complete(request)
    completion = run.completion = await (noting(sent, retried(run)) if run.live else sent)
    return completion


def interject(run: LoopState) -> None:
    """Add what was sent to the run's inbox as user messages, each said by an event."""
    assert run.cfg.inbox is not None
    for text in run.cfg.inbox.take(run.depth):
        run.state.messages.append(UserMessage(text))
        run.emit(UserInterjected(run.depth, text))


async def open_context(run: LoopState) -> ContextGauge:
    """The run's context gauge: the window the user gave, else the provider's (asked once per
    provider; unknown is None). A relative ``max_result_chars`` becomes a share of it."""
    cfg = run.cfg
    window = cfg.context_window
    if window is None:
        try:
            window = (await cfg.provider.context_window()).tokens
        except Exception:  # the window never fails a run: unknown
            window = None
    gauge = ContextGauge(cfg.provider, window)
    if cfg.relative_results and (chars := gauge.result_chars()) is not None:
        cfg.max_result_chars = chars
    return gauge


def hold_tokens(run: LoopState, request: Request) -> Request:
    """The request as it may be sent within every token budget (agentnb.run.budget): with tools
    while a tool step and the answer after it fit, its reply bounded so the answer's part is kept;
    else without tools, its reply bounded to what is left; one that would not fit is never sent
    (the run ends with agentnb's text)."""
    cfg, state, gauge = run.cfg, run.state, run.gauge
    assert gauge is not None
    answer = gauge.answer(request)  # the same request without tools: what asks for the answer now
    need = gauge.estimate(request)
    held = hold(run.ledger, need, answer if run.offer else None, gauge.reply, gauge.grow)
    if held.verdict == "last" and run.offer:  # no room for a tool step and the answer after it
        state.limit, run.limited, run.offer = state.limit or held.limit, True, False
        run.emit(held_back(run, held))
        request = dataclasses.replace(request, tools=(), tool_choice="none")
        held = hold(run.ledger, need := gauge.estimate(request))
    if held.verdict == "refuse":  # it would not fit: never sent
        if state.limit is None:
            state.limit = held.limit
            run.emit(held_back(run, held))
        state.stop_reason = "limit"
        state.output, who = out_of_tokens(state.output, state.messages, held, need)
        run.emit(FinalAnswer(run.depth, state.output, by=who))
        run.over = True
        return request
    return dataclasses.replace(request, settings=capped(request.settings, cfg.provider, held.reply_cap))


def held_back(run: LoopState, held: Any) -> LimitReached:
    """The token budget that holds a request back (its last tools, or the request itself)."""
    limit, used = held.limit or "", held.used
    return LimitReached(
        run.depth, run.cfg.max_tool_calls, run.state.tool_calls, limit=limit, value=held.value, used=used
    )


def budgets(run: LoopState) -> None:
    """Decide whether a budget was reached (said once) and whether a request is left (else end)."""
    cfg, state, ledger = run.cfg, run.state, run.ledger
    if state.limit is None and (hit := ledger.reached()) is not None:
        state.limit, value, amount = hit
        run.emit(LimitReached(run.depth, cfg.max_tool_calls, state.tool_calls, limit=hit[0], value=value, used=amount))
    if ledger.spent():  # no request left: the run ends with the text it has
        state.stop_reason = "limit"
        state.limit = state.limit or "requests"
        state.output, who = out_of_requests(state.output, state.messages, ledger.requests)
        run.emit(FinalAnswer(run.depth, state.output, by=who))
        run.over = True


def retried(run: LoopState) -> Callable[[RequestRetried], None]:
    """What emits a provider's retry notes, at this depth, while the request waits."""
    emit, depth = run.emit, run.depth
    return lambda note: emit(dataclasses.replace(note, depth=depth))


async def receive(run: LoopState, request: Request) -> Completion:
    """Take a streamed (or live) reply: its pieces as events as they come, and the completion."""
    cfg = run.cfg
    run.completion = None
    source = cfg.provider.stream(request) if cfg.stream else one(cfg.provider.complete, request)
    if run.live and not run.at_once:  # a stream's consumer: the notes come out of a stream of their own
        source = with_notes(source)
    relayed = relay_reply(run, source)
    await (noting(relayed, retried(run)) if run.live and run.at_once else relayed)  # by call: notes at once
    if run.completion is None:
        raise ModelBehaviorError(f"{cfg.provider!r} ended its stream without a completion")
    return run.completion


async def relay_reply(run: LoopState, source: AsyncIterator[Any]) -> None:
    """Each piece of a reply as an event as it comes; the completion into ``run``."""
    depth, emit = run.depth, run.emit
    async with aclosing(source) as chunks:  # type: ignore[type-var]
        async for item in chunks:
            if isinstance(item, Completion):
                run.completion = item
                continue
            if isinstance(item, TextChunk):
                emit(TextDelta(depth, item.text))
            elif isinstance(item, (RequestRetried, ModelLoading)):
                emit(dataclasses.replace(item, depth=depth))
            else:
                emit(ToolCallDelta(depth, item.index, item.name, item.arguments))
            await said_so_far(run)  # each piece reaches a stream's consumer as it comes
