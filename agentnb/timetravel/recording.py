"""A run's model steps as recorded in its transcript: what was asked, and what came back.

Each :class:`Step` is one depth of the run (the ``[0]``, ``[1]``, ... the widget shows): the
request as the transcript tells it (how many messages, which tools were offered, the tool
choice), the reply as a :class:`~agentnb.providers.Completion`, and the streamed pieces in
order when the run streamed.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> steps = recorded_steps(Agent(ScriptedProvider(["Hi."])).run("hello"))
>>> [(s.depth, s.n_messages, s.completion.text) for s in steps]
[(0, 1, 'Hi.')]
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from agentnb.messages import AssistantMessage, Usage
from agentnb.providers.base import Chunk, Completion, TextChunk, ToolCallChunk

#: Events between a request and its reply that are not the provider's own notes.
_NOT_NOTES = frozenset(
    {"text_delta", "tool_call_delta", "request_retried", "model_loading", "step_decision", "model_request"}
)


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded model step: the request's shape and the reply (None: it never came)."""

    depth: int
    n_messages: int
    tools: tuple[str, ...]
    tool_choice: str
    completion: Completion | None
    chunks: tuple[Chunk, ...] = ()
    #: The request's messages in canonical form where they are not the history's first
    #: ``n_messages`` (a compacted request, a summariser's request); None: they are.
    sent: tuple[Any, ...] | None = None
    #: The server's overflow error this request met (a replay raises it again), else None.
    refused: str | None = None


def recorded_steps(result: Any, requests: bool = False) -> list[Step]:
    """The model steps of a :class:`~agentnb.RunResult` (its own, not its sub-agents'), each
    compacted request with its messages (:class:`~agentnb.events.ContextCompacted`).

    ``requests``: every request the run sent, in order, as a replay answers them: a
    summariser's too (``n_messages`` 0), and one a server refused as too long (``refused``).
    """
    steps: list[Step] = []
    open_: dict[str, Any] | None = None
    base: Any = None  # the last compaction: what stands for the history's start
    for event in result.events:
        kind = event.kind
        if kind == "context_compacted":
            open_ = _compacted(event, open_, steps, result)
            base = event
        elif kind == "model_request":
            if open_ is not None:
                steps.append(_close(open_, None, result))
            open_ = {"req": event, "chunks": [], "notes": [], "base": base}
        elif open_ is None:
            continue
        elif kind == "text_delta":
            open_["chunks"].append(TextChunk(event.text))
        elif kind == "tool_call_delta":
            open_["chunks"].append(ToolCallChunk(event.index, None, event.name, event.arguments))
        elif kind == "model_response":
            steps.append(_close(open_, event, result))
            open_ = None
        elif kind == "step_decision" and event.action == "stop" and event.target == "model":
            open_ = None  # announced, never sent
        elif kind not in _NOT_NOTES:
            open_["notes"].append(event)
    if open_ is not None:
        steps.append(_close(open_, None, result))
    if not requests:
        return [s for s in steps if s.refused is None and not (s.sent is not None and s.n_messages == 0)]
    return steps


def _compacted(event: Any, open_: dict[str, Any] | None, steps: list[Step], result: Any) -> dict[str, Any] | None:
    """A compaction: its summariser's request as a step; after an overflow error, the refused
    request closed and the same step sent again, compacted."""
    if event.summary_request:
        said = Completion(event.summary or "", (), _free(event.usage))
        steps.append(Step(event.depth, 0, (), "none", said, (), tuple(_canonical(event.summary_request))))
    if open_ is None or not event.reason.startswith("overflow"):
        return open_
    refused = _close(open_, None, result)
    steps.append(dataclasses.replace(refused, refused=event.reason.removeprefix("overflow: ")))
    return {**open_, "chunks": [], "notes": [], "base": event}


def _canonical(messages: Any) -> list[Any]:
    from agentnb.messages import message_from_dict
    from agentnb.timetravel.canonical import canonical_message

    return [canonical_message(message_from_dict(m)) for m in messages]


def _free(usage: Any) -> Usage:
    return Usage(usage.input_tokens, usage.output_tokens, 0.0) if usage is not None else Usage()


def _sent(base: Any, n: int, result: Any) -> tuple[Any, ...] | None:
    """A compacted request's messages: the compaction's, then the history after them."""
    if base is None:
        return None
    from agentnb.context.compaction import sent_messages
    from agentnb.timetravel.canonical import canonical_messages

    held = sent_messages(base.messages, result.messages)
    return (*canonical_messages(held), *canonical_messages(result.messages[base.upto : n]))


def _close(open_: dict[str, Any], response: Any, result: Any) -> Step:
    req = open_["req"]
    completion = None
    if response is not None:
        said = result.messages[req.n_messages] if req.n_messages < len(result.messages) else None
        reasoning = said.reasoning if isinstance(said, AssistantMessage) else ()
        usage = response.usage
        completion = Completion(
            response.text,
            tuple(response.tool_calls),
            Usage(usage.input_tokens, usage.output_tokens, 0.0),  # a replay costs nothing
            response.finish_reason,
            tuple(open_["notes"]),
            reasoning,
            response.model,
        )
    sent = _sent(open_.get("base"), req.n_messages, result)
    return Step(req.depth, req.n_messages, tuple(req.tools), req.tool_choice, completion, tuple(open_["chunks"]), sent)
