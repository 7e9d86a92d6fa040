"""The step-through debugger: a :class:`~agentnb.notebook.debugger.stepper.Stepper` with its widget.

Pause before each model call and each tool call; Step, Continue, Skip tool, Edit arguments or
Stop, with the buttons or from Python (how tests and executed notebooks drive it)::

    dbg = Debugger(agent).start("What is 2 + 3?")
    dbg                       # shows the trace with the control bar
    await dbg.next_pause()    # Pause(target='model', depth=0)
    dbg.step()                # let the model call happen
    pause = await dbg.next_pause()
    dbg.edit({"a": 2, "b": 40})  # run the tool with other arguments (checked against its schema)
    dbg.continue_()           # no more pauses
    result = await dbg.wait()

The model (:mod:`~agentnb.notebook.debugger.stepper`) knows nothing of the view
(:mod:`~agentnb.notebook.debugger.view`); this module puts the two together.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> Debugger(Agent(ScriptedProvider(["hi"])), widget=False)
Debugger(state='idle')
"""

from __future__ import annotations

from typing import Any

from agentnb.notebook.debugger.stepper import Pause, Stepper
from agentnb.run.agent import Agent

__all__ = ["Debugger", "Pause"]


class Debugger(Stepper):
    """Step through an agent run.

    Args:
        agent: the agent to run.
        widget: build the trace widget and control bar (needs ipywidgets); False for a
            headless debugger driven only from Python.
    """

    def __init__(self, agent: Agent, *, widget: bool = True) -> None:
        super().__init__(agent)
        self.view: Any = None
        if widget:
            from agentnb.notebook.debugger.view import DebuggerView

            self.view = DebuggerView(self)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        if self.view is None:
            return {"text/plain": repr(self)}
        return self.view._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        """``dbg`` as a cell's value: the view, shown so that it is replaced by its static form
        when the run ends (as an ``Out[n]`` value it could not be, and a reopened notebook said
        "Error displaying widget: model not found")."""
        if self.view is None:
            from IPython.display import display

            display({"text/plain": repr(self)}, raw=True)
            return
        self.view._ipython_display_()

    @property
    def trace(self) -> Any:
        """The :class:`~agentnb.notebook.trace.widget.TraceWidget` (None without a widget)."""
        return None if self.view is None else self.view.trace
