"""Structured output (``output_type``) on the Chat Completions route of :class:`OpenAIProvider`.

The strongest mechanism first: a ``json_schema`` response format (strict where the schema
allows); a server that refuses it gets a final-answer tool the model calls with the value.
"""

from __future__ import annotations

from typing import Any

from agentnb.events import OutputMode
from agentnb.output import FINAL_TOOL, answer_from_final_tool, final_tool_description
from agentnb.providers.base import Completion, Request


def structured_output(kwargs: dict[str, Any], request: Request, mode: str) -> None:
    """Ask for ``request.output`` in ``kwargs``: a json_schema response format, or a final-answer tool."""
    output = request.output
    assert output is not None
    schema = output.strict if output.strict is not None else output.wire_schema
    if mode == "response_format":
        spec = {"name": output.api_name, "schema": schema, "strict": output.strict is not None}
        kwargs["response_format"] = {"type": "json_schema", "json_schema": spec}
        return
    function: dict[str, Any] = {"name": FINAL_TOOL, "description": final_tool_description(output), "parameters": schema}
    if output.strict is not None:
        function["strict"] = True
    kwargs["tools"] = [*kwargs.get("tools", ()), {"type": "function", "function": function}]
    # The answer must come through the tool: a call is required (the named one when no other
    # tool is on offer, e.g. at the tool-call limit).
    if not request.tools or request.tool_choice == "none":
        kwargs["tool_choice"] = {"type": "function", "function": {"name": FINAL_TOOL}}
    elif request.tool_choice == "auto":
        kwargs["tool_choice"] = "required"


def final_output(completion: Completion, request: Request, mode: str, note: str = "") -> Completion:
    """The completion with a final-answer tool call turned into the answer text, and an OutputMode event."""
    output = request.output
    assert output is not None
    strict = "strict" if output.strict is not None else "not strict: the schema has optional or free-form parts"
    if mode == "response_format":
        event = OutputMode(0, "response_format", f"json_schema {output.name}, {strict}")
    else:
        event = OutputMode(0, "tool", f"{FINAL_TOOL}({output.name}), {strict}" + (f"; {note}" if note else ""))
    return answer_from_final_tool(completion, event)


def refuses_output(message: str) -> bool:
    """Whether a server's 400 message is about ``response_format``."""
    lowered = message.lower()
    return any(word in lowered for word in ("response_format", "json_schema", "response format"))


def constrained_names(request: Request) -> list[str]:
    """The tool names a constrained request may call (none when it is not constrained)."""
    return [t.name for t in request.constraint.tools] if request.constraint is not None else []


def wants_value(request: Request) -> bool:
    """Whether a constrained request asks for a structured value."""
    return request.constraint is not None and request.constraint.output is not None


class StructuredOutput:
    """A mixin of :class:`~agentnb.providers.openai.OpenAIProvider`: its ``output_mode``, switched
    to the final-answer tool when the server refuses ``response_format``, and the reply's answer."""

    output_mode: str
    _output_note: str

    def _refused_output(self, request: Request, kwargs: dict[str, Any], message: str) -> bool:
        """A server that refuses ``response_format`` gets the final-answer tool from now on."""
        if request.output is None or request.constraint is not None or "response_format" not in kwargs:
            return False
        if not refuses_output(message):
            return False
        self.output_mode = "tool"
        self._output_note = f"the server refused response_format ({message[:120]}); switched to a final-answer tool"
        return True

    def _finish_output(self, request: Request, completion: Completion) -> Completion:
        if request.output is None or request.constraint is not None:
            return completion
        return final_output(completion, request, self.output_mode, self._output_note)
