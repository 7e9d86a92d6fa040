"""What ``_agent_result`` holds while a ``%agent --step`` run is still going.

``--step`` returns at once (the debugger waits for clicks), so the next cell must not read the
*previous* run's result by mistake. The variable is set at once to a :class:`PendingResult`:
its repr says the run is still going, reading an attribute raises :class:`RunPendingError`
saying what to do, and ``await _agent_result`` waits for the real :class:`~agentnb.RunResult`,
which replaces it in the variable when the run ends.

>>> class Paused:
...     state = "paused"
...     def __repr__(self):
...         return "Debugger(state='paused', pause=...)"
>>> p = PendingResult(Paused(), "_agent_result")
>>> p
<_agent_result: the --step run is still going (Debugger(state='paused', pause=...)); step or continue it with _agent_debugger, or await _agent_result>
>>> p.output
Traceback (most recent call last):
...
agentnb.notebook.magics.pending.RunPendingError: _agent_result.output: the --step run is still going (Debugger(state='paused', pause=...)); step or continue it with _agent_debugger, or await _agent_result
"""

from __future__ import annotations

from typing import Any


class RunPendingError(AttributeError):
    """A result was read before its run ended."""


class PendingResult:
    """Stands in for the result of a run that has not ended yet."""

    def __init__(self, debugger: Any, name: str) -> None:
        object.__setattr__(self, "_debugger", debugger)
        object.__setattr__(self, "_name", name)

    def _why(self) -> str:
        return (
            f"the --step run is still going ({self._debugger!r}); step or continue it with _agent_debugger, "
            f"or await {self._name}"
        )

    def __repr__(self) -> str:
        return f"<{self._name}: {self._why()}>"

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):  # IPython's display hooks and the like: a plain "no such attribute"
            raise AttributeError(attr)
        raise RunPendingError(f"{self._name}.{attr}: {self._why()}")

    def __bool__(self) -> bool:
        return False

    def __await__(self) -> Any:
        return self._debugger.wait().__await__()
