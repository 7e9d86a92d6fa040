"""``kernel_tools("sandbox", share=[...])``: ``run_python`` in a separate kernel process.

Layer: inside :mod:`agentnb.kernel`; imports the tools, the messages and jupyter_client (lazily,
when the first call starts the kernel). See ``docs/sandbox.md`` for what the process boundary
isolates and what it does not.

* :mod:`~agentnb.kernel.sandbox.toolset` -- the tools and :class:`SandboxTools` (pull, restart,
  shutdown for the person);
* :mod:`~agentnb.kernel.sandbox.sandbox` -- start when first needed, seed, restart a dead one;
* :mod:`~agentnb.kernel.sandbox.process` -- one kernel process: start under limits, execute,
  interrupt; :mod:`~agentnb.kernel.sandbox.launch` its command; :mod:`~agentnb.kernel.sandbox.inside`
  the helper loaded into it;
* :mod:`~agentnb.kernel.sandbox.copying` -- pickles across the boundary;
* :mod:`~agentnb.kernel.sandbox.results` -- what a code step showed, as a cell shows it.

>>> tools = sandbox_tools({"n": 41}, share=["n"], approval=False)
>>> tools.sandbox.run("n + 1").value
'42'
>>> tools.shutdown()
"""

from agentnb.kernel.sandbox.process import SandboxError
from agentnb.kernel.sandbox.results import CodeError, CodeResult
from agentnb.kernel.sandbox.toolset import SandboxTools, sandbox_tools

__all__ = ["CodeError", "CodeResult", "SandboxError", "SandboxTools", "sandbox_tools"]
