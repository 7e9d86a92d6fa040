"""The ``run_python`` tool of ``kernel_tools("code")``: code in the user's namespace, approved first.

The tool is async: its code runs on a thread of its own (:class:`~agentnb.kernel.code.CodeRunner`)
while the run's event loop waits, so a timeout, the trace's Stop or the kernel's interrupt (each
cancels the call) stops the code, and the kernel goes on. It needs approval unless built with
``approval=False``. The result is what a cell shows (:mod:`agentnb.kernel.results`); a picture
value is attached to the call as an image; matplotlib figures the code drew and left open are
attached too, then closed (a cell's inline backend would otherwise show them under a later cell).

>>> import asyncio
>>> from agentnb.tools import ToolContext
>>> t = run_python_tool({"n": 4}, approval=False)
>>> t.requires_approval, t.name
(False, 'run_python')
>>> print(asyncio.run(t.fn("n ** 2", ToolContext("c1", "run_python", 0))))
value:
16
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from agentnb.errors import UserError
from agentnb.kernel.code import CODE_TIMEOUT, CodeRunner
from agentnb.kernel.results import render_code
from agentnb.tools import Tool, ToolContext
from agentnb.tools.rendering import as_image


def run_python_tool(namespace: Mapping[str, Any], *, approval: bool = True, timeout: float | None = None) -> Tool:
    """The ``run_python`` tool over ``namespace``."""
    if not isinstance(approval, bool):
        raise UserError(f"approval must be True or False, not {approval!r}")
    if timeout is None:
        timeout = CODE_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise UserError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if not isinstance(namespace, dict):  # exec() runs in a dict only
        raise UserError(f"kernel_tools('code') needs a dict namespace to run code in, not {type(namespace).__name__}")
    runner = CodeRunner(namespace)
    limit = float(timeout)

    async def run_python(code: str, ctx: ToolContext) -> str:
        """Run Python code in the notebook's kernel, as a cell: its variables are yours to read and change.

        Returns what the cell shows: printed output, the value of the last expression, an error
        with its traceback, and the names the code created or changed.

        Args:
            code: Python statements; a last expression's value is returned
        """
        figures = _open_figures()
        result = await runner.arun(code, limit)
        ctx.structured = result.structured()
        text = render_code(result, ctx)
        for figure in _new_figures(figures, result.value):
            image = as_image(figure)
            if image is not None:
                ctx.images.append(image)
                text += f"\nA figure the code drew is attached ({image.mime}, {len(image.data)} bytes)."
        return text

    return Tool.from_function(run_python, requires_approval=approval)


def _open_figures() -> set[int] | None:
    """The numbers of matplotlib's open figures, if pyplot is loaded."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    return set(pyplot.get_fignums()) if pyplot is not None else None


def _new_figures(before: set[int] | None, value: Any) -> list[Any]:
    """Figures opened by the code (not its value, which is attached already); closed once read."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return []
    shown = value if hasattr(value, "savefig") else getattr(value, "figure", None)
    out = []
    for number in pyplot.get_fignums():
        if before is not None and number in before:
            continue
        figure = pyplot.figure(number)
        if figure is not shown:
            out.append(figure)
        pyplot.close(figure)
    return out
