"""Approval of tool calls: a person's (or a policy's) yes before a call runs.

A tool marked ``@tool(requires_approval=True)``, or named in ``Agent(requires_approval=...)``,
never runs without a decision. The loop emits an
:class:`~agentnb.events.ApprovalRequested` event, asks the run's *approver*, and emits an
:class:`~agentnb.events.ApprovalDecided` event with the decision and who made it:

* :class:`Approve` -- run the call as the model wrote it;
* :class:`Deny` -- do not run it; the model reads the reason;
* :class:`Edit` -- run it with other arguments (checked against the tool's schema first).

An approver is a *policy*, a function ``(call) -> Approve | Deny | Edit`` (sync or async), or
an object with an async ``decide_approval(call)`` method (the notebook's trace widget, the
terminal prompt of ``agentnb run``). A run with no approver is unattended: each such call is
denied, with a reason that says so.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool(requires_approval=True)
... def delete(path: str) -> str:
...     '''Delete a file.'''
...     return f"deleted {path}"
>>> def policy(call):
...     return Approve() if call.arguments["path"].startswith("/tmp/") else Deny("only /tmp may be deleted")
>>> model = ScriptedProvider([call("delete", path="/etc/passwd"), "I may not."])
>>> result = Agent(model, tools=[delete], approver=policy).run("delete /etc/passwd")
>>> model.requests[1].messages[-1].content
'The call was denied and not run: only /tmp may be deleted'
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from agentnb.errors import UserError
from agentnb.messages import ToolCall

#: What an unattended run tells the model when a call needed approval.
UNATTENDED = "this tool requires approval and no one was there to give it (the run has no approver)"


@dataclass(frozen=True, slots=True)
class Approve:
    """Run the call as it is.

    >>> Approve().action
    'approve'
    """

    action: Literal["approve"] = field(default="approve", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the call; ``reason`` is what the model reads.

    >>> Deny("too expensive").reason
    'too expensive'
    """

    reason: str = "denied by the user"
    action: Literal["deny"] = field(default="deny", init=False, repr=False)


@dataclass(frozen=True, slots=True)
class Edit:
    """Run the call with these arguments instead (checked against the tool's schema).

    >>> Edit({"path": "/tmp/x"}).arguments
    {'path': '/tmp/x'}
    """

    arguments: dict[str, Any]
    action: Literal["edit"] = field(default="edit", init=False, repr=False)


Decision: TypeAlias = Approve | Deny | Edit
#: A function that decides: ``(call) -> Decision`` or an awaitable of one.
ApprovalPolicy: TypeAlias = Callable[[ToolCall], "Decision | Awaitable[Decision]"]


class ApprovalGate:
    """Which calls need approval in one run, and who decides (built by the agent per run).

    ``names``: tool names that need approval (besides tools marked ``requires_approval``);
    ``True`` for every tool. ``approver``: a policy or an object with ``decide_approval``.

    >>> import asyncio
    >>> gate = ApprovalGate(True, lambda call: Deny("no"))
    >>> gate.by, asyncio.run(gate.decide(ToolCall("c1", "add", {})))
    ('policy <lambda>', Deny(reason='no'))
    """

    __slots__ = ("names", "approver", "by", "_decide")

    def __init__(self, names: bool | Iterable[str] = (), approver: Any = None) -> None:
        self.names: bool | frozenset[str] = names if isinstance(names, bool) else frozenset(names)
        self.approver = approver
        self.by, self._decide = _decider(approver)

    def needs(self, tool: Any) -> bool:
        """Whether a call of ``tool`` needs a decision."""
        names = self.names
        return bool(getattr(tool, "requires_approval", False)) or names is True or (names and tool.name in names)  # type: ignore[operator]

    async def decide(self, call: ToolCall, tool: Any = None) -> Decision:
        """The approver's decision on ``call`` (a :class:`Deny` when there is no approver)."""
        decision = self._decide(call, tool)
        if inspect.isawaitable(decision):
            decision = await decision
        if not isinstance(decision, (Approve, Deny, Edit)):
            raise UserError(
                f"the approver {self.by} returned {decision!r}; return agentnb.Approve(), Deny(reason) or Edit(arguments)"
            )
        return decision


def _decider(approver: Any) -> tuple[str, Callable[[ToolCall, Any], Any]]:
    if approver is None:
        return "unattended", lambda call, tool: Deny(UNATTENDED)
    method = getattr(approver, "decide_approval", None)
    if method is not None:  # a decider that can show the tool (its schema, to check edits)
        return str(getattr(approver, "approver_name", type(approver).__name__)), method
    if callable(approver):
        return f"policy {getattr(approver, '__name__', type(approver).__name__)}", lambda call, tool: approver(call)
    raise UserError(
        f"approver must be a function (call) -> Approve()/Deny(reason)/Edit(arguments), or an object with "
        f"decide_approval(call); not {type(approver).__name__}"
    )


def check_requires_approval(value: Any) -> bool | frozenset[str]:
    """``Agent(requires_approval=...)``: True/False, or tool names."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return frozenset([value])
    try:
        names = frozenset(value)
    except TypeError:
        raise UserError(f"requires_approval must be True, False or tool names, not {value!r}") from None
    if not all(isinstance(n, str) for n in names):
        raise UserError(f"requires_approval must be True, False or tool names, not {value!r}")
    return names


def parse_edit(arguments: dict[str, Any] | str, tool: Any = None) -> dict[str, Any]:
    """Edited arguments from a person (a dict or JSON object text), checked against ``tool``'s
    schema; a :class:`UserError` says what is wrong.

    >>> parse_edit('{"a": 1}')
    {'a': 1}
    """
    if isinstance(arguments, str):
        import json

        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise UserError(f"the arguments are not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise UserError(f"the arguments must be a JSON object, not {type(arguments).__name__}")
    if tool is not None:
        errors = tool.validate(arguments)
        if errors:
            raise UserError(f"invalid arguments for {tool.name}: " + "; ".join(errors))
    return arguments


def denied_message(reason: str) -> str:
    """What the model reads for a denied call."""
    return f"The call was denied and not run: {reason}"


def bad_edit_message(name: str, by: str, errors: list[str] | tuple[str, ...]) -> str:
    """What the model reads when the approver replaced its arguments by invalid ones: the call
    was not run, and the fault is not the model's (it is not asked to fix what it never wrote).

    >>> print(bad_edit_message("delete_file", "widget", ["'path' is a required property"]))
    The call to delete_file was not run: its reviewer (widget) changed the arguments, and the change does not match the tool's schema:
    - 'path' is a required property
    Your own arguments were not the problem. Call it again if it is still needed.
    """
    lines = "\n".join(f"- {e}" for e in errors)
    return (
        f"The call to {name} was not run: its reviewer ({by}) changed the arguments, and the change does not "
        f"match the tool's schema:\n{lines}\nYour own arguments were not the problem. Call it again if it is "
        "still needed."
    )
