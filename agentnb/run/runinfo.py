"""What a run says about itself: its first event, its result, the text a Stop interrupted.

Helpers of :class:`agentnb.run.agent.Agent`; each is computed once per run, never per event.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from agentnb.control.approval import ApprovalGate
from agentnb.control.limits import check_limits
from agentnb.events import Event, RunFinished, RunStarted
from agentnb.messages import Message, SystemMessage, UserMessage, coerce_messages
from agentnb.providers import Provider
from agentnb.providers.base import model_name
from agentnb.run.result import RunResult
from agentnb.run.state import ATTACHMENT_NOTE, LoopConfig, RunState
from agentnb.timetravel.active import CURRENT as CURRENT_CASSETTE
from agentnb.tools.running import AUTO_RESULT_CHARS, DEFAULT_MAX_RESULT_CHARS
from agentnb.tracing.observe import RunLink, vendor_of


def watchers_of(instrument: Any) -> tuple[Any, ...]:
    if instrument is None or instrument is False:
        return ()
    if hasattr(instrument, "start"):
        return (instrument,)
    if isinstance(instrument, (list, tuple)):
        return tuple(w for i in instrument for w in watchers_of(i))
    from agentnb.tracing.otel import SpanWatcher  # OpenTelemetry loads only when asked for

    return (SpanWatcher(None if instrument is True else instrument),)


def discard(event: Event) -> None:
    pass


def partial_output(events: list[Event]) -> str:
    """The text of the model step a Stop or an error interrupted (streamed or received)."""
    pieces: list[str] = []
    for event in reversed(events):
        kind = event.kind
        if kind == "text_delta":
            pieces.append(event.text)  # type: ignore[union-attr,arg-type]
        elif kind == "model_response":
            return event.text or "".join(reversed(pieces))  # type: ignore[union-attr]
        elif kind in ("model_request", "final_answer"):
            break
    return "".join(reversed(pieces))


def run_started(
    agent: Any,
    messages: list[Message],
    history: RunResult | Sequence[Message] | None,
    max_calls: int,
    link: RunLink | None = None,
) -> RunStarted:
    """The first event: what is asked, of which model, in which turn of a conversation."""
    p = agent.provider
    backend, model, vendor = describe_provider(p)
    earlier = len(list(history.messages if isinstance(history, RunResult) else history)) if history is not None else 0
    system = prompt = None
    turn = 1
    for i, m in enumerate(messages):  # one pass: the system prompt, earlier user turns, the new prompt
        if isinstance(m, UserMessage):
            if i < earlier:
                turn += m.content != ATTACHMENT_NOTE
            else:
                prompt = m.content
        elif system is None and isinstance(m, SystemMessage):
            system = m.content
    conversation = link.conversation_id if link is not None else None
    if link is not None and link.turn is not None:
        turn = link.turn
    return RunStarted(
        0,
        p.name,
        tuple(agent.tools),
        max_calls,
        len(messages),
        prompt,
        system,
        backend,
        turn,
        agent_name=agent.name,
        conversation_id=conversation,
        model=model,
        vendor=vendor,
        run_id=os.urandom(6).hex(),
    )


#: provider -> (its class, what RunStarted says of it): computed once per provider, not per run.
_DESCRIBED: weakref.WeakKeyDictionary[Any, tuple[Any, tuple[str, str | None, str]]] = weakref.WeakKeyDictionary()


def describe_provider(p: Any) -> tuple[str, str | None, str]:
    """``(backend, model, vendor)`` of a provider for :class:`RunStarted`."""
    try:
        hit = _DESCRIBED.get(p)
    except TypeError:  # not weakly referenceable (or unhashable): computed each time
        hit = None
    inner = getattr(p, "inner", None)
    key = (type(p), model_name(p), type(inner), model_name(inner))  # (never loads a model)
    if hit is not None and hit[0] == key:
        return hit[1]
    backend = type(p).__name__ + (f" over {type(inner).__name__}" if isinstance(inner, Provider) else "")
    model = key[1] or key[3]
    described = (backend, model if isinstance(model, str) else None, vendor_of(p))
    try:
        _DESCRIBED[p] = (key, described)
    except TypeError:
        pass
    return described


def result_of(
    state: RunState, end: RunFinished, error: BaseException | None, output: Any, agent: Any = None
) -> RunResult:
    """The :class:`RunResult` of a run that ended with ``end``."""
    reason = end.stop_reason
    return RunResult(
        state.output,
        tuple(state.messages),
        tuple(state.events),
        state.usage,
        reason,
        state.tool_calls,
        end.duration,
        end.error,
        error,
        partial_output=partial_output(state.events) if reason in ("cancelled", "error") else "",
        value=state.value,
        output_spec=output,
        agent=agent,
    )


def loop_config(
    agent: Any,
    stream: bool | None,
    controller: Any,
    output_type: Any,
    approver: Any,
    limits: Any,
    sink: Any,
    link: RunLink | None,
    refresh: Callable[[], Any] | None,
) -> LoopConfig:
    """What one run of ``agent`` loops with: the agent's settings and this run's overrides."""
    run_limits = check_limits(limits) if limits is not None else agent.limits
    own = run_limits.tool_calls if run_limits is not None else None
    max_calls = own if own is not None else agent.max_tool_calls
    if link is not None and link.max_tool_calls is not None:  # an agent tool: what the caller has left
        max_calls = max(0, min(max_calls, link.max_tool_calls))
    provider = agent.provider
    relative = agent.max_result_chars == AUTO_RESULT_CHARS
    tape = getattr(agent, "cassette", None) or CURRENT_CASSETTE.get()
    if tape is not None:  # every model call goes through the cassette (agentnb.timetravel)
        from agentnb.timetravel.cassette import with_cassette

        provider = with_cassette(provider, tape)
    return LoopConfig(
        provider,
        agent.tools,
        max_calls,
        agent.tool_choice,
        stream is not False,
        agent.tool_timeout,
        agent.settings,
        controller,
        max_result_chars=DEFAULT_MAX_RESULT_CHARS if relative else agent.max_result_chars,
        output=output_spec_of(output_type) if output_type is not None else agent.output_spec,
        max_output_retries=agent.max_output_retries,
        approval=approval_gate(agent, approver, sink),
        limits=run_limits if run_limits is not None and run_limits.budgets else None,
        refresh=refresh,
        above=link.ledger if link is not None else None,
        seen=link.seen if link is not None else (),
        first_depth=link.first_depth if link is not None else 0,
        recorded=link.recorded if link is not None else (),
        compaction=link.context if link is not None and link.context is not None else agent.context,
        compacted=link.compacted if link is not None else None,
        context_window=getattr(agent, "_window", None),
        relative_results=relative,
    )


def approval_gate(agent: Any, approver: Any, sink: Any) -> ApprovalGate | None:
    """Which calls of this run need approval and who decides (None: no call does)."""
    names = agent.requires_approval
    if not names and not any(t.requires_approval for t in agent.tools.values()):
        return None
    if approver is None:
        approver = agent.approver
    if approver is None and hasattr(sink, "decide_approval"):
        approver = sink  # the trace widget the run is shown in
    return ApprovalGate(names, approver)


def output_spec_of(output_type: Any) -> Any:
    """The structured-output spec of ``output_type``."""
    # agentnb.output (pydantic adapters, schemas) loads only for runs that ask for a value.
    from agentnb.output import output_spec

    return output_spec(output_type)


def start_messages(prompt: Any, history: RunResult | Sequence[Message] | None, system: str | None) -> list[Message]:
    """The conversation a run starts from: ``history`` (or ``system`` as the system prompt), then
    ``prompt`` (:meth:`Agent.messages_for <agentnb.Agent.messages_for>`).

    >>> [m.role for m in start_messages("hi", None, "Be brief.")]
    ['system', 'user']
    >>> [m.content for m in start_messages("again", [{"role": "user", "content": "hi"}], "Be brief.")]
    ['hi', 'again']
    """
    new = coerce_messages(prompt if isinstance(prompt, (str, dict, list, tuple)) else [prompt])
    if isinstance(history, (str, bytes)):  # list("...") would be one message per character
        raise TypeError(
            "history= takes a RunResult or a list of messages, not a string: "
            "pass [{'role': 'user', 'content': ...}, {'role': 'assistant', 'content': ...}]"
        )
    if history is not None:
        given: Any = [history] if isinstance(history, dict) else history
        old = list(given.messages) if isinstance(given, RunResult) else coerce_messages(list(given))
        return old + new
    if system and not (new and isinstance(new[0], SystemMessage)):
        return [SystemMessage(system), *new]
    return new
