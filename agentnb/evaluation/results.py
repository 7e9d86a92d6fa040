"""Rows out: :class:`Evaluation` holds one row per case × agent × repeat, and reads them back.

``table`` (pandas), ``summary()`` per agent, ``compare()`` for two agents (paired per case,
:mod:`.compare`), ``run(i)`` for the whole transcript of row ``i`` (from memory, or from the log).
Memory holds rows; with a log the transcripts stay on disk.

>>> ev = Evaluation(["a"], ["ok"])
>>> ev.add({"key": "1|a|0", "index": 0, "case": "1", "agent": "a", "repeat": 0, "passed": True,
...         "scores": {"ok": True}, "latency": 0.5, "error": None})
>>> ev.summary()[["agent", "n", "passed", "pass_rate"]].values.tolist()
[['a', 1, 1, 1.0]]
"""

from __future__ import annotations

import os
from typing import Any

from agentnb.errors import UserError
from agentnb.evaluation.compare import Comparison, compare_rows
from agentnb.evaluation.stats import percentile, wilson

#: Columns of ``Evaluation.table`` before the score columns and after them (then metadata).
FIRST = ["case", "agent", "repeat", "input", "output", "value", "expected"]
AFTER = [
    "passed",
    "stop_reason",
    "tool_calls",
    "tools",
    "model_calls",
    "input_tokens",
    "output_tokens",
    "latency",
    "queue_wait",
    "error",
    "scorer_errors",
    "run_id",
]


