"""``kernel_tools("sandbox", share=[...])``: ``run_python`` and ``pull`` over one :class:`Sandbox`.

:func:`sandbox_tools` returns a :class:`SandboxTools`: a list of the two tools (what ``tools=``
takes) that also carries the user's controls: :meth:`SandboxTools.pull` (a copy of a sandbox
variable, returned), :meth:`SandboxTools.restart` and :meth:`SandboxTools.shutdown`.
"""

from __future__ import annotations

import asyncio
import keyword
import threading
from collections.abc import MutableMapping, Sequence
from typing import Any

from agentnb.errors import UserError
from agentnb.kernel.sandbox.process import Limits
from agentnb.kernel.sandbox.sandbox import Sandbox
from agentnb.kernel.summary import summary
from agentnb.tools import Tool, ToolContext

#: Wall-clock seconds one ``run_python`` call may take (None: no bound of its own).
DEFAULT_TIMEOUT = 60.0
#: CPU seconds one call may use; past them the kernel is killed (SIGXCPU) and restarted.
DEFAULT_CPU_SECONDS = 120.0
#: Address space of the sandbox process, in MiB (``RLIMIT_AS``): a larger allocation fails.
DEFAULT_MEMORY_MB = 8192


class SandboxTools(list):  # type: ignore[type-arg]
    """The sandbox's tools (``run_python``, ``pull``), and its controls for the person.

    >>> tools = sandbox_tools({"prices": [3.5, 4.0]}, share=["prices"], approval=False)
    >>> [t.name for t in tools], tools.sandbox.process is None  # nothing started yet
    (['run_python', 'pull'], True)
    """

    def __init__(self, sandbox: Sandbox, tools: list[Tool]) -> None:
        super().__init__(tools)
        #: The :class:`~agentnb.kernel.sandbox.sandbox.Sandbox` behind the tools.
        self.sandbox = sandbox

    def pull(self, name: str) -> Any:
        """A copy of the sandbox's variable ``name``, for the notebook: ``clean = tools.pull("clean")``."""
        return self.sandbox.pull(name)

    def restart(self) -> list[str]:
        """Start a fresh sandbox now, with new copies of the shared variables (a replay starts so);
        the notes about the copies (what was copied, and why some were not)."""
        return self.sandbox.restart()

    def shutdown(self) -> None:
        """Stop the sandbox's process now (the next ``run_python`` starts a fresh one)."""
        self.sandbox.shutdown()


def sandbox_tools(
    namespace: MutableMapping[str, Any],
    *,
    share: Sequence[str] = (),
    approval: bool = True,
    timeout: float | None = DEFAULT_TIMEOUT,
    cpu_seconds: float | None = DEFAULT_CPU_SECONDS,
    memory_mb: int | None = DEFAULT_MEMORY_MB,
) -> SandboxTools:
    """``run_python`` in a sandbox kernel seeded with copies of ``share``, and ``pull``.

    ``approval=False`` lets calls run without a decision (the default asks: the sandbox protects
    the notebook's variables, not the machine's files). ``timeout``, ``cpu_seconds`` bound each
    call; ``memory_mb`` the process. See ``docs/sandbox.md``.
    """
    share = _names(share)
    _check(timeout, "timeout")
    _check(cpu_seconds, "cpu_seconds")
    _check(memory_mb, "memory_mb")
    if not isinstance(approval, bool):
        raise UserError(f"approval must be True or False, not {approval!r}")
    limits = Limits(memory_mb * 2**20 if memory_mb else None, cpu_seconds)
    sandbox = Sandbox(namespace, share, limits, timeout)
    shared = ", ".join(share) if share else "none"
    run = Tool.from_function(
        _runner(sandbox),
        name="run_python",
        description=(
            "Run Python code in a sandbox: a separate Python kernel holding copies of the notebook's "
            f"variables ({shared}); changing them there does not change the notebook's. Variables persist "
            "between calls. Returns what a notebook cell shows: printed output, the last expression's value, "
            "an error with its traceback, and the names created or changed."
        ),
        requires_approval=approval,
    )
    pull = Tool.from_function(_puller(sandbox, namespace), name="pull", requires_approval=approval)
    return SandboxTools(sandbox, [run, pull])


def _runner(sandbox: Sandbox) -> Any:
    async def run_python(code: str, ctx: ToolContext) -> str:
        """Run Python code in the sandbox kernel.

        Args:
            code: Python statements; the value of the last line is shown, as in a notebook cell
        """
        cancelled = threading.Event()
        try:
            result = await asyncio.to_thread(sandbox.run, code, cancelled)
        except asyncio.CancelledError:  # the agent's tool_timeout, or Stop: interrupt the code
            cancelled.set()
            raise
        ctx.images.extend(result.images)
        ctx.structured = result.data()
        return result.text()

    return run_python


def _puller(sandbox: Sandbox, namespace: MutableMapping[str, Any]) -> Any:
    def pull(name: str, as_name: str = "") -> str:
        """Copy a variable from the sandbox into the notebook (a new notebook variable; none is replaced).

        Args:
            name: the sandbox variable's name
            as_name: the notebook variable's name (default: the same name)
        """
        target = as_name or name
        if not target.isidentifier() or keyword.iskeyword(target) or target.startswith("_"):
            raise ValueError(f"as_name must be a variable name (not private), not {target!r}")
        if target in namespace:
            raise ValueError(f"the notebook already has {target!r}: pass another as_name (nothing was replaced)")
        value = sandbox.pull(name)
        namespace[target] = value
        return f"The notebook now has {target}: {summary(value)}"

    return pull


def _names(share: Sequence[str]) -> tuple[str, ...]:
    if isinstance(share, str):
        share = [share]
    bad = [n for n in share if not isinstance(n, str) or not n.isidentifier() or keyword.iskeyword(n)]
    if bad:
        raise UserError(f"share takes the names of the notebook's variables, not {', '.join(map(repr, bad))}")
    return tuple(dict.fromkeys(share))


def _check(value: Any, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
        raise UserError(f"{name} must be a number > 0 or None, not {value!r}")
