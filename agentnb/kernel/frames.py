"""DataFrames, Series and numpy arrays, described from bounded work and without a copy.

A frame of up to :data:`SAMPLE_ROWS` rows is described whole. A larger one is described from
a random sample of that many rows (seed 0, so the same frame reads the same), and the text says
so; its head is its head. Null counts are exact where counting is cheap (integers and booleans
hold no nulls; floats, datetimes and categoricals are counted over the whole column while
:data:`EXACT_NULL_CELLS` allows) and estimated from the sample elsewhere, marked ``~``. No
``df.describe()`` or ``df.isna()`` of the whole frame runs: on 10,000,000 rows they take seconds.

>>> import pandas as pd
>>> df = pd.DataFrame({"price": [1.0, None, 3.0], "city": pd.Categorical(["Oslo", "Rome", "Oslo"])})
>>> print(describe_array_like(df, "df"))
df: DataFrame 3 x 2; index: RangeIndex 0..2
columns:
  column  dtype     nulls      summary
  price   float64   1 (33.3%)  mean 2, std 1.414, min 1, 25% 1.5, 50% 2, 75% 2.5, max 3
  city    category  0          2 categories; top: 'Oslo' (2), 'Rome' (1)
first 3 rows:
     price  city
  0  1      Oslo
  1  nan    Rome
  2  3      Oslo
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agentnb.kernel.bounded import TooSlow, clip, clipped_repr, plain, within
from agentnb.kernel.summary import short, summary

#: Rows statistics are computed from: a frame with more is sampled.
SAMPLE_ROWS = 10_000
#: Cells of a large frame whose nulls are counted exactly (about 1 ns each); the rest are estimated.
EXACT_NULL_CELLS = 30_000_000
#: Columns described one by one; the others are named.
MAX_COLUMNS = 40
HEAD_ROWS = 5
HEAD_COLUMNS = 10
CELL_CHARS = 24


def describe_array_like(value: Any, name: str) -> str:
    """A DataFrame, a Series or an ndarray described; another pandas/numpy object by its repr."""
    import sys

    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(value, pd.DataFrame):
        return _frame(value, name)
    if pd is not None and isinstance(value, pd.Series):
        return _series(value, name)
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        from agentnb.kernel.arrays import describe_ndarray

        return describe_ndarray(value, name)
    return f"{name}: {summary(value)}\nrepr: {clipped_repr(value, 2_000)}"


def _frame(df: Any, name: str) -> str:
    rows, cols = df.shape
    sample, note = _sample(df, rows)
    lines = [f"{name}: DataFrame {rows:,} x {cols:,}; index: {_index(df.index)}"]
    if note:
        lines.append(note)
    if not cols:
        return "\n".join([*lines, "no columns"])
    lines.append("columns:")
    table: list[tuple[str, ...]] = [("column", "dtype", "nulls", "summary")]
    budget = [EXACT_NULL_CELLS]
    for i in range(min(cols, MAX_COLUMNS)):
        column, sampled = df.iloc[:, i], sample.iloc[:, i]
        nulls = _nulls(column, sampled, sample is df, budget)
        table.append((_label(df.columns[i]), str(column.dtype), nulls, _column_summary(sampled)))
    lines += _aligned(table)
    if cols > MAX_COLUMNS:
        others = ", ".join(_label(c) for c in df.columns[MAX_COLUMNS : MAX_COLUMNS + 100])
        lines.append(f"  … and {cols - MAX_COLUMNS:,} more columns: {clip(others, 1_000)}")
    if rows:
        lines.append(
            f"first {min(rows, HEAD_ROWS)} rows" + (f" (first {HEAD_COLUMNS} columns):" if cols > HEAD_COLUMNS else ":")
        )
        lines += _head(df)
    return "\n".join(lines)


def _series(series: Any, name: str) -> str:
    rows = len(series)
    label = f" {_label(series.name)!r}" if series.name is not None else ""
    lines = [f"{name}: Series{label} of {rows:,} {series.dtype}; index: {_index(series.index)}"]
    sample, note = _sample(series, rows)
    if note:
        lines.append(note)
    lines.append(f"nulls: {_nulls(series, sample, sample is series, [EXACT_NULL_CELLS])}")
    lines.append(f"summary: {_column_summary(sample)}")
    if rows:
        lines.append(f"first {min(rows, 10)} values:")
        head = series.iloc[:10]
        lines += _aligned([(_cell(i), _cell(v)) for i, v in zip(head.index.tolist(), head.tolist(), strict=False)])
    return "\n".join(lines)


def _sample(data: Any, rows: int) -> tuple[Any, str | None]:
    """``data`` itself when small; else a sorted random sample of rows (only the described columns)."""
    if rows <= SAMPLE_ROWS:
        return data, None
    import numpy as np

    positions = np.unique(np.random.default_rng(0).integers(0, rows, SAMPLE_ROWS))
    sample = data.iloc[positions] if data.ndim == 1 else data.iloc[positions, :MAX_COLUMNS]
    note = (
        f"statistics are from a random sample of {len(positions):,} of the {rows:,} rows (seed 0); "
        "null counts marked ~ are estimated from it, the others are exact"
    )
    return sample, note


def _nulls(column: Any, sampled: Any, whole: bool, budget: list[int]) -> str:
    """The null count of a column: exact where cheap, else estimated from the sample (``~``)."""
    import numpy as np

    dtype, rows = column.dtype, len(column)
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        return "0"  # numpy integers and booleans cannot hold a null
    if whole:
        return _count(int(column.isna().sum()), rows)
    cheap = _cheap_nulls(column, dtype)
    if cheap is not None and budget[0] >= rows:
        budget[0] -= rows
        return _count(int(cheap()), rows)
    found = int(sampled.isna().sum())
    return f"~{found / max(len(sampled), 1):.1%}" if found else "~0"


def _cheap_nulls(column: Any, dtype: Any) -> Any:
    """A function counting the nulls of a column over a view of its values, or None."""
    import numpy as np

    if isinstance(dtype, np.dtype) and dtype.kind in "fc":
        return lambda: np.isnan(column.to_numpy(copy=False)).sum()
    if isinstance(dtype, np.dtype) and dtype.kind in "mM":
        return lambda: np.isnat(column.to_numpy(copy=False)).sum()
    if getattr(dtype, "name", "") == "category":
        return lambda: (column.array.codes == -1).sum()
    return None


def _count(found: int, rows: int) -> str:
    return f"{found:,} ({found / rows:.1%})" if found else "0"


def _column_summary(column: Any) -> str:
    """Numbers: mean, std and quartiles; dates: their range; anything else: its top values."""
    from pandas.api import types

    dtype = column.dtype
    try:
        if types.is_bool_dtype(dtype) or not types.is_numeric_dtype(dtype) or types.is_complex_dtype(dtype):
            if types.is_datetime64_any_dtype(dtype) or types.is_timedelta64_dtype(dtype):
                present = column.dropna()
                return f"from {_cell(present.min())} to {_cell(present.max())}" if len(present) else "all null"
            return _top(column)
        return _numbers(column.to_numpy(dtype="float64", na_value=float("nan")))
    except (TooSlow, Exception) as exc:  # a column of odd objects: say so and go on
        return f"(no summary: {type(exc).__name__})"


def _numbers(values: Any) -> str:
    import numpy as np

    values = values[~np.isnan(values)]
    if not len(values):
        return "all null"
    q = np.percentile(values, [0, 25, 50, 75, 100])
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    return (
        f"mean {values.mean():.4g}, std {std:.4g}, min {q[0]:.4g}, 25% {q[1]:.4g}, "
        f"50% {q[2]:.4g}, 75% {q[3]:.4g}, max {q[4]:.4g}"
    )


def _top(column: Any) -> str:
    """The most common values and how many distinct ones (categories: how many there are)."""
    categories = len(column.cat.categories) if getattr(column.dtype, "name", "") == "category" else None
    present = column.dropna().tolist()
    try:
        counts = Counter(present)
    except TypeError:  # unhashable cells (lists, dicts)
        return f"values are not hashable, e.g. {_cell(present[0])}" if present else "all null"
    top = ", ".join(f"{_cell(v, quote=True)} ({n:,})" for v, n in counts.most_common(5))
    kinds = f"{categories:,} categories" if categories is not None else f"{len(counts):,} distinct"
    return f"{kinds}; top: {top}" if top else f"{kinds}; all null"


def _head(df: Any) -> list[str]:
    head = df.iloc[:HEAD_ROWS, :HEAD_COLUMNS]
    columns = [[_cell(v) for v in head.iloc[:, i].tolist()] for i in range(head.shape[1])]
    table: list[tuple[str, ...]] = [("", *(_label(c) for c in head.columns))]
    for r, index in enumerate(head.index.tolist()):
        table.append((_cell(index), *(col[r] for col in columns)))
    return _aligned(table)


def _index(index: Any) -> str:
    kind = type(index).__name__
    if kind == "RangeIndex":
        return f"RangeIndex {index.start}..{index.stop - 1}" if index.step == 1 and len(index) else f"{index!r}"
    if not len(index):
        return f"{kind} (empty)"
    return f"{kind} of {index.dtype}, {_cell(index[0])} … {_cell(index[-1])}"


def _cell(value: Any, quote: bool = False) -> str:
    """A cell of a table in at most :data:`CELL_CHARS` characters; strings escaped, never run."""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, str):
        return clip(plain(repr(value) if quote else value), CELL_CHARS)
    module = getattr(type(value), "__module__", "") or ""
    if module.startswith(("pandas", "numpy")) or type(value) in (int, bool, type(None)):
        try:
            return clip(plain(within(lambda: str(value), 0.1)), CELL_CHARS)
        except (TooSlow, Exception):
            return f"<{type(value).__name__}>"
    return short(value, CELL_CHARS)


def _label(value: Any) -> str:
    return clip(plain(value if isinstance(value, str) else str(value)), 40)


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [min(max(len(r[i]) for r in rows), 40) for i in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
