"""The notebook's kernel as a tool source: tools that read its variables and cells, and run code.

Layer: beside :mod:`agentnb.mcp`, above :mod:`agentnb.tools`; may import the tools and errors;
only the package's face, the notebook (the ``@mention`` and ``--kernel`` in ``%agent``) and the
views of a code step (:mod:`~agentnb.kernel.highlight`, read by the trace and the diff) import it.

:func:`kernel_tools` (``agentnb.kernel_tools``) makes the tools; ``"read"`` mode has no side
effects: :mod:`~agentnb.kernel.names` reads a name (never an expression),
:mod:`~agentnb.kernel.summary` says what a value is in one line, :mod:`~agentnb.kernel.describe`
(and :mod:`~agentnb.kernel.frames`, :mod:`~agentnb.kernel.arrays` for pandas and numpy)
what a person would print, bounded (:mod:`~agentnb.kernel.bounded`);
:mod:`~agentnb.kernel.history` keeps the order names were defined in and reads the cells run;
:mod:`~agentnb.kernel.mentions` puts ``@name`` descriptions into a prompt. pandas, numpy and
IPython are never imported here: a value is recognised by its type's module first.

``"code"`` mode adds ``run_python`` (:mod:`~agentnb.kernel.run_tool`): the code runs on its own
thread (:mod:`~agentnb.kernel.code`, which stops it on a timeout or a Stop), its output captured
per thread (:mod:`~agentnb.kernel.capture`), and what it showed is a
:class:`~agentnb.kernel.results.CodeResult`, rendered for the model the same way in a sandbox.

>>> tools = kernel_tools("read", namespace={"x": 1})
>>> [t.name for t in tools]
['list_variables', 'describe', 'notebook_cells']
"""

from agentnb.kernel.names import KernelReadError
from agentnb.kernel.tools import kernel_tools

__all__ = ["KernelReadError", "kernel_tools"]
