"""The store's file: one SQLite database, checked before anything is read or written.

A store is a SQLite file in WAL mode (readers never block the writer; several processes may
write, each waiting up to :data:`BUSY_MS` for another's transaction). It is recognised by its
``application_id`` and its schema by ``user_version``: a file of another program, of another
schema version, or not a database at all raises :class:`~agentnb.errors.TranscriptError` naming
the file, and is never written over.

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "runs.sqlite")
>>> connect(path, create=True).execute("SELECT count(*) FROM runs").fetchone()
(0,)
>>> with open(path, "r+b") as f:
...     _ = f.write(b"not a database, whatever it was")
>>> connect(path)
Traceback (most recent call last):
...
agentnb.errors.TranscriptError: ...runs.sqlite: not a store of runs: file is not a database
"""

from __future__ import annotations

import os
import sqlite3

from agentnb.errors import TranscriptError, UserError

#: ``PRAGMA application_id`` of a store of runs ("anbr"): a SQLite file without it is not ours.
APPLICATION_ID = 0x616E6272
#: ``PRAGMA user_version``: the layout of the tables below. A store of another version is refused.
SCHEMA_VERSION = 1
#: How long a write waits for another process's transaction before it fails, in milliseconds.
BUSY_MS = 30_000

#: The columns of ``runs`` that a view and ``.table`` read (the transcript is in its own table,
#: so that a scan or a count over 100,000 runs never reads a transcript).
COLUMNS = (
    "id", "started", "agent", "model", "prompt", "answer", "stop_reason", "tools", "tool_calls",
    "cost", "tokens", "duration", "good", "expected", "note", "labels", "parent", "conversation",
)  # fmt: skip

#: What ``where(label=...)`` takes, and the SQL each means.
LABELS = {"good": "good = 1", "bad": "good = 0", "labelled": "labels != '[]'", "unlabelled": "labels = '[]'"}

_TABLES = """
CREATE TABLE runs (
    n INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    started REAL NOT NULL,
    agent TEXT,
    model TEXT,
    prompt TEXT,
    answer TEXT NOT NULL,
    stop_reason TEXT NOT NULL,
    tools TEXT NOT NULL,
    tool_calls INTEGER NOT NULL,
    cost REAL,
    tokens INTEGER NOT NULL,
    duration REAL NOT NULL,
    good INTEGER,
    expected TEXT,
    note TEXT,
    labels TEXT NOT NULL DEFAULT '[]',
    parent TEXT,
    conversation TEXT
);
CREATE TABLE transcripts (n INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE INDEX runs_started ON runs(started);
CREATE INDEX runs_agent ON runs(agent, started);
CREATE INDEX runs_model ON runs(model, started);
CREATE INDEX runs_stop ON runs(stop_reason, started);
CREATE INDEX runs_good ON runs(good, started);
CREATE INDEX runs_parent ON runs(parent);
"""


def connect(path: str | os.PathLike[str], *, create: bool = False) -> sqlite3.Connection:
    """A connection to the store at ``path``, its version checked; ``create`` makes a new store
    where there is no file (or an empty one). Autocommit: callers open their own transactions."""
    where = os.fspath(path)
    fresh = not os.path.exists(where) or os.path.getsize(where) == 0
    if fresh and not create:
        raise UserError(f"{where}: no store of runs here; agentnb.keep_runs({where!r}) starts one")
    try:
        conn = sqlite3.connect(where, timeout=BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise TranscriptError(f"{where}: cannot open the store of runs: {exc}") from None
    try:
        conn.execute(f"PRAGMA busy_timeout={BUSY_MS}")
        _check(conn, where, create)
        conn.execute("PRAGMA synchronous=NORMAL")  # WAL: a killed process loses no commit
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise TranscriptError(f"{where}: not a store of runs: {exc}") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _check(conn: sqlite3.Connection, where: str, create: bool) -> None:
    app, version = _ids(conn)
    if app == 0 and version == 0 and create:
        conn.execute("BEGIN IMMEDIATE")  # one process creates the tables; another waits, then sees them
        try:
            app, version = _ids(conn)
            if app == 0 and version == 0:
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise TranscriptError(_foreign(where))
                # statement by statement: executescript() would commit the open transaction first
                for statement in (*_TABLES.split(";"), f"PRAGMA application_id={APPLICATION_ID}"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            else:
                conn.execute("ROLLBACK")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("PRAGMA journal_mode=WAL")  # kept in the file: every later connection has it
        app, version = _ids(conn)
    if app != APPLICATION_ID:
        raise TranscriptError(_foreign(where))
    if version != SCHEMA_VERSION:
        raise TranscriptError(
            f"{where}: a store of runs of schema version {version}; this agentnb reads version "
            f"{SCHEMA_VERSION}. Open it with the agentnb that wrote it, or keep runs in a new file."
        )


def _ids(conn: sqlite3.Connection) -> tuple[int, int]:
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    return app, conn.execute("PRAGMA user_version").fetchone()[0]


def _foreign(where: str) -> str:
    return f"{where}: not a store of runs (a SQLite database of another program); agentnb never writes over it"
