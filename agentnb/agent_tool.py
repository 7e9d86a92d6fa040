"""An agent as a tool of another agent (:meth:`agentnb.Agent.as_tool`).

The tool takes one argument, ``prompt``, runs the inner agent on it and returns its answer.
It is flagged ``nested``: the loop gives it a context whose ``emit`` passes each inner event
on, live, into the calling run's stream (wrapped in :class:`~agentnb.events.SubAgentEvent`,
see :mod:`agentnb.loop_nested`), with the calling run's step controller and the tool calls
it has left. A Stop inside the inner run (its debugger, a cancellation) stops the outer too.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> helper = Agent(ScriptedProvider(["42"]), name="helper")
>>> t = helper.as_tool(description="Answers questions.")
>>> t.name, t.description, list(t.parameters["properties"])
('helper', 'Answers questions.', ['prompt'])
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from agentnb.errors import StopRun, UserError
from agentnb.observe import RunLink
from agentnb.tools import Tool, ToolContext

if TYPE_CHECKING:
    from agentnb.result import RunResult


class Agent(Protocol):
    """What this module needs of an :class:`agentnb.Agent` (typed here, so that the agent
    module, which imports this one for ``as_tool``, is not imported back)."""

    name: str | None

    @property
    def arun(self) -> Callable[..., Awaitable[RunResult]]: ...


_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class AgentTool(Tool):
    """A :class:`~agentnb.tools.Tool` that runs an agent; the loop passes its events on."""

    nested = True

    def __init__(self, agent: Agent, name: str, description: str) -> None:
        schema = {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "What to ask the agent, in full."}},
            "required": ["prompt"],
            "additionalProperties": False,
        }

        async def run_agent(prompt: str, ctx: ToolContext) -> str:
            return await _run_inner(agent, prompt, ctx)

        super().__init__(name, description, schema, run_agent, context_param="ctx")
        self.agent = agent


async def _run_inner(agent: Agent, prompt: str, ctx: ToolContext) -> str:
    emit = ctx.emit  # None when called outside a loop (tool(...) by hand): then nothing is passed on
    ledger = ctx.ledger  # the calling run's: its limits hold in the inner run, shared with parallel calls
    link = RunLink(max_tool_calls=ledger.calls_left() if ledger else None, nested=emit is not None, ledger=ledger)
    try:
        result = await agent.arun(prompt, on_event=emit, controller=ctx.controller, _link=link)
    except asyncio.CancelledError as exc:  # the outer run is cancelled: say how the inner one ended
        inner = getattr(exc, "run_result", None)
        if emit is not None and inner is not None:
            emit(inner.events[-1])
        raise
    if result.stop_reason == "cancelled":
        raise StopRun(f"the {agent.name or 'inner'} agent's run was stopped")
    if result.stop_reason == "error":
        raise RuntimeError(result.error or "the inner agent's run failed")
    return result.output


def agent_tool(agent: Agent, name: str | None, description: str | None) -> AgentTool:
    """Build the tool for :meth:`agentnb.Agent.as_tool` (checks the name)."""
    name = name or agent.name
    if not name:
        raise UserError("as_tool needs a name: Agent(..., name='researcher').as_tool() or as_tool(name='researcher')")
    if not _NAME.match(name):
        raise UserError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
    text = description or f"Ask the {name} agent; it answers in text."
    return AgentTool(agent, name, text)
