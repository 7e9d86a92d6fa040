"""One visible re-ask for a constrained call that still breaks its tool's schema.

A server's grammar converter skips some JSON Schema keywords (a ``maximum`` on a number in
llama.cpp's, see :mod:`agentnb.providers.untooled.enforce`), so a constrained reply can parse
and still fail validation. Before the loop sees such a call, the UnTooled layer asks the model
once more: the same conversation, its call, the validation errors, and a reply constrained to
that one tool. The model's new call replaces the old one only when it validates; either way a
:class:`~agentnb.events.CallRepair` event says what was rejected and why, so the user sees it.
Argument values are never changed here: every call the loop gets was written by the model.

>>> print(repair_text("p", ["p: 1.5 is greater than the maximum of 1"]))
That call is not valid:
- p: 1.5 is greater than the maximum of 1
Reply with the corrected call to p, as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from agentnb.events import CallRepair
from agentnb.messages import AssistantMessage, Message, ToolCall, Usage, UserMessage
from agentnb.providers.base import Completion, OutputConstraint, Provider, Request, collect
from agentnb.providers.untooled.enforce import narrowed
from agentnb.providers.untooled.parse import parse_reply

if TYPE_CHECKING:
    from agentnb.tools import Tool


class UnTooled(Protocol):
    """What a re-ask reads of :class:`~agentnb.providers.untooled.UnTooled`: the model it wraps
    and its prompt template (a protocol, so this module does not import the layer)."""

    inner: Provider
    template: Any


#: Used when a custom prompt template has no ``[[repair]]`` section.
DEFAULT_REPAIR = "That call is not valid:\n$errors\nReply with the corrected call to $name, as JSON."
#: Longest string a re-ask of a call cut off by the token limit may write (if the tool allows).
SHORT_STRING = 32
#: Request settings that are hints for one UnTooled step; a re-ask sends none of them.
_HINTS = ("untooled_after_tool_results", "untooled_results", "untooled_pick")


def repair_text(name: str, errors: Sequence[str], template: Any = None) -> str:
    """What the model is told about its invalid call."""
    lines = "\n".join(f"- {e}" for e in errors)
    if template is not None and "repair" in template.sections:
        return str(template.fill("repair", name=name, errors=lines))
    from string import Template

    return Template(DEFAULT_REPAIR).substitute(name=name, errors=lines)


async def repair_calls(
    layer: UnTooled,
    request: Request,
    rendered: Sequence[Message],
    reply: str,
    calls: tuple[ToolCall, ...],
    new_id: Callable[[], str],
) -> tuple[tuple[ToolCall, ...], tuple[Any, ...], Usage]:
    """``calls`` with each one that fails its tool's schema asked for once more.

    ``rendered`` is the conversation the model saw and ``reply`` what it wrote. Returns the
    calls (repaired where the new one validates), the events (the re-asks' own, then a
    :class:`~agentnb.events.CallRepair` each), and the usage of the re-asks.
    """
    tools = {t.name: t for t in request.tools}
    out: list[ToolCall] = []
    events: list[Any] = []
    usage = Usage()
    for call in calls:
        tool = tools.get(call.name)
        if tool is None:
            errors = []  # no such tool: the loop lists the real ones
        elif call.arguments is None:  # cut off by the token limit (a constrained reply is JSON)
            errors = [f"the call was cut off before its end ({call.parse_error or 'not valid JSON'})"]
        else:
            errors = tool.validate(call.arguments)
        if not errors:
            out.append(call)
            continue
        assert tool is not None
        fixed, event, used = await _ask_again(layer, request, rendered, reply, call, tool, errors, new_id)
        out.append(fixed)
        events.extend(event)
        usage = usage + used
    return tuple(out), tuple(events), usage


async def _ask_again(
    layer: UnTooled,
    request: Request,
    rendered: Sequence[Message],
    reply: str,
    call: ToolCall,
    tool: Tool,
    errors: list[str],
    new_id: Callable[[], str],
) -> tuple[ToolCall, list[Any], Usage]:
    inner_events: tuple[Any, ...] = ()

    def report(repaired: bool, detail: str) -> list[Any]:
        if notes:
            detail += " (asked with " + "; ".join(notes) + ")"
        event = CallRepair(0, layer.inner.name, call.name, call.arguments, tuple(errors), repaired, detail)
        return [*inner_events, event]

    messages = [*rendered, AssistantMessage(reply.strip()), UserMessage(repair_text(tool.name, errors, layer.template))]
    settings = {k: v for k, v in request.settings.items() if k not in _HINTS}
    target, notes = _narrowed_tool(tool, call.arguments)
    if call.arguments is None:  # cut off: room for the whole call this time
        limit = settings.get("max_tokens") or (getattr(layer.inner, "settings", None) or {}).get("max_tokens")
        if isinstance(limit, int) and limit > 0:
            settings["max_tokens"] = 2 * limit
            notes.append(f"max_tokens {2 * limit}")
    again = Request(messages, (), "none", settings, OutputConstraint((target,), tool.name, False, None))
    try:
        result: Completion = await collect(layer.inner.stream(again))
    except Exception as exc:  # the server failed on the re-ask: the loop gets the first call
        return call, report(False, f"the re-ask failed ({type(exc).__name__}); the call goes on as it was"), Usage()
    inner_events = result.events
    if any(e.kind == "constraint_dropped" for e in result.events) and not layer.inner.supports_constraints:
        return call, report(False, "the server stopped constraining replies; the call goes on as it was"), result.usage
    _, new = parse_reply(result.text or "", [tool.name], strict=True, default_tool=tool.name, new_id=new_id)
    second = next((c for c in new if c.name == tool.name and c.arguments is not None), None)
    if second is None:
        return call, report(False, "the new reply was no call; the call goes on as it was"), result.usage
    still = tool.validate(second.arguments)
    if still:
        detail = "the new call is still invalid (" + "; ".join(still) + "); the loop reports it to the model"
        return ToolCall(call.id, tool.name, second.arguments), report(False, detail), result.usage
    return ToolCall(call.id, tool.name, second.arguments), report(True, "the new call validates"), result.usage


def _narrowed_tool(tool: Tool, arguments: Any) -> tuple[Tool, list[str]]:
    """``tool`` with each argument that broke a bound the server skipped narrowed to values that
    validate (:func:`~agentnb.providers.untooled.enforce.narrowed`), and notes saying which.

    For a call cut off by the token limit (``arguments`` None), every free string gets a
    ``maxLength`` of :data:`SHORT_STRING` (and the re-ask twice the ``max_tokens``), so the
    new call has room to end.
    """
    from agentnb.tools import Tool

    props = tool.parameters.get("properties") or {}
    changed: dict[str, Any] = {}
    notes: list[str] = []
    if arguments is None:
        for name, spec in props.items():
            if isinstance(spec, dict) and spec.get("type") == "string" and _free(spec):
                changed[name] = {**spec, "maxLength": min(spec.get("maxLength", SHORT_STRING), SHORT_STRING)}
        if changed:
            notes.append(f"strings of at most {SHORT_STRING} characters")
    for name, value in (arguments or {}).items():
        spec = props.get(name)
        if not isinstance(spec, dict) or _valid(spec, value):
            continue
        found = narrowed(spec)
        if found is not None:
            changed[name], note = found
            notes.append(f"{name}: {note}")
    if not changed:
        return tool, notes
    parameters = {**tool.parameters, "properties": {**props, **changed}}
    return Tool(tool.name, tool.description, parameters), notes


def _valid(schema: dict[str, Any], value: Any) -> bool:
    import jsonschema

    return bool(jsonschema.validators.validator_for(schema)(schema).is_valid(value))


def _free(spec: dict[str, Any]) -> bool:
    """A string whose only limits are lengths that a shorter maximum keeps satisfiable."""
    return not ({"enum", "const", "pattern", "format"} & spec.keys()) and spec.get("minLength", 0) <= SHORT_STRING
