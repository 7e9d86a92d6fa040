"""How many model calls a run made, from its events: those sent, and a fork's that were not.

A fork (:class:`~agentnb.events.Forked`) sends no request for its recorded steps, nor for the
step whose reply (or one call's arguments) its edit gave. The trace's header, the text summary
and :attr:`agentnb.RunResult.model_calls` count alike from these events.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> r = Agent(ScriptedProvider(["Paris."])).run("Capital of France?")
>>> model_calls(r.events), model_calls(r.fork(0, reply="Lyon.").events)
(ModelCalls(sent=1, recorded=0, edited=0), ModelCalls(sent=0, recorded=0, edited=1))
>>> str(model_calls(r.fork(0, reply="Lyon.").events))
'0 model calls (+1 edited)'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ModelCalls:
    """Model calls ``sent``; a fork's taken from its parent's recording (``recorded``) or from
    its edit (``edited``: the fork step's reply), never sent. Agents run as tools count too."""

    sent: int
    recorded: int = 0
    edited: int = 0

    def __str__(self) -> str:
        return f"{self.sent} model call{'' if self.sent == 1 else 's'}{self.unsent_text()}"

    def unsent_text(self) -> str:
        """`` (+1 recorded, +1 edited)``; empty when every call was sent."""
        parts = [f"+{n} {what}" for n, what in ((self.recorded, "recorded"), (self.edited, "edited")) if n]
        return f" ({', '.join(parts)})" if parts else ""


def model_calls(events: Iterable[Any], held: int = 0) -> ModelCalls:
    """Count the model calls of ``events`` (``held``: asked for, held back by a debugger, not sent).

    A request the debugger stopped before it was sent (a ``step_decision`` stop) is not counted.
    """
    lineage: Any = None
    sent = recorded = edited = 0
    for e in events:
        inner = e
        while inner.kind == "sub_agent":  # an agent run as a tool: its model calls count
            inner = inner.event
        if e.kind == "forked":
            lineage = e
        if inner.kind == "model_request":
            n = 1
        elif inner.kind == "step_decision" and inner.target == "model" and inner.action == "stop":
            n = -1  # announced, then stopped before it was sent
        else:
            continue
        if lineage is not None and e.depth < lineage.live_from:
            recorded += n
        elif lineage is not None and inner is e and lineage.edited_reply and e.depth == lineage.forked_at:
            edited += n
        else:
            sent += n
    return ModelCalls(sent - held, recorded, edited)
