"""The compact phase, part of :func:`~agentnb.run.phases.ask`: the request made to fit the window.

Before each request of a run with a context policy (:class:`agentnb.Compaction`), the request
is what the model reads: the compacted messages that stand for the start of the history, then
the history after them. When that passes ``at`` of the window, the policy's steps are taken
(:mod:`agentnb.context.compaction`) and said as a :class:`~agentnb.events.ContextCompacted`
event, which holds what was sent from then on; the run's messages keep the whole history.

A server's overflow error (:mod:`agentnb.context.overflow`) compacts once and sends again; the
window it states replaces the one known before, for the rest of the run. Without a policy, or
when the request cannot fit, the run ends with :class:`~agentnb.errors.ContextOverflow`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from agentnb.context.compaction import as_sent, shrink, with_summary
from agentnb.context.overflow import Overflow, overflow_error
from agentnb.context.summary import ask_summary, summary_request
from agentnb.errors import ContextOverflow
from agentnb.events import ContextCompacted
from agentnb.messages import Message, Usage
from agentnb.providers.base import Request
from agentnb.run.budget import capped

#: What can never be left out, named in the error when it alone does not fit.
_HEAD = "the system prompt, the first user message, the tools and the newest step"


def _count(run: Any, request: Request, messages: Sequence[Message] | None = None) -> int:
    """The size of ``request`` (with ``messages`` in place of its own) in tokens, as the run's
    context gauge measures it (:mod:`agentnb.context.gauge`: exact where the model counts, else
    estimated and corrected by the usage replies reported), scaled by what an overflow error said."""
    sent = request if messages is None else dataclasses.replace(request, messages=tuple(messages))
    return math.ceil(run.context.measure(sent).tokens * run.fitting.scale)


def _window(run: Any) -> int | None:
    fitting = run.fitting
    if not fitting.asked:  # the gauge's: the user's, else the provider's (found at the first request)
        fitting.asked = True
        fitting.window = run.context.window
    return fitting.window  # type: ignore[no-any-return]


async def fit(run: Any, request: Request) -> Request:
    """``request`` as the model reads it, compacted first where it passes the policy's ``at``."""
    fitting = run.fitting
    if fitting.base is not None:
        request = dataclasses.replace(request, messages=fitting.sent(run.state.messages))
    policy = fitting.policy
    if policy is None:
        return request
    window = _window(run)
    if window is None:  # unknown: only a server's overflow error can tell it
        return request
    tokens = _count(run, request)
    if tokens <= policy.at * window:
        return request
    return await compact(run, request, window, tokens, f"at={policy.at:g}")


async def compact(run: Any, request: Request, window: int, tokens: int, reason: str) -> Request:
    """The policy's steps on ``request`` (see :mod:`agentnb.context.compaction`), said as an event."""
    fitting, policy, state = run.fitting, run.fitting.policy, run.state
    goal = int(policy.to * window)
    cut = shrink(request.messages, lambda ms: _count(run, request, ms), goal, policy)
    summary: str | None = None
    asked: tuple[dict[str, Any], ...] = ()
    used: Usage | None = None
    note = ""
    if "drop" in cut.steps and policy.summarize:
        provider = _summarizer(run)
        ask = summary_request(policy.prompt, cut.dropped, capped({}, provider, policy.summary_tokens), goal * 3)
        summary, spent, note = await ask_summary(provider, ask, policy.timeout)
        asked, used = tuple(m.to_dict() for m in ask.messages), spent
        if spent.input_tokens or spent.output_tokens:
            state.usage += spent
            run.ledger.add_usage(spent)
        if summary is not None:
            cut = with_summary(cut, summary, lambda ms: _count(run, request, ms), goal, policy.keep)
    if cut.tokens > window:
        why = f"{_HEAD} alone take {cut.tokens:,} tokens" if cut.steps else "nothing could be left out"
        raise ContextOverflow(cut.tokens, window, why)
    fitting.base, fitting.upto = cut.messages, len(state.messages)
    run.emit(
        ContextCompacted(
            run.depth,
            cut.steps,
            tokens,
            cut.tokens,
            window,
            reason,
            fitting.upto,
            as_sent(cut.messages, state.messages),
            tuple(cut.cleared),
            len(cut.dropped),
            summary,
            asked,
            used,
            note,
        )
    )
    return dataclasses.replace(request, messages=tuple(cut.messages))


async def refit(run: Any, request: Request, over: Overflow, error: BaseException) -> Request:
    """After a server's overflow error: the window it states kept, the request compacted once;
    else :class:`~agentnb.errors.ContextOverflow`."""
    fitting = run.fitting
    if fitting is None or fitting.policy is None:
        raise overflow_error(over, None, "no context policy (Agent(..., context=agentnb.Compaction()))", error)
    if over.window is not None:  # the server's word, for the rest of the run (the gauge's too)
        fitting.window, fitting.asked = over.window, True
        run.context.window = over.window
    window = _window(run)
    if window is None:
        raise overflow_error(over, None, "the window is unknown and the server did not state it", error)
    tokens = _count(run, request)
    said = over.tokens if over.tokens is not None else max(tokens, window + 1)  # it did not fit
    if tokens > 0 and said != tokens:  # the server counts more (or fewer) than estimated
        fitting.scale *= said / tokens
    return await compact(run, request, window, said, f"overflow: {over.text}")


def _summarizer(run: Any) -> Any:
    """Who summarises: the policy's summariser, else the run's provider; a replay answers for both."""
    provider = run.cfg.provider
    own = run.fitting.policy.summarizer
    if own is None or getattr(provider, "answers_summaries", False):
        return provider
    tape = getattr(provider, "tape", None)
    if tape is not None:  # the run's cassette records (and answers) the summariser's calls too
        from agentnb.timetravel.cassette import with_cassette

        return with_cassette(own, tape)
    return own
