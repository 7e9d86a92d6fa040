"""``Evaluation.summary()``: a pandas DataFrame that shows itself readably.

The values stay exact (``pass_rate`` 0.8125, ``latency_p50`` 0.180748); only the display rounds
them: rates as percentages, seconds with two decimals, means with three digits. In a notebook it
is a compact HTML table (headers wrap, text columns left-aligned, numbers right-aligned) that
fits a 1280 px window; every value in it is escaped. Frames derived from it (a selection, a
``set_index``) are plain DataFrames.

>>> frame = Summary({"agent": ["tools"], "pass_rate": [0.8125], "latency_p50": [0.180748]})
>>> print(frame)
agent  pass_rate  latency_p50
tools      81.2%       0.18 s
>>> frame["latency_p50"].tolist()
[0.180748]
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from agentnb.untrusted import NO_MATH, untrusted_html

PERCENT = ("pass_rate", "ci_low", "ci_high")
SECONDS = ("latency_p50", "latency_p95", "queue_wait_p50")


def shown(column: str, value: Any) -> str:
    """How one value of column ``column`` is shown.

    >>> shown("pass_rate", 1.0), shown("latency_p95", 2.3456), shown("mean_number", 0.333333), shown("n", 3)
    ('100.0%', '2.35 s', '0.333', '3')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if column in PERCENT:
        return f"{value:.1%}"
    if column in SECONDS:
        return f"{value:.2f} s"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


class Summary(pd.DataFrame):
    """One row per agent; a DataFrame whose display rounds (see the module's text)."""

    @property
    def _constructor(self) -> Callable[..., pd.DataFrame]:
        return pd.DataFrame

    def _text_columns(self) -> dict[Any, bool]:
        return {c: not pd.api.types.is_numeric_dtype(self[c]) for c in self.columns}

    def __repr__(self) -> str:
        text = self._text_columns()
        records = self.to_dict(orient="records")
        lines = []
        for c in self.columns:
            cells = [str(c), *(shown(str(c), rec[c]) for rec in records)]
            width = max(len(x) for x in cells)
            lines.append([x.ljust(width) if text[c] else x.rjust(width) for x in cells])
        return "\n".join("  ".join(row).rstrip() for row in zip(*lines, strict=True)) if lines else "(no agents)"

    def _repr_html_(self) -> str:
        text = self._text_columns()
        cell = "padding:2px 5px;border-bottom:1px solid #d0d7de;text-align:{}"
        head = "".join(
            f'<th style="{cell.format("left" if text[c] else "right")};white-space:normal;max-width:6.5em;'
            f'vertical-align:bottom">{untrusted_html(str(c).replace("_", " "))}</th>'
            for c in self.columns
        )
        body = []
        for rec in self.to_dict(orient="records"):
            tds = "".join(
                f'<td style="{cell.format("left" if text[c] else "right")};white-space:nowrap">'
                f"{untrusted_html(shown(str(c), rec[c]))}</td>"
                for c in self.columns
            )
            body.append(f"<tr>{tds}</tr>")
        return (
            f'<table class="agentnb-summary {NO_MATH}" style="border-collapse:collapse;font-size:12px">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        )
