"""An agent's tools, listed again when a source of them says they changed.

A tool source passed in ``tools=`` (an :class:`~agentnb.mcp.MCPServer`) may change its tools
while it runs; one that counts the changes in a ``tools_version`` attribute is followed: the
agent's tools are expanded again before its next model call. Tools taken from a source
beforehand (``server.tools(prefix="x_")``) are a fixed list, not followed.

>>> from agentnb import tool
>>> class Source:
...     tools_version = 0
...     names = ["a"]
...     def tools(self):
...         return [tool(lambda: n, name=n, description="A tool.") for n in self.names]
>>> source = Source()
>>> toolset = ToolSet([source])
>>> list(toolset.current), toolset.refresh()
(['a'], None)
>>> source.names, source.tools_version = ["a", "b"], 1
>>> list(toolset.refresh())
['a', 'b']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentnb.errors import ToolDefinitionError
from agentnb.tools.definition import Tool, ToolSource, coerce_tools


class ToolSet:
    """The tools built from an agent's ``tools=`` inputs, re-built when a source changes."""

    def __init__(self, inputs: Iterable[Any] | Any) -> None:
        self.inputs = as_inputs(inputs)
        #: The sources that say when their tools change (``tools_version``).
        self.sources = [s for s in _flat(self.inputs) if isinstance(getattr(s, "tools_version", None), int)]
        self._versions = self._read()
        self.current: dict[str, Tool] = coerce_tools(self.inputs)

    def _read(self) -> tuple[int, ...]:
        return tuple(s.tools_version for s in self.sources)

    def refresh(self) -> dict[str, Tool] | None:
        """The tools again if a source changed them since the last look (else None)."""
        versions = self._read()
        if versions == self._versions:
            return None
        self._versions = versions  # read before listing: a change meanwhile is seen next time
        try:
            self.current = coerce_tools(self.inputs)
        except Exception:  # e.g. two tools with one name now: keep offering the last good set
            return None
        return self.current


def as_inputs(tools: Any) -> tuple[Any, ...]:
    """``tools=`` as a tuple: a list or any iterable of tools as given, one tool alone as a list of
    one, and a clear error for a string or a dict of tools.

    >>> def add(a: int, b: int) -> int:
    ...     "Add."
    ...     return a + b
    >>> as_inputs(add) == (add,), as_inputs(None), as_inputs([add]) == (add,)
    (True, (), True)
    >>> as_inputs({"add": add})
    Traceback (most recent call last):
    agentnb.errors.ToolDefinitionError: invalid tool 'add':
      - tools= takes a list of tools, not a dict: pass list(tools.values()) (a tool's name comes from the tool)
    """
    if tools is None:
        return ()
    if isinstance(tools, (str, bytes)):
        raise ToolDefinitionError(
            str(tools), [f"tools= takes a list of tools, not the string {tools!r}: pass the functions themselves"]
        )
    if isinstance(tools, Mapping):
        if tools.get("type") == "function" or "function" in tools:  # one OpenAI tool dict
            return (tools,)
        label = ", ".join(map(str, list(tools)[:3])) or "{}"
        raise ToolDefinitionError(
            label,
            ["tools= takes a list of tools, not a dict: pass list(tools.values()) (a tool's name comes from the tool)"],
        )
    if isinstance(tools, (Tool, ToolSource)) or callable(tools) or not isinstance(tools, Iterable):
        return (tools,)  # one tool (or one MCP server, or what coerce_tools will explain)
    return tuple(tools)


def _flat(inputs: Iterable[Any]) -> Iterable[Any]:
    for t in inputs:
        if isinstance(t, (list, tuple)):
            yield from _flat(t)
        elif isinstance(t, ToolSource) and not isinstance(t, Tool) and callable(t.tools):
            yield t
