"""Tools: what a model may call, and how a call becomes a result the model reads.

Owns the ``@tool`` decorator and :class:`Tool` (:mod:`~agentnb.tools.definition`), reading a
function's signature and docstring (:mod:`~agentnb.tools.signature`,
:mod:`~agentnb.tools.docstrings`, :mod:`~agentnb.tools.schema`,
:mod:`~agentnb.tools.schema_values`), what ``tools=[...]`` accepts
(:mod:`~agentnb.tools.kinds`), argument validation (:mod:`~agentnb.tools.validate`), a call's
context (:mod:`~agentnb.tools.context`), running calls safely and concurrently
(:mod:`~agentnb.tools.running`, :mod:`~agentnb.tools.execution`), the result text
(:mod:`~agentnb.tools.rendering`), deduplication (:mod:`~agentnb.tools.dedupe`) and an
agent's changing tool list (:mod:`~agentnb.tools.toolset`). May import errors, messages and
events; never control, output, providers or the run.

>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> add.validate({"a": 1})
["'b' is a required property"]
"""

from agentnb.tools.definition import (
    Tool,
    ToolContext,
    ToolExample,
    ToolSource,
    coerce_tools,
    render_result,
    tool,
)

__all__ = ["Tool", "ToolContext", "ToolExample", "ToolSource", "coerce_tools", "render_result", "tool"]
