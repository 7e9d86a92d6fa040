"""``kernel_tools(mode)``: the kernel as a tool source, like an MCP server.

``"read"`` gives three tools with no side effects: ``list_variables``, ``describe`` and
``notebook_cells``. ``"code"`` adds ``run_python(code)`` in the user's namespace, which needs
approval unless ``approval=False`` is passed (:mod:`agentnb.kernel.run_tool`). ``"sandbox"``
gives ``run_python`` and ``pull`` over a separate kernel process (:mod:`agentnb.kernel.sandbox`).
:class:`~agentnb.errors.UserError`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, Literal

from agentnb.errors import UserError
from agentnb.kernel.describe import describe
from agentnb.kernel.history import cells, track, tracker_for
from agentnb.kernel.names import KernelReadError, resolve, user_names
from agentnb.kernel.summary import summary
from agentnb.tools import Tool, tool

#: Variables ``list_variables`` lists by default (the most recently defined).
MAX_VARIABLES = 100
MODES = ("read", "code", "sandbox")


def kernel_tools(
    mode: Literal["read", "code", "sandbox"] = "read",
    *,
    namespace: Mapping[str, Any] | None = None,
    max_variables: int = MAX_VARIABLES,
    approval: bool = True,
    timeout: float | None = None,
    **options: Any,
) -> list[Tool]:
    """Tools that let an agent see the notebook's variables and cells.

    ``mode="read"``: ``list_variables()`` (name and a one-line summary, most recently defined
    first), ``describe(name)`` (what a person would print: a DataFrame's columns, dtypes, nulls,
    statistics and first rows; bounded in size and time, sampled on large frames) and
    ``notebook_cells(last=5)``. They read, never run code the model writes: ``name`` is a
    variable, an attribute path (``df.price``) or a key (``cfg["lr"]``), never an expression.

    ``mode="code"`` adds ``run_python(code)``: it runs in the namespace and returns what a cell
    shows (stdout, stderr, the last expression's value, an exception, the names it changed). Each
    call needs approval (the trace widget's panel, the terminal's prompt, an ``approver=``);
    ``approval=False`` turns that off, explicitly. ``timeout`` (seconds, default
    :data:`~agentnb.kernel.code.CODE_TIMEOUT`) stops the code, as does the agent's
    ``tool_timeout``.

    ``mode="sandbox"``: ``run_python(code)`` in a separate kernel process seeded with copies of
    ``share=[names]``, and ``pull(name)``; ``options`` are
    :func:`~agentnb.kernel.sandbox.sandbox_tools`'s (``share``, ``cpu_seconds``, ``memory_mb``).
    Approval is on there too; ``approval`` and ``timeout`` mean the same. See ``docs/sandbox.md``.

    ``namespace`` is the IPython kernel's by default; pass a dict (``globals()``) elsewhere.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider, call
    >>> ns = {"prices": [3.5, 4.0, 2.25]}
    >>> agent = Agent(ScriptedProvider([call("describe", name="prices"), "Three prices."]),
    ...               tools=kernel_tools("read", namespace=ns))
    >>> result = agent.run("What is in prices?")
    >>> print(result.messages[2].content)  # what the model read
    prices: list of 3 float
      [0] 3.5
      [1] 4.0
      [2] 2.25
    """
    if mode not in MODES:
        raise UserError(f"kernel_tools mode must be one of {', '.join(map(repr, MODES))}, not {mode!r}")
    if not isinstance(max_variables, int) or max_variables < 1:
        raise UserError(f"max_variables must be a whole number >= 1, not {max_variables!r}")
    shell = _shell()
    if namespace is None:
        if shell is None:
            raise UserError("kernel_tools needs a namespace outside IPython: kernel_tools('read', namespace=globals())")
        namespace = shell.user_ns
    elif shell is not None and namespace is not shell.user_ns:
        shell = None  # a namespace of its own: not the kernel's history
    if not isinstance(namespace, Mapping):
        raise UserError(f"namespace must be a dict of variables (globals()), not {type(namespace).__name__}")
    if mode == "sandbox":
        from agentnb.kernel.sandbox import sandbox_tools

        if timeout is not None:
            options["timeout"] = timeout
        return sandbox_tools(namespace, approval=approval, **options)  # type: ignore[arg-type]
    if options:
        raise UserError(f"kernel_tools({mode!r}) takes no {', '.join(options)}")
    reader = KernelReader(namespace, shell, max_variables)
    tools = [tool(reader.list_variables), tool(reader.describe), tool(reader.notebook_cells)]
    if mode == "code":
        from agentnb.kernel.run_tool import run_python_tool

        tools.append(run_python_tool(namespace, approval=approval, timeout=timeout))
    return tools


class KernelReader:
    """The read tools' state: the namespace, the shell (for hidden names, order and cells)."""

    def __init__(self, namespace: Mapping[str, Any], shell: Any = None, max_variables: int = MAX_VARIABLES) -> None:
        self.namespace = namespace
        self.shell = shell
        self.max_variables = max_variables
        self.hidden = getattr(shell, "user_ns_hidden", None)
        if shell is not None:
            track(shell)

    def list_variables(self) -> str:
        """List the notebook's variables, most recently defined first: name, type and size.

        Use describe(name) to look at one.
        """
        names = user_names(self.namespace, self.hidden)
        tracker = tracker_for(self.shell)
        ordered = tracker.newest_first(names) if tracker is not None else names[::-1]
        if not ordered:
            return "The notebook has no variables yet."
        shown = ordered[: self.max_variables]
        lines = [f"{name}: {summary(self.namespace[name])}" for name in shown]
        head = f"{len(ordered):,} variables, most recently defined first"
        if len(ordered) > len(shown):
            head += f" (the first {len(shown):,}; describe(name) reads any of them)"
        return head + ":\n" + "\n".join(lines)

    def describe(self, name: str) -> str:
        """Describe a variable: type, size and contents (a DataFrame's columns, dtypes, nulls, statistics, first rows).

        Args:
            name: a variable's name (df), an attribute path (df.price) or a key (cfg["lr"]); not an expression
        """
        value = resolve(self.namespace, name, self.hidden)
        return describe(value, name.strip())

    def notebook_cells(self, last: int = 5) -> str:
        """The source of the last cells run in the notebook, with their output values and errors.

        Args:
            last: how many cells, the most recent last (1 to 50)
        """
        if not 1 <= last <= 50:
            raise KernelReadError(f"last must be between 1 and 50, not {last}")
        tracker = tracker_for(self.shell)
        raw = getattr(getattr(self.shell, "history_manager", None), "input_hist_raw", None)
        sources = raw if isinstance(raw, list) else self.namespace.get("In")
        running, errors = (tracker.running, tracker.errors) if tracker is not None else (None, {})
        try:
            return cells(sources, self.namespace.get("Out"), last, running, errors)
        except LookupError as exc:
            raise KernelReadError(str(exc)) from None


def _shell() -> Any:
    """The running IPython shell, without importing IPython where it is not loaded."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    return ipython.get_ipython()
