"""Finding kept runs: :class:`Runs`, a selection of a store that SQL narrows and Python reads.

``where(...)`` and ``search(...)`` each return a narrower selection (nothing is read until
asked); ``len()`` counts, iteration rebuilds each :class:`~agentnb.RunResult` from its stored
transcript (newest first), ``.table`` is a pandas DataFrame of the columns, and
``to_dataset(path)`` writes the labelled runs as cases that :func:`agentnb.evaluate` reads.

>>> import os, tempfile
>>> from agentnb import Agent
>>> from agentnb.runstore.store import RunStore
>>> from agentnb.testing import ScriptedProvider
>>> path = os.path.join(tempfile.mkdtemp(), "runs.sqlite")
>>> store = RunStore(path)
>>> a, b = (Agent(ScriptedProvider([x]), name="calc").run("2 + 2?") for x in ("4", "5"))
>>> _ = store.save([(a, 1.0), (b, 2.0)])
>>> _ = store.add_label(b.run_id, {"good": False, "expected": "4", "note": "off by one", "at": None})
>>> runs = Runs(path)
>>> len(runs), len(runs.where(label="bad")), len(runs.search("5")), [r.output for r in runs]
(2, 1, 1, ['5', '4'])
>>> runs.where(label="bad").to_cases()
[{'input': '2 + 2?', 'expected': '4', 'id': '...', 'run_id': '...', 'label': 'bad', 'note': 'off by one', 'agent': 'calc', 'model': 'scripted'}]
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from agentnb.errors import TranscriptError, UserError
from agentnb.run.result import RunResult
from agentnb.runstore.record import result_of_blob
from agentnb.runstore.schema import COLUMNS, LABELS, connect

#: Columns ``where`` compares for equality.
_EQUAL = ("agent", "model", "stop_reason", "parent", "conversation", "id")


@dataclass(frozen=True)
class Runs:
    """The runs of the store at ``path`` that match every clause, newest first.

    Built by :func:`agentnb.runs`; ``agent`` is given to each :class:`~agentnb.RunResult` read
    (a stored run has none), so that ``fork`` continues with it.
    """

    path: str
    clauses: tuple[str, ...] = ()
    params: tuple[Any, ...] = ()
    agent: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", os.fspath(self.path))

    # --- narrowing ------------------------------------------------------------------------

    def where(self, *, label: str | None = None, tool: str | None = None, since: Any = None,
              until: Any = None, **equal: Any) -> Runs:  # fmt: skip
        """The runs that also match: ``agent``, ``model``, ``stop_reason``, ``parent`` (a fork's
        run), ``conversation`` or ``id`` equal to the value given; ``label`` one of ``"good"``,
        ``"bad"``, ``"labelled"``, ``"unlabelled"``; ``tool`` a tool the run called; ``since`` /
        ``until`` a ``datetime``, an ISO date or a Unix time.

        >>> Runs("runs.sqlite").where(agent="calc", label="bad").clauses
        ('agent = ?', 'good = 0')
        """
        clauses, params = list(self.clauses), list(self.params)
        for name, value in equal.items():
            if name not in _EQUAL:
                raise UserError(
                    f"runs().where() has no {name!r}: give {', '.join(_EQUAL)}, label, tool, since or until"
                )
            clauses.append(f"{name} IS NULL" if value is None else f"{name} = ?")
            params += [] if value is None else [value]
        if label is not None:
            if label not in LABELS:
                raise UserError(f"label= is one of {', '.join(map(repr, LABELS))}, not {label!r}")
            clauses.append(LABELS[label])
        if tool is not None:
            clauses.append("EXISTS (SELECT 1 FROM json_each(runs.tools) WHERE value = ?)")
            params.append(tool)
        for name, value, op in (("since", since, ">="), ("until", until, "<")):
            if value is not None:
                clauses.append(f"started {op} ?")
                params.append(_timestamp(name, value))
        return replace(self, clauses=tuple(clauses), params=tuple(params))

    def search(self, text: str) -> Runs:
        """The runs whose prompt, answer, note or expected answer contain ``text`` (any case)."""
        if not isinstance(text, str):
            raise UserError(f"search() takes text, not {type(text).__name__}")
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        like = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in ("prompt", "answer", "note", "expected"))
        return replace(self, clauses=(*self.clauses, f"({like})"), params=(*self.params, *[pattern] * 4))

    # --- reading --------------------------------------------------------------------------

    def _sql(self, select: str, tail: str = "") -> tuple[str, tuple[Any, ...]]:
        where = f" WHERE {' AND '.join(self.clauses)}" if self.clauses else ""
        return f"SELECT {select} FROM runs{where}{tail}", self.params

    def _query(self, select: str, tail: str = "", extra: tuple[Any, ...] = ()) -> list[Any]:
        sql, params = self._sql(select, tail)
        conn = connect(self.path)
        try:
            return conn.execute(sql, (*params, *extra)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise TranscriptError(f"{self.path}: the store of runs cannot be read: {exc}") from None
        finally:
            conn.close()

    def __len__(self) -> int:
        return int(self._query("count(*)")[0][0])

    def rows(self, limit: int | None = None, offset: int = 0) -> list[dict[str, Any]]:
        """The selection's columns (no transcripts), newest first, as dicts."""
        tail = " ORDER BY started DESC, n DESC LIMIT ? OFFSET ?"
        got = self._query(", ".join(COLUMNS), tail, (-1 if limit is None else limit, offset))
        return [_row(dict(zip(COLUMNS, values, strict=True))) for values in got]

    def __iter__(self) -> Iterator[RunResult]:
        ids = [row[0] for row in self._query("n", " ORDER BY started DESC, n DESC")]
        for start in range(0, len(ids), 200):  # a few transcripts in memory at a time
            chunk = ids[start : start + 200]
            found = {n: (data, labels) for n, data, labels in self._transcripts(chunk)}
            for n in chunk:
                if n in found:
                    yield self._result(*found[n])

    def _transcripts(self, ns: list[int]) -> list[Any]:
        marks = ", ".join("?" * len(ns))
        sql = f"SELECT t.n, t.data, r.labels FROM transcripts t JOIN runs r ON r.n = t.n WHERE t.n IN ({marks})"
        conn = connect(self.path)
        try:
            return conn.execute(sql, ns).fetchall()
        except sqlite3.DatabaseError as exc:
            raise TranscriptError(f"{self.path}: the store of runs cannot be read: {exc}") from None
        finally:
            conn.close()

    def _result(self, data: bytes, labels: str) -> RunResult:
        result = result_of_blob(data, labels, self.path)
        return replace(result, agent=self.agent) if self.agent is not None else result

    def get(self, run_id: str) -> RunResult:
        """The stored run ``run_id``, as a :class:`RunResult`."""
        got = self.where(id=run_id)._query("n")
        if not got:
            raise UserError(f"{self.path}: no run {run_id!r} in this selection")
        return next(iter(self.where(id=run_id)))

    def __getitem__(self, i: int) -> RunResult:
        """The ``i``-th run of the selection, newest first (``runs[0]``: the latest)."""
        row = self.rows(limit=1, offset=i if i >= 0 else len(self) + i) if isinstance(i, int) else []
        if not row:
            raise IndexError(f"no run {i!r} in a selection of {len(self)}")
        return self.get(row[0]["id"])

    @property
    def table(self) -> Any:
        """A pandas DataFrame, one row per run, newest first: date, agent, model, prompt,
        answer, stop reason, tools, cost, tokens, label (and note, expected, id)."""
        import pandas as pd

        rows = self.rows()
        frame = pd.DataFrame(
            [{"date": r["date"], **{k: r[k] for k in _TABLE}} for r in rows], columns=["date", *_TABLE]
        )
        frame["date"] = pd.to_datetime(frame["date"])
        return frame

    def __repr__(self) -> str:
        return f"Runs({self.path!r}, {len(self)} runs)"

    # --- to a dataset ---------------------------------------------------------------------

    def to_cases(self) -> list[dict[str, Any]]:
        """The labelled runs of the selection as cases (what :func:`agentnb.evaluate` reads):
        ``input`` the prompt, ``expected`` the label's expected answer (else the answer of a run
        labelled good), ``id`` and ``run_id`` the run's id, ``label`` and ``note`` the label.
        A run labelled bad without an expected answer has nothing to compare with: left out.

        A run a person steered (:class:`~agentnb.Inbox`) was asked more than its prompt: the
        case's input is the prompt followed by what they said, in order, and ``steered`` lists it.
        """
        cases = [c for c in map(labelled_case, self.where(label="labelled").rows()) if c is not None]
        for case in cases:
            said = [e.text for e in self.get(case["run_id"]).events if e.kind == "user_interjected"]  # type: ignore[attr-defined]
            if said:
                case["input"] = "\n\n".join([case["input"], *said])
                case["steered"] = said
        return cases

    def to_dataset(self, path: str | os.PathLike[str], where: Mapping[str, Any] | None = None) -> int:
        """Write :meth:`to_cases` (of the runs that also match ``where``, :meth:`where`'s
        keywords as a dict) to the JSONL file ``path``; returns how many cases it holds.

        The file is written whole, then renamed over ``path``.
        """
        selection = self.where(**where) if where else self
        cases = selection.to_cases()
        target = os.fspath(path)
        tmp = f"{target}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            for case in cases:
                f.write(json.dumps(case, ensure_ascii=False) + "\n")
        os.replace(tmp, target)
        return len(cases)

    # --- in a notebook --------------------------------------------------------------------

    def view(self, agent: Any = None) -> Any:
        """The selection as a widget: a table with a search box and filters; a row opens its
        trace or a fork, two rows their diff (see :mod:`agentnb.runstore.view`). ``agent``: who
        continues a fork (a stored run has no agent)."""
        from agentnb.runstore.view import RunsView

        return RunsView(self if agent is None else replace(self, agent=agent))

    def _ipython_display_(self) -> None:
        self.view()._ipython_display_()