class Evaluation:
    """The result of :func:`agentnb.evaluate`: rows, a table, a summary and each row's trace.

    >>> from agentnb import Agent, evaluate
    >>> from agentnb.testing import ScriptedProvider
    >>> ev = evaluate(Agent(ScriptedProvider(["4"])), [{"input": "2 + 2?", "expected": "4"}], scorers=["exact"],
    ...               progress=False)
    >>> ev.table[["output", "exact", "passed"]].values.tolist(), ev.run(0).stop_reason
    ([['4', True, True]], 'answer')
    """

    def __init__(
        self,
        agents: list[str],
        scorers: list[str],
        *,
        log: str | os.PathLike[str] | None = None,
        output_types: dict[str, Any] | None = None,
    ) -> None:
        self.agents = agents
        self.scorers = scorers
        self.log = os.fspath(log) if log is not None else None
        self.output_types = output_types or {}
        self.rows: list[dict[str, Any]] = []
        self.keys: set[str] = set()
        self.stopped = False
        self.resumed = 0  # rows read back from the log instead of run
        self._offsets: dict[str, int] = {}
        self._results: dict[str, Any] = {}

    @classmethod
    def load(cls, log: str | os.PathLike[str]) -> Evaluation:
        """An evaluation read back from its log alone (after a restart), without its agents.

        Rows, table, summary, comparison and each row's trace, as the evaluation that wrote the
        log had them (a structured answer comes back as the JSON it was written as). A case
        logged more than once (resumed) shows once; a case lost to the infrastructure (a dead
        Ray worker) shows as the error it was, unless a later run of it is in the log.

        >>> import os, tempfile
        >>> from agentnb import Agent, evaluate
        >>> from agentnb.testing import ScriptedProvider
        >>> log = os.path.join(tempfile.mkdtemp(), "runs.jsonl")
        >>> _ = evaluate(Agent(ScriptedProvider(["4"])), ["2 + 2?"], scorers=["contains"], log=log, progress=False)
        >>> ev = Evaluation.load(log)
        >>> ev.agents, ev.scorers, ev.run(0).output
        (['agent'], ['contains'], '4')
        """
        from agentnb.evaluation.log import read_log

        path = os.fspath(log)
        if not os.path.isfile(path):
            raise UserError(f"no evaluation log at {path!r}")
        chosen: dict[str, tuple[dict[str, Any], int]] = {}
        for row, offset in read_log(path):
            key = row["key"]
            if key not in chosen or (chosen[key][0].get("lost") and not row.get("lost")):
                chosen[key] = (row, offset)
        agents = list(dict.fromkeys(str(r.get("agent")) for r, _ in chosen.values()))
        scorers = list(dict.fromkeys(k for r, _ in chosen.values() for k in r.get("scores") or {}))
        ev = cls(agents, scorers, log=path)
        for row, offset in chosen.values():
            ev.add(row, offset=offset)
        ev.resumed = len(ev.rows)
        return ev

    def add(self, row: dict[str, Any], *, result: Any = None, offset: int | None = None) -> None:
        """Keep a finished row (and its transcript's place: in memory without a log, else its log offset)."""
        self.rows.append(row)
        self.keys.add(row["key"])
        if offset is not None:
            self._offsets[row["key"]] = offset
        if result is not None:
            self._results[row["key"]] = result

    def adopt(self, row: dict[str, Any], source: Evaluation) -> None:
        """Keep a row of ``source`` here too, with its transcript (an evaluation assembled from
        several, such as a stopped one and the rest of it run later)."""
        key = row["key"]
        offset = source._offsets.get(key) if source.log == self.log else None
        self.add(row, result=source._results.get(key), offset=offset)

    def __len__(self) -> int:
        return len(self.rows)

    def _ordered(self) -> list[dict[str, Any]]:
        order = {a: i for i, a in enumerate(self.agents)}
        return sorted(
            self.rows, key=lambda r: (r.get("index", 0), order.get(str(r.get("agent")), 0), r.get("repeat", 0))
        )

    @property
    def table(self) -> Any:
        """A pandas DataFrame: one row per case × agent × repeat, in dataset order."""
        import pandas as pd

        records = []
        for r in self._ordered():
            rec = {k: r.get(k) for k in FIRST}
            for name in self.scorers:
                rec[name] = r.get("scores", {}).get(name)
            rec.update({k: r.get(k) for k in AFTER})
            rec["scorer_errors"] = rec["scorer_errors"] or None
            for k, v in (r.get("metadata") or {}).items():
                rec[k if k not in rec else f"meta_{k}"] = v
            records.append(rec)
        return pd.DataFrame.from_records(records, columns=None if records else FIRST + self.scorers + AFTER)

    def summary(self) -> Any:
        """Per agent: cases, pass rate with its 95% Wilson interval, mean scores, tokens, latency, errors.

        A DataFrame with exact values, shown rounded (:mod:`agentnb.evaluation.summary`).
        """
        from agentnb.evaluation.summary import Summary

        out = []
        for agent in self.agents:
            rows = [r for r in self.rows if r.get("agent") == agent]
            n, passed = len(rows), sum(1 for r in rows if r.get("passed"))
            lo, hi = wilson(passed, n)
            rec: dict[str, Any] = {
                "agent": agent,
                "n": n,
                "passed": passed,
                "pass_rate": passed / n if n else float("nan"),
                "ci_low": lo,
                "ci_high": hi,
            }
            for name in self.scorers:
                vals = [float(v) for r in rows if (v := r.get("scores", {}).get(name)) is not None]
                rec[f"mean_{name}"] = sum(vals) / len(vals) if vals else float("nan")
            rec["input_tokens"] = sum(r.get("input_tokens") or 0 for r in rows)
            rec["output_tokens"] = sum(r.get("output_tokens") or 0 for r in rows)
            lat = [r["latency"] for r in rows if r.get("latency") is not None]
            rec["latency_p50"] = percentile(lat, 50)
            rec["latency_p95"] = percentile(lat, 95)
            rec["queue_wait_p50"] = percentile([r.get("queue_wait") or 0.0 for r in rows], 50)
            rec["errors"] = sum(1 for r in rows if r.get("error"))
            rec["scorer_errors"] = sum(len(r.get("scorer_errors") or {}) for r in rows)
            out.append(rec)
        return Summary.from_records(out)

    def compare(self, a: str | None = None, b: str | None = None) -> Comparison:
        """Pair agent ``a``'s and ``b``'s rows per case: which is better, and whether significantly.

        One run per case: McNemar's exact test. With repeats, each case's pass rate over its
        repeats, and the exact sign test (see :mod:`agentnb.evaluation.compare`).
        """
        if a is None or b is None:
            if len(self.agents) < 2:
                raise UserError("compare() needs two agents: evaluate a dict {name: agent} of at least two")
            a = a or self.agents[0]
            b = b or next(x for x in self.agents if x != a)
        for name in (a, b):
            if name not in self.agents:
                raise UserError(f"no agent {name!r} in this evaluation (agents: {self.agents})")
        if a == b:
            raise UserError(f"compare() needs two different agents, not {a!r} twice")
        return compare_rows(self.rows, a, b)

    def run(self, i: int) -> Any:
        """The whole :class:`~agentnb.run.result.RunResult` of ``table`` row ``i`` (from memory or the log)."""
        rows = self._ordered()
        if not -len(rows) <= i < len(rows):
            raise UserError(f"row {i} is out of range: the table has {len(rows)} rows")
        row = rows[i]
        key = row["key"]
        if key in self._results:
            return self._results[key]
        if key in self._offsets and self.log is not None:
            from agentnb.errors import TranscriptError
            from agentnb.evaluation.log import line_at, load_transcript_at
            from agentnb.run.result import RunResult

            data = load_transcript_at(self.log, self._offsets[key])
            if data is not None:
                try:
                    return RunResult.from_dict(data, output_type=self.output_types.get(row["agent"]))
                except TranscriptError as exc:
                    line = line_at(self.log, self._offsets[key])
                    raise TranscriptError(f"evaluation log {self.log}, line {line}: transcript: {exc}") from None
        raise UserError(f"row {i} has no transcript kept (evaluate with log=... to keep them on disk)")

    def diff(self, case: Any, a: str | None = None, b: str | None = None, repeat: int = 0) -> Any:
        """The :class:`~agentnb.RunDiff` of two agents' runs of ``case`` (its id, or its index).

        ``a`` and ``b`` default to the first two agents; the runs' transcripts must be kept
        (in memory, or with ``log=``).
        """
        if a is None or b is None:
            if len(self.agents) < 2:
                raise UserError("diff() needs two agents: evaluate a dict {name: agent} of at least two")
            a, b = a or self.agents[0], b or self.agents[1]
        rows = self._ordered()
        picked = []
        for name in (a, b):
            at = [i for i, r in enumerate(rows) if r.get("agent") == name and r.get("repeat", 0) == repeat
                  and (r.get("case") == case or r.get("index") == case)]  # fmt: skip
            if not at:
                raise UserError(f"no row for case {case!r}, agent {name!r}, repeat {repeat} (agents: {self.agents})")
            picked.append(self.run(at[0]))
        from agentnb.timetravel.diff import diff

        return diff(picked[0], picked[1], labels=(a, b))

    def trace(self, i: int) -> Any:
        """Row ``i``'s run in the trace widget (needs ipywidgets)."""
        from agentnb.notebook.trace.widget import TraceWidget

        return TraceWidget.replay(self.run(i))

    def failures(self) -> Any:
        """The table's failing rows."""
        table = self.table
        return table[~table["passed"].astype(bool)] if len(table) else table

    def plot(self) -> Any:
        """A matplotlib figure: pass rate per agent (and per metadata column), latency histogram."""
        from agentnb.evaluation.report import plot

        return plot(self)

    def view(self) -> Any:
        """A widget: the summary, the table (sortable; failing rows first) and a row's trace on demand."""
        from agentnb.evaluation.view import EvaluationView

        return EvaluationView(self)

    def __repr__(self) -> str:
        from agentnb.evaluation.report import summary_text

        return summary_text(self)

    def _repr_html_(self) -> str:
        from agentnb.evaluation.report import evaluation_html

        return evaluation_html(self)
