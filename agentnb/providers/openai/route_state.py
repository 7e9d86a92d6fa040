"""What one :class:`~agentnb.providers.openai.OpenAIProvider` has learnt about its server: the
route tools go out by (``tool_calling``: native, untooled, or auto until the server says the
model takes no tools), the ``response_format`` shapes left to try for the untooled envelope, and
which of them are not yet known to work. How they are used is :mod:`agentnb.providers.openai.route`.

>>> state = RouteState("auto", True)
>>> state.route, state.constraint_format
('native', 'json_schema')
>>> state.drop_format("m", "refused").reason
'refused; trying json_object'
>>> state.switch("m", "no tools").route, state.route
('untooled', 'untooled')
"""

from __future__ import annotations

from typing import Any, Literal

from agentnb.errors import UserError
from agentnb.events import ConstraintDropped, RouteSwitched
from agentnb.providers.base import OutputConstraint
from agentnb.providers.untooled.enforce import enforceable
from agentnb.providers.untooled.envelope import ANSWER_SCHEMA, envelope_schema

__all__ = [
    "CONSTRAINT_FORMATS",
    "TOOL_CALLING",
    "RouteState",
    "ToolCalling",
    "check_tool_calling",
    "constraint_formats",
]

ToolCalling = Literal["auto", "native", "untooled"]
TOOL_CALLING: tuple[str, ...] = ("auto", "native", "untooled")
#: ``response_format`` shapes, in the order they are tried.
CONSTRAINT_FORMATS: tuple[str, ...] = ("json_schema", "json_object")


def check_tool_calling(value: Any) -> ToolCalling:
    if value not in TOOL_CALLING:
        raise UserError(f"tool_calling must be 'auto', 'native' or 'untooled', not {value!r}")
    return value  # type: ignore[no-any-return]


def constraint_formats(constrain: Any) -> list[str]:
    """The ``response_format`` shapes to try for ``constrain`` (True, False or one shape)."""
    if constrain is True:
        return list(CONSTRAINT_FORMATS)
    if constrain is False or constrain is None:
        return []
    if constrain in CONSTRAINT_FORMATS:
        return [constrain]
    raise UserError(f"constrain must be True, False, 'json_schema' or 'json_object', not {constrain!r}")


class RouteState:
    """What one provider has learnt about its server: the route, the constraint shape, and
    which of them are not yet known to work (the first request that uses them is a probe,
    sent without the SDK's retries so a refusal costs one request)."""

    def __init__(self, tool_calling: ToolCalling, constrain: Any) -> None:
        self.tool_calling = tool_calling
        self.route: Literal["native", "untooled"] = "untooled" if tool_calling == "untooled" else "native"
        self.formats = constraint_formats(constrain)
        self.tools_verified = tool_calling != "auto"
        self.tools_checked = tool_calling != "auto"  # whether the server was seen to use them
        self.format_verified = False

    @property
    def constraint_format(self) -> str | None:
        return self.formats[0] if self.formats else None

    def response_format(
        self, constraint: OutputConstraint | None, exclude: frozenset[str] = frozenset()
    ) -> dict[str, Any] | None:
        """The ``response_format`` parameter for a request with this constraint, if any.

        Tools named in ``exclude`` are left out of a ``tool_choice="auto"`` envelope (a text
        answer is then always possible).
        """
        if constraint is None or not self.formats:
            return None
        if exclude and constraint.tool_choice == "auto" and constraint.tools:
            kept = tuple(t for t in constraint.tools if t.name not in exclude)
            constraint = OutputConstraint(kept, "auto", constraint.parallel, constraint.output)
            answer = constraint.output if constraint.output is not None else ANSWER_SCHEMA
            schema = envelope_schema(constraint) if kept else answer
        else:
            schema = envelope_schema(constraint)
        if schema is None:
            return None
        schema = enforceable(schema)  # bounds the server's grammar converter would skip, where exact
        if self.formats[0] == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}

    def can_switch(self) -> bool:
        return self.tool_calling == "auto" and self.route == "native"

    def switch(self, provider: str, reason: str) -> RouteSwitched:
        self.route = "untooled"
        return RouteSwitched(0, provider, "untooled", reason)

    def drop_format(self, provider: str, reason: str, *, ignored: bool = False) -> ConstraintDropped:
        """Stop using the current shape (all of them when the server ignores constraints)."""
        shape = self.formats[0] if self.formats else "?"
        self.formats = [] if ignored else self.formats[1:]
        self.format_verified = False
        then = f"; trying {self.formats[0]}" if self.formats else "; replies are no longer constrained"
        return ConstraintDropped(0, provider, f"response_format {shape}", reason + then)