_TABLE = ("agent", "model", "prompt", "answer", "stop_reason", "tools", "cost", "tokens", "label", "note",
          "expected", "id")  # fmt: skip


def _row(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row as a view reads it: tools a list, the label a word, the date a datetime."""
    row["tools"] = ", ".join(json.loads(row["tools"]))
    row["label"] = {None: None, 1: "good", 0: "bad"}[row["good"]]
    row["date"] = dt.datetime.fromtimestamp(row["started"]).replace(microsecond=0)
    return row


def _timestamp(name: str, value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise UserError(f"{name}={value!r}: give an ISO date such as '2026-12-07' or '2026-12-07T15:00'") from None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if isinstance(value, dt.datetime):
        return value.timestamp()
    raise UserError(f"{name}= takes a datetime, an ISO date or a Unix time, not {type(value).__name__}")


def labelled_case(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The case a labelled row makes (None: nothing to expect): the prompt as input, the label's
    expected answer (else, for a run labelled good, its answer) as expected."""
    expected = row["expected"]
    if expected is None and row["good"] == 1:
        expected = row["answer"]
    if expected is None or row["prompt"] is None:
        return None
    return {
        "input": row["prompt"],
        "expected": expected,
        "id": row["id"],
        "run_id": row["id"],
        "label": row["label"],
        "note": row["note"],
        "agent": row["agent"],
        "model": row["model"],
    }
