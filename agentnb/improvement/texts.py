"""The texts an improvement may change, and a new agent built from changed texts.

A *component* is one named text of an agent: ``"system"`` (the system prompt), ``"tool:NAME"``
(a tool's description) or ``"tool:NAME.PARAM"`` (one parameter's description). A *candidate* is
a dict ``{component: text}``. :func:`build_agent` makes a new :class:`~agentnb.Agent` with those
texts; the original agent and its tools are never modified, and no tool's code changes.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two numbers.
...
...     Args:
...         a: the first number.
...         b: the second number.
...     '''
...     return a + b
>>> agent = Agent(ScriptedProvider(["ok"]), tools=[add], system="Be brief.")
>>> names = components(agent, "tools")
>>> names
['tool:add', 'tool:add.a', 'tool:add.b']
>>> new = build_agent(agent, {"system": "Use the tools.", "tool:add.a": "the left operand."})
>>> new.system, new.tools["add"].parameters["properties"]["a"]["description"]
('Use the tools.', 'the left operand.')
>>> agent.system, agent.tools["add"].parameters["properties"]["a"]["description"]
('Be brief.', 'the first number.')
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from agentnb.errors import UserError

SYSTEM = "system"


def components(agent: Any, targets: str | Iterable[str] = SYSTEM) -> list[str]:
    """The component names ``targets`` means for this agent, in a stable order.

    ``targets`` is ``"system"``, ``"tools"`` (every tool's description and its parameters'
    descriptions), a component name, or a list of those.
    """
    given = [targets] if isinstance(targets, str) else list(targets)
    if not given:
        raise UserError("targets= is empty: give 'system', 'tools' or component names such as 'tool:NAME'")
    every = [SYSTEM, *_tool_components(agent)]
    out: list[str] = []
    for t in given:
        if not isinstance(t, str):
            raise UserError(f"a target is a component name (str), not {type(t).__name__}")
        picked = [c for c in every if c.startswith("tool:")] if t == "tools" else [t]
        for name in picked:
            if name not in every:
                raise UserError(f"unknown target {name!r}; this agent has: 'system', 'tools', {every[1:]}")
            if name not in out:
                out.append(name)
    if any(c.startswith("tool:") for c in out) and getattr(getattr(agent, "_toolset", None), "sources", None):
        raise UserError(
            "this agent's tools come from a server that may change them (MCP): their descriptions cannot be "
            "targets; improve the system prompt, or give the tools as Python functions"
        )
    return sorted(out, key=every.index)


def _tool_components(agent: Any) -> list[str]:
    out = []
    for name, tool in agent.tools.items():
        out.append(f"tool:{name}")
        props = tool.parameters.get("properties")
        for param in props if isinstance(props, dict) else ():
            out.append(f"tool:{name}.{param}")
    return out


def read_texts(agent: Any, names: Iterable[str]) -> dict[str, str]:
    """The current text of each component (a missing description or system prompt is ``""``)."""
    out = {}
    for name in names:
        if name == SYSTEM:
            out[name] = agent.system or ""
            continue
        tool, param = _parts(name)
        t = agent.tools[tool]
        if param is None:
            out[name] = t.description
        else:
            out[name] = str(t.parameters["properties"][param].get("description", ""))
    return out


def _parts(name: str) -> tuple[str, str | None]:
    rest = name[len("tool:") :]
    tool, _, param = rest.partition(".")
    return tool, param or None


def build_agent(agent: Any, texts: dict[str, str]) -> Any:
    """A new agent like ``agent`` with these texts; ``agent`` and its tools are left as they are."""
    from agentnb.tools.toolset import ToolSet

    new = copy.copy(agent)
    if SYSTEM in texts:
        new.system = texts[SYSTEM] or None
    changed = {k: v for k, v in texts.items() if k != SYSTEM}
    if not changed:
        return new
    tools = []
    for name, tool in agent.tools.items():
        mine = {k: v for k, v in changed.items() if _parts(k)[0] == name}
        if not mine:
            tools.append(tool)
            continue
        twin = copy.copy(tool)  # same function, validator and options; only texts differ
        params = copy.deepcopy(tool.parameters)
        for key, text in mine.items():
            param = _parts(key)[1]
            if param is None:
                twin.description = text
            else:
                params["properties"][param]["description"] = text
        twin.parameters = params
        tools.append(twin)
    new._toolset = ToolSet(tools)
    new.tools = new._toolset.current
    return new


def candidate_id(texts: dict[str, str]) -> str:
    """A short name for a candidate, the same for the same texts (it names its runs in the log).

    >>> candidate_id({"system": "Be brief."}) == candidate_id({"system": "Be brief."})
    True
    """
    digest = hashlib.sha1(json.dumps(texts, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return "c" + digest.hexdigest()[:8]


def describe(name: str) -> str:
    """What a component is, in words (for the reflector and the views).

    >>> describe("tool:add.a")
    "the description of parameter 'a' of the tool 'add'"
    """
    if name == SYSTEM:
        return "the agent's system prompt"
    tool, param = _parts(name)
    if param is None:
        return f"the description of the tool {tool!r}"
    return f"the description of parameter {param!r} of the tool {tool!r}"


def text_diff(old: dict[str, str], new: dict[str, str], a: str = "original", b: str = "best") -> str:
    """A unified diff of every component that differs (empty when none does).

    >>> print(text_diff({"system": "Be brief."}, {"system": "Be brief.\\nUse the tools."}))
    --- original system
    +++ best system
    @@ -1 +1,2 @@
     Be brief.
    +Use the tools.
    """
    parts = []
    for name in new:
        if old.get(name, "") == new[name]:
            continue
        lines = difflib.unified_diff(
            old.get(name, "").splitlines(), new[name].splitlines(), f"{a} {name}", f"{b} {name}", lineterm=""
        )
        parts.append("\n".join(lines))
    return "\n".join(parts)
