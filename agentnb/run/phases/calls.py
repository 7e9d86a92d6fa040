"""The phases of each call in a reply: decide, deduplicate, approve, then schedule.

Each phase looks at one :class:`Pending` call and either passes it on or settles it with the
answer the model will read (``plan``); :func:`schedule` files the settled answer, or an
execution for a call that came through.
"""

from __future__ import annotations

from typing import Any

from agentnb.control.approval import bad_edit_message, denied_message
from agentnb.events import (
    ApprovalDecided,
    ApprovalRequested,
    DedupAction,
    DedupDecision,
    StepDecision,
    ToolCallRequested,
    UnknownTool,
    ValidationResult,
)
from agentnb.messages import ToolCall, ToolMessage
from agentnb.run.state import LoopState, said_so_far
from agentnb.tools.dedupe import fingerprint, repeat_message
from agentnb.tools.execution import Execution
from agentnb.tools.running import invalid_message, unknown_message


class Pending:
    """A call of the reply on its way through the phases; ``plan`` is set once one settles it."""

    __slots__ = ("index", "call", "tool", "arguments", "fp", "earlier", "plan")

    def __init__(self, index: int, call: ToolCall) -> None:
        self.index, self.call = index, call
        self.tool: Any = None
        self.arguments: dict[str, Any] | None = call.arguments
        self.fp = ""
        self.earlier: str | None = None  # the result of the same call in an earlier step
        self.plan: ToolMessage | int | None = None


def pending_calls(run: LoopState) -> list[Pending]:
    """Open the step's plans: one per call of the reply, filled in by the phases."""
    assert run.completion is not None and run.state.step is not None
    run.plans, run.in_turn, run.execs, run.nested = [], {}, [], False
    run.state.step.plans, run.state.step.budget = run.plans, run.ledger.calls_left()
    return [Pending(i, call) for i, call in enumerate(run.completion.tool_calls)]


async def decide(run: LoopState, p: Pending) -> None:
    """Decide whether the call may run: within the limit, a known tool, the controller's word, valid arguments."""
    state, step, call, emit = run.state, run.state.step, p.call, run.emit
    assert step is not None
    emit(ToolCallRequested(run.depth, call.id, call.name, call.arguments))
    if p.index >= step.budget or run.ledger.calls_left() <= 0:  # (a parallel run may have used what was left)
        step.budget = min(step.budget, p.index)
        p.plan = ToolMessage(call.id, call.name, "Not executed: the tool-call limit was reached.", True)
        return
    state.tool_calls += 1
    run.ledger.add_tool_call()
    p.tool = tool = run.tools.get(call.name)
    if tool is None:
        emit(UnknownTool(run.depth, call.id, call.name, run.names))
        p.plan = ToolMessage(call.id, call.name, unknown_message(call, run.names), True)
        return
    controller = run.cfg.controller
    if controller is not None:
        await said_so_far(run)
        decision = await controller.before_tool(run.depth, call)
        if decision.action == "skip":
            emit(StepDecision(run.depth, "tool", "skip", call.id))
            p.plan = ToolMessage(call.id, call.name, "The user skipped this call; it was not run.", True)
            return
        if decision.arguments is not None and decision.arguments != p.arguments:
            p.arguments = decision.arguments
            emit(StepDecision(run.depth, "tool", "edit", call.id, p.arguments))
    arguments = p.arguments
    errors = (call.parse_error or "arguments are not valid JSON",) if arguments is None else tool.validate(arguments)
    emit(ValidationResult(run.depth, call.id, call.name, tuple(errors)))
    if errors or arguments is None:
        p.plan = ToolMessage(call.id, call.name, invalid_message(tool, errors), True)
        return
    p.fp = fingerprint(call.name, {**tool.defaults, **arguments} if tool.defaults else arguments)


def deduplicate(run: LoopState, p: Pending) -> None:
    """Decide whether the call repeats an earlier one (then it is answered from that one's result).

    A fork's call whose result its recording holds is answered from the recording (:func:`recall`).
    """
    if run.recorded and recall(run, p):
        return
    call = p.call
    p.earlier = earlier = run.dedup.lookup(p.fp)
    seen = earlier is not None or p.fp in run.in_turn
    action: DedupAction = "execute" if not seen else ("allow_repeat" if p.tool.allow_repeat else "skip")
    run.emit(DedupDecision(run.depth, call.id, call.name, p.fp, seen, action))
    if action == "skip" and earlier is not None:
        p.plan = ToolMessage(call.id, call.name, repeat_message(call.name, earlier))
    elif action == "skip":  # a repeat within this step: answered once the first call has run
        p.plan = run.in_turn[p.fp]


def recall(run: LoopState, p: Pending) -> bool:
    """Answer the call from the recording when the fork's recording holds its result: a call of
    the fork's first step, as recorded (same id, same arguments), beside the one it edits. The
    recorded ``tool_finished`` is said again: the call did not run (no ``tool_started``)."""
    kept = run.recorded.pop(p.call.id, None)
    if kept is None or run.depth != run.cfg.first_depth or kept[0] != p.fp:
        return False
    _, message, finished = kept
    run.emit(finished)
    p.plan = message
    if not message.is_error:
        run.dedup.record(p.fp, str(message.content))
    return True


async def approve(run: LoopState, p: Pending) -> None:
    """Decide, for a tool that needs approval, whether it runs, runs with edited arguments, or not."""
    gate, call, tool = run.cfg.approval, p.call, p.tool
    if gate is None or not gate.needs(tool):  # no decision, no execution
        return
    run.emit(ApprovalRequested(run.depth, call.id, call.name, p.arguments, gate.by))
    await said_so_far(run)
    answer = await gate.decide(ToolCall(call.id, call.name, p.arguments), tool)
    if answer.action == "deny":
        reason = str(answer.reason)
        run.emit(ApprovalDecided(run.depth, call.id, call.name, "deny", gate.by, reason))
        p.plan = ToolMessage(call.id, call.name, denied_message(reason), True)
    elif answer.action == "edit":
        p.arguments = arguments = answer.arguments
        run.emit(ApprovalDecided(run.depth, call.id, call.name, "edit", gate.by, None, arguments))
        errors = tool.validate(arguments) if isinstance(arguments, dict) else ["not a JSON object"]
        run.emit(ValidationResult(run.depth, call.id, call.name, tuple(errors)))
        if errors:  # the approver's edit, not the model's call, is invalid
            p.plan = ToolMessage(call.id, call.name, bad_edit_message(call.name, gate.by, errors), True)
        else:
            p.fp = fingerprint(call.name, {**tool.defaults, **arguments} if tool.defaults else arguments)
    else:
        run.emit(ApprovalDecided(run.depth, call.id, call.name, "approve", gate.by))


def schedule(run: LoopState, p: Pending) -> None:
    """File the call's plan: the answer a phase settled on, or an execution for the execute phase."""
    if p.plan is not None:
        run.plans.append(p.plan)
        return
    assert p.arguments is not None
    run.in_turn.setdefault(p.fp, len(run.plans))
    execution = Execution(len(run.plans), p.call, p.tool, p.arguments, p.fp)
    run.plans.append(execution)
    run.execs.append(execution)
    if getattr(p.tool, "nested", False):
        run.nested = True
