"""What a tool may receive besides its arguments: few-shot examples, and the call's context.

Kept apart from :mod:`agentnb.tools.definition` so that the signature reader (:mod:`agentnb.tools.signature`) can
recognise a ``ToolContext`` parameter without importing the tool type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentnb.messages import Image


@dataclass(frozen=True, slots=True)
class ToolExample:
    """A few-shot example: a user request and the arguments the tool should get.

    The UnTooled prompt shows examples to text-only models; they are checked against the
    schema when the tool is built.

    >>> from agentnb.tools.definition import tool
    >>> @tool(examples=[ToolExample("weather in Oslo?", {"city": "Oslo"})])
    ... def weather(city: str) -> str:
    ...     '''Current weather for a city.'''
    ...     return "sunny"
    >>> weather.examples[0].arguments
    {'city': 'Oslo'}
    """

    query: str
    arguments: dict[str, Any]


class ToolContext:
    """Passed to a tool that declares a parameter annotated ``ToolContext``.

    Lets the tool attach images for the model to see, or make its result the final answer.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider, call
    >>> from agentnb.tools.definition import tool
    >>> @tool
    ... def report(ctx: ToolContext) -> str:
    ...     '''Write the report and end the run with it.'''
    ...     ctx.return_directly()
    ...     return f"report (call {ctx.call_id})"
    >>> Agent(ScriptedProvider([call("report")]), tools=[report]).run("go").output
    'report (call call_1)'
    """

    __slots__ = ("call_id", "name", "depth", "images", "direct", "structured", "caller")

    def __init__(self, call_id: str, name: str, depth: int) -> None:
        self.call_id = call_id
        self.name = name
        self.depth = depth
        self.images: list[Image] = []
        self.direct = False
        #: Machine-readable data that came with the result (an MCP tool's ``structuredContent``),
        #: kept on the ``ToolFinished`` event and in the transcript; the model reads the text.
        self.structured: Any = None
        #: For a tool that runs an agent (:meth:`agentnb.Agent.as_tool`): the calling run (a
        #: :class:`agentnb.run.nested.Caller`: its event stream, controller, ledger and
        #: conversation). None for ordinary tools and for calls made outside a run.
        self.caller: Any = None

    def attach_image(self, image: Any, mime: str = "image/png") -> None:
        """Queue an image (PNG/JPEG bytes or a PIL image) for the model's next turn."""
        self.images.append(Image.coerce(image, mime))

    def return_directly(self) -> None:
        """Make this call's result the run's final answer (no further model call)."""
        self.direct = True
