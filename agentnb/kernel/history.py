"""What the kernel remembers: the order variables were defined in, and the cells run.

**Definition order.** In IPython a ``post_run_cell`` hook (:class:`DefinitionOrder`, added once
per shell by :func:`track` when ``%load_ext agentnb`` runs or kernel tools are first made)
notes after each cell which names are new or bound to another object (``x = ...`` again,
``x += 1``), comparing ``id`` s: one pass over the namespace, about 1 ms for 10,000 names.
A name rebound in a later cell moves to the front. Names defined before tracking began, and any
namespace outside IPython, keep the namespace's own order reversed (the last added first).
Changing an object in place (``rows.append(...)``) does not move it.

**Cells.** :func:`cells` reads a cell's source as typed (IPython's raw input history; ``In``
where there is no shell) and its value from ``Out``; an exception a cell raised is noted by the
same hook; the cell running now (the one whose ``%agent`` asks) is not one of the cells run.
What a cell printed is not kept by IPython, so it is not shown.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Mapping
from typing import Any

from agentnb.kernel.bounded import clip, plain
from agentnb.kernel.summary import short

#: Characters of one cell's source shown.
SOURCE_CHARS = 2_000
#: Characters of one cell's output shown.
OUTPUT_CHARS = 300
_TRACKERS: weakref.WeakKeyDictionary[Any, DefinitionOrder] = weakref.WeakKeyDictionary()


class DefinitionOrder:
    """When each name of a namespace was last (re)bound, as a cell count; and cells' errors.

    >>> ns = {"a": 1, "b": 2}
    >>> order = DefinitionOrder(ns)
    >>> ns["a"] = 3
    >>> order.update()
    >>> order.newest_first(["a", "b"])
    ['a', 'b']
    """

    def __init__(self, namespace: Mapping[str, Any]) -> None:
        self.namespace = namespace
        self._ids = {name: id(value) for name, value in list(namespace.items())}
        self._stamps: dict[str, int] = {}
        self._clock = itertools.count(1)
        #: Cell number -> "ExceptionType: message" for cells that raised.
        self.errors: dict[int, str] = {}
        #: The source of the cell running now (between ``pre_run_cell`` and ``post_run_cell``).
        self.running: str | None = None

    def started(self, info: Any = None) -> None:
        """A cell starts (the ``pre_run_cell`` hook): it is not among the cells run until it ends."""
        self.running = getattr(info, "raw_cell", None)

    def update(self, result: Any = None) -> None:
        """Note names new or rebound since the last cell (the ``post_run_cell`` hook)."""
        self.running = None
        stamp = next(self._clock)
        ids = self._ids
        current = list(self.namespace.items())
        for name, value in current:
            if ids.get(name) != id(value):
                ids[name] = id(value)
                self._stamps[name] = stamp
        if len(ids) > len(current):  # names deleted: forget them
            alive = {name for name, _ in current}
            for name in [n for n in ids if n not in alive]:
                ids.pop(name)
                self._stamps.pop(name, None)
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        count = getattr(getattr(result, "info", None), "execution_count", None) or getattr(
            result, "execution_count", None
        )
        if error is not None and isinstance(count, int):
            self.errors[count] = _error_text(error)

    def newest_first(self, names: list[str]) -> list[str]:
        """``names`` (in namespace order) with the most recently bound first."""
        stamps = self._stamps
        ranked = sorted(enumerate(names), key=lambda p: (stamps.get(p[1], 0), p[0]), reverse=True)
        return [name for _, name in ranked]


def track(shell: Any) -> DefinitionOrder:
    """The shell's :class:`DefinitionOrder`, made and hooked to ``post_run_cell`` the first time."""
    tracker = _TRACKERS.get(shell)
    if tracker is None or tracker.namespace is not shell.user_ns:
        tracker = DefinitionOrder(shell.user_ns)
        _TRACKERS[shell] = tracker
        shell.events.register("pre_run_cell", tracker.started)
        shell.events.register("post_run_cell", tracker.update)
    return tracker


def tracker_for(shell: Any) -> DefinitionOrder | None:
    """The shell's tracker if one was made (see :func:`track`)."""
    return _TRACKERS.get(shell) if shell is not None else None


def cells(sources: Any, outputs: Any, last: int, running: str | None, errors: Mapping[int, str]) -> str:
    """The last ``last`` cells run: source, value, error (``running``: the source of the cell
    running now, left out while it runs)."""
    if not isinstance(sources, list) or not isinstance(outputs, dict):
        raise LookupError("no cell history here: notebook_cells reads IPython's In and Out, and this is not a kernel")
    end = len(sources)
    if running is not None and end and sources[-1] == running:
        end -= 1
    numbers = [n for n in range(max(1, end - last), end) if isinstance(sources[n], str)]
    if not numbers:
        return "no cells have been run yet"
    parts = []
    for n in numbers:
        text = f"[{n}]:\n{clip(plain(sources[n].rstrip()), SOURCE_CHARS)}"
        if n in outputs:
            text += f"\nout[{n}]: {short(outputs[n], OUTPUT_CHARS)}"
        if n in errors:
            text += f"\nerror[{n}]: {clip(errors[n], OUTPUT_CHARS)}"
        parts.append(text)
    return "\n\n".join(parts) + "\n\n(printed output is not kept by IPython, so it is not shown)"


def _error_text(error: BaseException) -> str:
    try:
        message = str(error)
    except Exception:
        message = "<unprintable>"
    return plain(f"{type(error).__name__}: {message}" if message else type(error).__name__)
