"""An agent as a tool of another agent (:meth:`agentnb.Agent.as_tool`), and handoffs.

The tool takes one argument, ``prompt``, runs the inner agent on it and returns its answer.
It is flagged ``nested``: the loop gives it a context whose ``caller`` passes each inner
event on, live, into the calling run's stream (wrapped in
:class:`~agentnb.events.SubAgentEvent`, see :mod:`agentnb.run.nested`), with the calling
run's step controller and its ledger (the inner run spends the caller's budgets). A Stop
inside the inner run (its debugger, a cancellation) stops the outer too.

:func:`handoff` is the same machinery with the conversation instead of a prompt: the other
agent takes the conversation on and its answer ends the run.

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
from typing import TYPE_CHECKING, Any, Protocol

from agentnb.errors import StopRun, UserError
from agentnb.messages import AssistantMessage, Message, SystemMessage, ToolMessage
from agentnb.tools import Tool, ToolContext
from agentnb.tracing.observe import RunLink

if TYPE_CHECKING:
    from agentnb.run.result import RunResult


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


async def _run_inner(agent: Agent, prompt: Any, ctx: ToolContext) -> str:
    caller = ctx.caller  # None when called outside a loop (tool(...) by hand): then nothing is passed on
    emit = caller.emit if caller is not None else None
    ledger = caller.ledger if caller is not None else None  # the caller's limits hold in the inner run
    link = RunLink(max_tool_calls=ledger.calls_left() if ledger else None, nested=emit is not None, ledger=ledger)
    controller = caller.controller if caller is not None else None
    try:
        result = await agent.arun(prompt, on_event=emit, controller=controller, _link=link)
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


class Handoff(Tool):
    """A tool that hands the conversation over to another agent (see :func:`handoff`)."""

    nested = True

    def __init__(self, agent: Agent, name: str, description: str) -> None:
        async def hand_over(ctx: ToolContext) -> str:
            conversation = handed_over(ctx, agent.name or name)
            ctx.return_directly()  # the other agent's answer is this run's answer
            return await _run_inner(agent, conversation, ctx)

        schema = {"type": "object", "properties": {}, "additionalProperties": False}
        super().__init__(name, description, schema, hand_over, context_param="ctx")
        self.agent = agent


def handoff(agent: Agent, name: str | None = None, description: str | None = None) -> Handoff:
    """A tool that passes the conversation on to ``agent``, whose answer ends the run.

    Give it to the agent that hands over (``tools=[handoff(billing)]``); the model sees a tool
    ``transfer_to_<name>`` with no arguments. When the model calls it, ``agent`` runs on the
    conversation so far (its own system prompt instead of the caller's; the call answered
    "Transferred to ...") with its own tools, and its answer is the run's answer (the call is a
    direct output). Its run is nested in the calling run as an agent tool's is
    (:meth:`agentnb.Agent.as_tool`): events, widget, printer, transcript and spans show it under
    the ``transfer_to_...`` call, and it spends the caller's budgets. A handoff must be the only
    call of its turn; beside others it is refused with a message the model reads, and it can
    call it again alone. In a :class:`~agentnb.Session` the next turn starts again with the
    session's own agent, which may hand over again.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider, call
    >>> billing = Agent(ScriptedProvider(["Your refund is on its way."]), name="billing")
    >>> triage = Agent(ScriptedProvider([call("transfer_to_billing")]), tools=[handoff(billing)])
    >>> r = triage.run("Where is my refund?")
    >>> r.output, r.stop_reason
    ('Your refund is on its way.', 'direct_output')
    >>> [m.role for m in billing.provider.requests[0].messages]
    ['user', 'assistant', 'tool']
    """
    target = agent.name or name
    if not target:
        raise UserError("handoff needs a name: Agent(..., name='billing') or handoff(agent, name='to_billing')")
    name = name or f"transfer_to_{target}"
    if not _NAME.match(name):
        raise UserError(f"tool name {name!r} must be 1-64 letters, digits, '_' or '-'")
    text = description or f"Hand the conversation over to the {target} agent, which answers the user from here."
    return Handoff(agent, name, text)


def handed_over(ctx: ToolContext, target: str) -> list[Message]:
    """The conversation as the other agent takes it on: no system prompt (it brings its own),
    and the last turn reduced to the handoff call, answered."""
    said = list(ctx.caller.messages) if ctx.caller is not None else []
    turn = said.pop() if said and isinstance(said[-1], AssistantMessage) else None
    calls = turn.tool_calls if turn is not None else ()
    if len(calls) > 1:
        raise ValueError(f"a handoff must be the only call of its turn: call {ctx.name} alone to hand over")
    out = [m for m in said if not isinstance(m, SystemMessage)]
    if turn is not None and calls:
        out += [turn, ToolMessage(calls[0].id, calls[0].name, f"Transferred to the {target} agent: answer from here.")]
    return out
