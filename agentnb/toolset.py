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

from collections.abc import Iterable
from typing import Any

from agentnb.tools import Tool, ToolSource, coerce_tools


class ToolSet:
    """The tools built from an agent's ``tools=`` inputs, re-built when a source changes."""

    def __init__(self, inputs: Iterable[Any]) -> None:
        self.inputs = tuple(inputs)
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


def _flat(inputs: Iterable[Any]) -> Iterable[Any]:
    for t in inputs:
        if isinstance(t, (list, tuple)):
            yield from _flat(t)
        elif isinstance(t, ToolSource) and not isinstance(t, Tool) and callable(t.tools):
            yield t
