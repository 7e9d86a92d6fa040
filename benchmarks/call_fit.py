"""Refit the ``tool_choice="auto"`` decision rule from measured rows (``call_decision.py --refit``).

The rule (agentnb/providers/guidance/decide.py) is a weighted sum of measurements; its weights are
a class-balanced logistic regression on the tuning (even) half of benchmarks/data, its bias the
smallest that calls on 90% of that half's tool requests. This module does that fit from the rows
``call_decision.py --jsonl`` writes (they hold every measurement, the yes/no included), so a
candidate measurement can be judged on the held-out half before it goes into the rule.

One candidate is here, **argument coverage** (off unless asked for): every required argument of
the best-fitting tool can be filled from the request, by counting: a number for each numeric
argument (as many numbers in the request as the tool takes numeric arguments, required ones at
least, optional ones at most), one or more for a list of numbers, an enum argument's value
written in the request. A tool with a required argument of another type (a string) is not
covered: whether text fills it is not decided by counting.

>>> tool = {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}
>>> covers(tool, "What is 37*91?"), covers(tool, "What is 37 squared?"), covers(tool, "Twenty-one and 4")
(True, False, True)
>>> covers({"properties": {"s": {"type": "string"}}, "required": ["s"]}, "Reverse 'abc'")
False
>>> w, b = fit([[0.0], [1.0], [2.0], [3.0]], [False, False, True, True], l2=0.1)
>>> w[0] > 0 and b < 0
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from agentnb.providers.guidance.decide import _NUMBER_WORDS, AGREE_RANGE, MIN_SHARE

#: The measurements, in the order of the rule's weights; ``coverage`` is the candidate.
FEATURES = ("share", "fit", "missing", "agree")
_WORD = _NUMBER_WORDS.pattern.removeprefix(r"\b(").removesuffix(r")\b")
#: A number: digits (one "1,000" or "2.5"), or a run of number words ("twenty-one").
_NUMBER = re.compile(rf"\d+(?:[.,]\d+)*|\b(?:{_WORD})(?:(?:[\s-]+|\s+and\s+)(?:{_WORD}))*\b", re.IGNORECASE)


def count_numbers(text: str) -> int:
    """How many numbers ``text`` holds (digits or number words).

    >>> count_numbers("Tip 18% on a $64.50 bill split between 3 people"), count_numbers("a dozen eggs")
    (3, 1)
    """
    return len(_NUMBER.findall(text))


def _kinds(schema: Any) -> list[Any]:
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    return kind if isinstance(kind, list) else [kind]


def _numeric(schema: Any) -> bool:
    return any(k in ("integer", "number") for k in _kinds(schema))


def _numbers_list(schema: Any) -> bool:
    return "array" in _kinds(schema) and _numeric(schema.get("items") or {})


def _written(values: Sequence[Any], text: str) -> bool:
    low = text.lower().replace("_", " ")
    return any(
        isinstance(v, str) and v and re.search(rf"(?<!\w){re.escape(v.lower().replace('_', ' '))}(?!\w)", low)
        for v in values
    )


def covers(parameters: Mapping[str, Any], query: str) -> bool:
    """Whether ``query`` supplies every required argument of a tool, by counting (module docstring)."""
    properties = parameters.get("properties") or {}
    required = list(parameters.get("required") or ())
    scalars = lists = 0
    for name in required:
        schema = properties.get(name)
        if isinstance(schema, Mapping) and "enum" in schema:
            if not _written(schema["enum"], query):
                return False
        elif _numeric(schema):
            scalars += 1
        elif _numbers_list(schema):
            lists += 1
        else:
            return False
    if scalars + lists == 0:
        return False
    n = count_numbers(query)
    if lists:
        return n >= scalars + lists
    optional = sum(_numeric(properties.get(name)) for name in properties if name not in required)
    return scalars <= n <= scalars + optional


def features(row: Mapping[str, Any], parameters: Mapping[str, Any], query: str, coverage: bool) -> list[float]:
    """A row's measurements as the rule weighs them (log10 share, best fit, missing, clipped yes/no)."""
    best = max(row["fits"].values()) if row["fits"] else 0.0
    agree = max(-AGREE_RANGE, min(AGREE_RANGE, row["agree"]))
    out = [math.log10(max(row["share"], MIN_SHARE)), best, float(row["missing"]), agree]
    return [*out, float(covers(parameters, query))] if coverage else out


def fit(x: Sequence[Sequence[float]], y: Sequence[bool], l2: float = 0.1) -> tuple[list[float], float]:
    """Class-balanced logistic regression (Newton steps; ``l2`` on the weights, not the intercept).
    Plain Python: a handful of features needs no numpy."""
    rows = [[*map(float, r), 1.0] for r in x]
    size, positives = len(rows[0]), sum(map(bool, y))
    balance = {True: len(y) / (2 * positives), False: len(y) / (2 * (len(y) - positives))}
    w = [0.0] * size
    for _ in range(100):
        grad = [l2 * v if i < size - 1 else 0.0 for i, v in enumerate(w)]
        hess = [
            [(l2 if i == j < size - 1 else 0.0) + (1e-9 if i == j else 0.0) for j in range(size)] for i in range(size)
        ]
        for r, label in zip(rows, y, strict=True):
            z = sum(a * b for a, b in zip(w, r, strict=True))
            p = 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))
            c = balance[bool(label)]
            for i in range(size):
                grad[i] += c * (p - bool(label)) * r[i]
                for j in range(size):
                    hess[i][j] += c * p * (1 - p) * r[i] * r[j]
        step = _solve(hess, grad)
        w = [a - b for a, b in zip(w, step, strict=True)]
    return w[:-1], w[-1]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """``a @ x = b`` by Gaussian elimination with partial pivoting (``a`` small and well-posed)."""
    n = len(b)
    m = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            m[r] = [u - f * v for u, v in zip(m[r], m[col], strict=True)]
    out = [0.0] * n
    for r in reversed(range(n)):
        out[r] = (m[r][n] - sum(m[r][c] * out[c] for c in range(r + 1, n))) / m[r][r]
    return out


def bias_for(scores: Sequence[float], target: float = 0.9) -> float:
    """The smallest bias that calls on ``target`` of requests whose weighted sums are ``scores``.

    >>> bias_for([3.0, 1.0, -1.0, -2.0], target=0.75)
    1.0
    """
    ranked = sorted(scores, reverse=True)
    return -ranked[math.ceil(target * len(ranked)) - 1]
