"""Cases in: a dataset (list, DataFrame, JSONL or CSV file) becomes a list of :class:`Case`.

A case has an input (by default the ``input`` column or key; or another column, or a template
over the row's columns), an optional expected value (by default ``expected``) and metadata
(every other column).

>>> cases = load_cases([{"input": "2 + 2?", "expected": "4", "level": "easy"}, "hello"])
>>> [(c.input, c.expected, c.metadata) for c in cases]
[('2 + 2?', '4', {'level': 'easy'}), ('hello', None, {})]
>>> load_cases([{"a": 1, "b": 2}], input="What is {a} + {b}?")[0].input
'What is 1 + 2?'
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentnb.errors import UserError

#: The metadata column that names a case (its id in the log and the table), when present.
ID_COLUMN = "id"


@dataclass(frozen=True)
class Case:
    """One case: what the agent is asked, what it should answer, and anything else about it.

    ``id`` names the case in the log (resume skips logged ids): the dataset's ``id`` column,
    else the case's position and a short hash of its input.
    """

    input: Any
    expected: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    row: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def load_cases(
    dataset: Any,
    *,
    input: str = "input",
    expected: str | None = "expected",
) -> list[Case]:
    """Cases from a list of strings or dicts, a pandas DataFrame, a ``.jsonl`` / ``.csv`` path, or
    kept runs (``agentnb.runs().where(...)``: its labelled runs, see :mod:`agentnb.runstore`).

    ``input`` is a column name, or a template such as ``"Translate {text} to {lang}"`` filled
    from the row's columns. A clear :class:`~agentnb.errors.UserError` names a missing column.
    """
    rows = _rows(dataset)
    template = "{" in input
    cases: list[Case] = []
    for i, row in enumerate(rows):
        if not template and input not in row:
            raise UserError(f"case {i} has no {input!r} column (columns: {sorted(row)}); pass input='COLUMN'")
        try:
            prompt = input.format(**row) if template else row[input]
        except (KeyError, IndexError, ValueError) as exc:
            raise UserError(f"case {i}: the input template {input!r} cannot be filled: {exc!r}") from None
        want = row.get(expected) if expected else None
        used = {expected} | (set() if template else {input})
        meta = {k: v for k, v in row.items() if k not in used}
        case_id = str(meta[ID_COLUMN]) if ID_COLUMN in meta else f"{i}:{_digest(prompt)}"
        cases.append(Case(prompt, want, meta, case_id, row))
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise UserError(f"two cases have the id {dup!r}: ids must be unique (they name cases in the log)")
    return cases


def _digest(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _rows(dataset: Any) -> list[dict[str, Any]]:
    if isinstance(dataset, (str, os.PathLike)):
        return _read_file(Path(dataset))
    if hasattr(dataset, "to_cases"):  # kept runs: agentnb.runs().where(...), its labelled runs
        return [dict(c) for c in dataset.to_cases()]
    if hasattr(dataset, "to_dict") and hasattr(dataset, "columns"):  # a pandas DataFrame
        return [_plain(r) for r in dataset.to_dict(orient="records")]
    if isinstance(dataset, Mapping) or not isinstance(dataset, Iterable):
        raise UserError(
            f"dataset must be a list of strings or dicts, a DataFrame or a .jsonl/.csv path, not {type(dataset).__name__}"
        )
    rows: list[dict[str, Any]] = []
    for i, item in enumerate(dataset):
        if isinstance(item, Case):
            rows.append({"input": item.input, "expected": item.expected, **item.metadata})
        elif isinstance(item, Mapping):
            rows.append(dict(item))
        elif isinstance(item, str):
            rows.append({"input": item})
        else:
            raise UserError(f"case {i} is a {type(item).__name__}; give strings or dicts")
    return rows


def _plain(row: dict[Any, Any]) -> dict[str, Any]:
    """A DataFrame record with NaN as None and numpy scalars as Python values."""
    out: dict[str, Any] = {}
    for k, v in row.items():
        if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
            try:
                v = v.item()
            except (ValueError, TypeError):
                pass
        if isinstance(v, float) and v != v:  # NaN: a missing value
            v = None
        out[str(k)] = v
    return out


def _read_file(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise UserError(f"dataset file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        rows: list[dict[str, Any]] = []
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise UserError(f"{path}:{n}: not JSON ({exc.msg})") from None
                rows.append(item if isinstance(item, dict) else {"input": item})
        return rows
    if suffix in (".csv", ".tsv"):
        with path.open(encoding="utf-8", newline="") as f:
            return [dict(r) for r in csv.DictReader(f, delimiter="\t" if suffix == ".tsv" else ",")]
    raise UserError(f"dataset file {str(path)!r}: give a .jsonl or .csv file")
