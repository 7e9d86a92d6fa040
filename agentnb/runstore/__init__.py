"""Runs kept and found: :func:`keep_runs` keeps every run of the process in a SQLite file,
:func:`runs` finds them (a table, search, filters, a trace, a diff, a fork, a dataset).

Layer: beside :mod:`agentnb.evaluation` and :mod:`agentnb.notebook` (its view opens their trace
and diff); it imports the run, its result and the events, and the evaluation reads a selection
of it through its ``to_cases()`` only. The store is a run watcher (:mod:`agentnb.tracing.observe`):
the loop never waits on the disk.

>>> import os, tempfile
>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> path = os.path.join(tempfile.mkdtemp(), "runs.sqlite")
>>> _ = keep_runs(path)
>>> _ = Agent(ScriptedProvider(["Paris."])).run("Capital of France?")
>>> kept = runs()
>>> len(kept), next(iter(kept)).output
(1, 'Paris.')
>>> keep_runs(None)
"""

from __future__ import annotations

import os
import threading
from typing import Any

from agentnb.errors import UserError
from agentnb.run.labels import on_label
from agentnb.runstore.query import Runs
from agentnb.runstore.store import Keeper, RunStore
from agentnb.tracing import observe

_KEEPER: Keeper | None = None
_LOCK = threading.Lock()
#: Whether :func:`label_kept` follows the labels given (once per process, on the first keep_runs).
_LABELS_FOLLOWED: list[bool] = []


def keep_runs(path: str | os.PathLike[str] | bool | None) -> Keeper | None:
    """Keep every run of this process, from now on, in the SQLite file ``path`` (created when
    missing); ``None`` or ``False`` stops keeping them. Off until turned on.

    Each run is written when it ends, by a background thread (the run never waits on the
    disk), with its whole transcript: prompts, answers, tool arguments and results, with
    secrets redacted as in a saved transcript. Runs of an agent used as a tool are kept inside
    their outer run. Several processes may keep runs in one file. Returns the
    :class:`~agentnb.runstore.store.Keeper` (``.flush()`` waits for the writes), or None.

    A file that is not a store of runs, or a store of another version, raises
    :class:`~agentnb.errors.TranscriptError` naming it; it is never written over.

    >>> keep_runs(None)  # nothing kept: nothing to stop
    """
    global _KEEPER
    if path is True or not (path is None or path is False or isinstance(path, (str, os.PathLike))):
        raise UserError(f"keep_runs() takes a file's path (or None to stop), not {path!r}")
    with _LOCK:
        new = Keeper(path) if isinstance(path, (str, os.PathLike)) else None  # a bad file: nothing changes
        if new is not None and not _LABELS_FOLLOWED:
            on_label(label_kept)  # a label given to any run from now on goes to the store too
            _LABELS_FOLLOWED.append(True)
        old, _KEEPER = _KEEPER, new
        if old is not None:
            observe.unwatch(old)
            old.close()
        if new is not None:
            observe.watch(new)
    return new


def keeping() -> Keeper | None:
    """The :class:`Keeper` that keeps this process's runs (None: runs are not kept)."""
    return _KEEPER


def label_kept(result: Any, label: Any) -> None:
    """Save a label given to ``result`` in the store runs are kept in (a no-op when none):
    a callback for ``agentnb.run.labels.on_label``. A run the store does not hold yet (run
    before keep_runs, or loaded from a transcript) is kept with its label."""
    keeper = _KEEPER
    if keeper is not None:
        keeper.add_label(result, label)


def runs(path: str | os.PathLike[str] | None = None, *, agent: Any = None) -> Runs:
    """The runs kept in ``path`` (by default the file :func:`keep_runs` writes), newest first.

    ``len(runs())``, iteration over :class:`~agentnb.RunResult` s, ``.table`` (a DataFrame),
    ``.where(...)`` / ``.search(text)`` to narrow, ``.to_dataset(path)``; in a notebook, a table
    with search and filters. ``agent``: the agent a fork of a kept run continues with.
    Runs still being written by this process are waited for.

    >>> import os, tempfile
    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> path = os.path.join(tempfile.mkdtemp(), "runs.sqlite")
    >>> _ = keep_runs(path)
    >>> Agent(ScriptedProvider(["Lyon."])).run("Capital of France?").label(good=False, expected="Paris.").good
    False
    >>> kept = runs()
    >>> len(kept), len(kept.where(label="bad")), kept.table["answer"].tolist()
    (1, 1, ['Lyon.'])
    >>> keep_runs(None)
    """
    keeper = _KEEPER
    if path is None:
        if keeper is None:
            raise UserError("no runs are kept: call agentnb.keep_runs('runs.sqlite') first, or give runs(path)")
        path = keeper.path
    where = os.fspath(path)
    if keeper is not None and os.path.abspath(keeper.path) == os.path.abspath(where):
        keeper.flush(timeout=30)
    selection = Runs(where, agent=agent)
    len(selection)  # the file is checked now: a missing, foreign or damaged store says so here
    return selection


__all__ = ["Keeper", "RunStore", "Runs", "keep_runs", "keeping", "label_kept", "runs"]
