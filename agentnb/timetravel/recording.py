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


def recorded_steps(result: Any) -> list[Step]:
    """The model steps of a :class:`~agentnb.RunResult` (its own, not its sub-agents')."""
    steps: list[Step] = []
    open_: dict[str, Any] | None = None
    for event in result.events:
        kind = event.kind
        if kind == "model_request":
            if open_ is not None:
                steps.append(_close(open_, None, result))
            open_ = {"req": event, "chunks": [], "notes": []}
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
    return steps


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
    return Step(req.depth, req.n_messages, tuple(req.tools), req.tool_choice, completion, tuple(open_["chunks"]))
