"""Writing runs into a store: :class:`RunStore` (writes now) and :class:`Keeper` (writes later,
on its own thread, for :func:`agentnb.keep_runs`).

A :class:`Keeper` is a run watcher (:mod:`agentnb.tracing.observe`): a finished run's
:class:`~agentnb.RunResult` is put on a queue and the loop goes on; a background thread turns
each into a row (the transcript redacted, serialized and compressed there, not on the loop's
path) and commits what the queue holds in one transaction. It is flushed at exit.

>>> import os, tempfile
>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> store = RunStore(os.path.join(tempfile.mkdtemp(), "runs.sqlite"))
>>> r = Agent(ScriptedProvider(["4"])).run("2 + 2?")
>>> store.save([(r, 0.0)])  # returns the runs it could not write
[]
>>> store.add_label(r.run_id, {"good": False, "expected": "four", "note": None, "at": None})
True
>>> store.connection().execute("SELECT answer, good, expected FROM runs").fetchall()
[('4', 0, 'four')]
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Sequence
from typing import Any

from agentnb.runstore.record import label_dict, row_of, transcript_blob
from agentnb.runstore.schema import COLUMNS, connect

log = logging.getLogger("agentnb")

_INSERT_RUN = (
    f"INSERT INTO runs ({', '.join(COLUMNS)}) VALUES ({', '.join(':' + c for c in COLUMNS)}) "
    "ON CONFLICT(id) DO NOTHING RETURNING n"
)


class RunStore:
    """The store at ``path`` (created when missing), written in the caller's thread."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._conn: sqlite3.Connection | None = connect(self.path, create=True)

    def connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.path, create=True)
        return self._conn

    def save(self, runs: Sequence[tuple[Any, float]], labels: Sequence[tuple[str, Any, Any]] = ()) -> list[str]:
        """Write ``(result, started)`` pairs, then ``(run id, label, result)`` labels, in one
        transaction; returns why each run that could not be written was not (none: [])."""
        prepared, failed = [], []
        for r, started in runs:  # rows and transcripts are made before the write lock is taken
            try:
                prepared.append((row_of(r, started), transcript_blob(r)))
            except Exception as exc:
                failed.append(f"run {getattr(r, 'run_id', None)}: {type(exc).__name__}: {exc}")
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            for row, blob in prepared:
                _insert(conn, row, blob)
            for run_id, label, result in labels:
                if not _label(conn, run_id, label) and result is not None:  # a run not kept yet
                    _insert(conn, row_of(result, time.time() - result.duration, [label]), transcript_blob(result))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return failed

    def add_label(self, run_id: str, label: Any) -> bool:
        """Add ``label`` (an ``agentnb.Label`` or a dict of its fields) to the stored run
        ``run_id``; False when the store holds no such run."""
        label = label_dict(label)
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            found = _label(conn, run_id, label)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return found

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _insert(conn: sqlite3.Connection, row: dict[str, Any], blob: bytes) -> None:
    got = conn.execute(_INSERT_RUN, row).fetchone()
    if got is not None:  # a new run (a run kept twice keeps its first row)
        conn.execute("INSERT INTO transcripts (n, data) VALUES (?, ?)", (got[0], blob))


def _label(conn: sqlite3.Connection, run_id: str, label: Any) -> bool:
    label = label_dict(label)
    got = conn.execute("SELECT labels FROM runs WHERE id = ?", (run_id,)).fetchone()
    if got is None:
        return False
    labels = json.loads(got[0])
    if label in labels:  # already kept (the run was written after it was labelled): each label once
        return True
    labels.append(label)
    good = label["good"]
    conn.execute(
        "UPDATE runs SET labels = ?, good = ?, expected = ?, note = ? WHERE id = ?",
        (json.dumps(labels, ensure_ascii=False), None if good is None else int(good), label["expected"],
         label["note"], run_id),
    )  # fmt: skip
    return True


class _Taker:
    """What a Keeper gives each run: events ignored, the finished result queued."""

    __slots__ = ("put",)

    def __init__(self, put: Any) -> None:
        self.put = put

    def __call__(self, event: Any) -> None:
        pass

    def take_run_result(self, result: Any) -> None:
        self.put(("run", result, time.time() - result.duration))


class Keeper:
    """Keeps every run of the process in the store at ``path``, written by a background thread."""

    #: At most this many queued items are written in one transaction.
    BATCH = 256

    def __init__(self, path: str | os.PathLike[str]) -> None:
        checked = RunStore(path)  # a bad file fails here, in the caller's thread, not later
        checked.close()
        self.path = checked.path
        self.kept = 0
        self.errors: list[str] = []
        self._queue: queue.Queue[Any] = queue.Queue()
        self._taker = _Taker(self._queue.put)
        self._thread = threading.Thread(target=self._work, name="agentnb-keep-runs", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def __repr__(self) -> str:
        return f"<agentnb keep_runs {self.path!r}: {self.kept} runs kept by this process>"

    def start(self, first: Any) -> _Taker:  # a watcher (agentnb.tracing.observe)
        return self._taker

    def add_label(self, result_or_id: Any, label: Any) -> None:
        """Queue a label for a run (its id, or its RunResult: kept with the label if it was not)."""
        result = None if isinstance(result_or_id, str) else result_or_id
        run_id = result_or_id if result is None else result.run_id
        self._queue.put(("label", (run_id, label_dict(label), result), None))

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every run queued so far is written (False: ``timeout`` seconds passed)."""
        done = threading.Event()
        self._queue.put(("flush", done, None))
        return done.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Write what is queued, then stop the thread (at exit, or when keep_runs changes)."""
        atexit.unregister(self.close)
        if self._thread.is_alive():
            self._queue.put(("stop", None, None))
            self._thread.join(timeout)

    def _work(self) -> None:
        conn_store = RunStore(self.path)  # this thread's own connection to the same file
        running = True
        while running:
            batch = [self._queue.get()]
            while len(batch) < self.BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            runs = [(r, started) for kind, r, started in batch if kind == "run"]
            labels = [item for kind, item, _ in batch if kind == "label"]
            self._write(conn_store, runs, labels)
            for kind, item, _ in batch:
                if kind == "flush":
                    item.set()
                running = running and kind != "stop"
        conn_store.close()

    def _write(self, store: RunStore, runs: list[Any], labels: list[Any]) -> None:
        if not runs and not labels:
            return
        for attempt in range(3):  # a lock held past the busy timeout: try again before giving up
            try:
                failed = store.save(runs, labels)
                self.kept += len(runs) - len(failed)
                for why in failed:
                    self._failed(1, why)
                return
            except sqlite3.OperationalError as exc:
                if attempt == 2 or "locked" not in str(exc):
                    self._failed(len(runs), exc)
                    return
            except Exception as exc:  # never break the process over its runs
                self._failed(len(runs), exc)
                return

    def _failed(self, n: int, exc: Exception | str) -> None:
        why = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        message = f"{self.path}: {n} runs could not be kept: {why}"
        self.errors.append(message)
        log.error("agentnb: %s", message)
