"""Scoring for agentnb's tool-call accuracy benchmarks (pure Python + jsonschema).

Data (``benchmarks/data/``)
    ``tasks.json``     ``{"tools": [...], "tasks": [...]}``: agent requests answered against the full tool
                       list; each task is ``{"id", "query", "expected"}`` with ``expected`` a call or ``None``
                       (the assistant should answer in text). Tools are OpenAI-style function dicts
                       ``{"name", "description", "parameters", "examples": [{"query", "arguments"}]}``.
    ``fc_cases.json``  ``{"cases": [...]}``: leaderboard-style cases ``{"id", "category" ("simple" or
                       "multiple"), "query", "functions": [...], "expected"}``, exactly one expected call each.

Expected calls
    ``{"name": str, "arguments": {param: [acceptable value, ...]}}``. Every parameter the call may carry is
    listed with its alternatives; ``""`` in a list means "may be omitted" (so optional parameters list their
    default and ``""``). A parameter whose list lacks ``""`` must be given; a parameter that is not listed
    must not be given. Array-typed parameters list whole arrays (a list of lists).

Comparison (`values_match`)
    Strings: case-insensitive after trimming and collapsing whitespace. Numbers: equal within 1e-6, so
    ``5 == 5.0``; booleans are not numbers. Lists: same length, element-wise; dicts: same keys, value-wise.
    Types are not coerced: ``"5"`` does not match ``5``.

Results fed to `summarise`: a list of dicts, one per request::

    {
        "expected":  {"name", "arguments"} | None,   # from the data file
        "predicted": {"name", "arguments"} | None,   # the call the system would execute; None = no call
        "attempt":   object | None,   # optional: what the reply parsed to before the system's own checks
                                      # (defaults to "predicted"); None = the reply did not parse as JSON
        "functions": [function dict, ...],  # the candidates offered (for the schema-valid rate)
        "seconds":   float,                 # optional: wall time for the request
        "category":  str,                   # optional: summarised separately under "by_category"
    }

`summarise` returns (rates are ``None`` when there is nothing to rate)::

    {"n", "n_tool", "n_no_tool",
     "parse_rate",          # tool requests whose reply parsed to a call attempt
     "schema_valid_rate",   # tool requests whose attempt names an offered function with schema-valid arguments
     "correct_rate",        # tool requests whose predicted call scores correct (`score_call`)
     "no_tool_accuracy",    # no-tool requests where no call was made (the model answered in text)
     "overall_accuracy",    # all requests scored correct (a call or, for no-tool requests, no call)
     "mean_seconds", "by_category": {category: the same keys minus by_category}}

>>> summarise([{"expected": None, "predicted": None, "seconds": 0.5}])["no_tool_accuracy"]
1.0
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import jsonschema

__all__ = [
    "DATA_DIR",
    "OMITTED",
    "load_fc_cases",
    "load_more_cases",
    "load_sibling_cases",
    "load_tasks",
    "schema_valid",
    "score_call",
    "summarise",
    "values_match",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
#: In an expected argument's list of alternatives, this value means "the argument may be omitted".
OMITTED = ""
_TOLERANCE = 1e-6


def load_tasks() -> dict[str, Any]:
    """The agent task set: ``{"tools": [...], "tasks": [...], ...}``.

    >>> data = load_tasks()
    >>> len(data["tools"]) >= 8 and len(data["tasks"]) >= 48
    True
    """
    return json.loads((DATA_DIR / "tasks.json").read_text(encoding="utf-8"))


def load_fc_cases() -> list[dict[str, Any]]:
    """The function-calling cases, each ``{"id", "category", "query", "functions", "expected"}``.

    >>> sorted({case["category"] for case in load_fc_cases()})
    ['multiple', 'simple']
    """
    return json.loads((DATA_DIR / "fc_cases.json").read_text(encoding="utf-8"))["cases"]


def load_more_cases() -> list[dict[str, Any]]:
    """More cases (``more_cases.json``), with a ``no_tool`` category whose ``expected`` is None.

    >>> sorted({case["category"] for case in load_more_cases()})
    ['multiple', 'no_tool', 'simple']
    """
    return json.loads((DATA_DIR / "more_cases.json").read_text(encoding="utf-8"))["cases"]


def load_decision_cases() -> list[dict[str, Any]]:
    """Call-or-answer cases (``decision_cases.json``): half need a function, half no offered one fits.

    >>> cases = load_decision_cases()
    >>> sum(c["expected"] is None for c in cases) >= 80 and sum(c["expected"] is not None for c in cases) >= 80
    True
    """
    return json.loads((DATA_DIR / "decision_cases.json").read_text(encoding="utf-8"))["cases"]


def load_sibling_cases() -> list[dict[str, Any]]:
    """Call-or-answer siblings of issue 26 item 11 (``sibling_cases.json``), written after the
    decision rule was fitted and never used to tune it: half need a function, half no offered one fits.

    >>> cases = load_sibling_cases()
    >>> sum(c["expected"] is None for c in cases), sum(c["expected"] is not None for c in cases)
    (15, 15)
    """
    return json.loads((DATA_DIR / "sibling_cases.json").read_text(encoding="utf-8"))["cases"]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _norm_text(text: str) -> str:
    return " ".join(text.split()).casefold()


def values_match(predicted: Any, acceptable: Any) -> bool:
    """Whether ``predicted`` equals ``acceptable`` under the benchmark's tolerant comparison.

    >>> values_match(" New  York ", "new york"), values_match(5, 5.0), values_match(0.1 + 0.2, 0.3)
    (True, True, True)
    >>> values_match("5", 5), values_match(True, 1), values_match([1, 2], [2, 1])
    (False, False, False)
    """
    if isinstance(predicted, bool) or isinstance(acceptable, bool):
        return isinstance(predicted, bool) and isinstance(acceptable, bool) and predicted == acceptable
    if _is_number(predicted) and _is_number(acceptable):
        return math.isfinite(predicted) and abs(predicted - acceptable) <= _TOLERANCE
    if isinstance(predicted, str) and isinstance(acceptable, str):
        return _norm_text(predicted) == _norm_text(acceptable)
    if isinstance(predicted, list | tuple) and isinstance(acceptable, list | tuple):
        return len(predicted) == len(acceptable) and all(map(values_match, predicted, acceptable))
    if isinstance(predicted, Mapping) and isinstance(acceptable, Mapping):
        return predicted.keys() == acceptable.keys() and all(
            values_match(predicted[k], acceptable[k]) for k in acceptable
        )
    return predicted is None and acceptable is None


def _as_call(value: Any) -> tuple[str, Mapping[str, Any]] | None:
    """``(name, arguments)`` when ``value`` is shaped like a call, else None."""
    if not isinstance(value, Mapping):
        return None
    name, arguments = value.get("name"), value.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, Mapping):
        return None
    return name, arguments


def score_call(expected: Mapping[str, Any] | None, predicted: Any) -> dict[str, Any]:
    """Score one predicted call against the expected call (see the module docstring for the convention).

    Returns ``{"correct", "name_ok", "missing", "unknown", "wrong"}``: the right function, every given
    argument acceptable, no required argument missing, no argument outside the expected ones. With
    ``expected=None`` (no tool needed) the answer is correct exactly when nothing was called.

    >>> exp = {"name": "get_weather", "arguments": {"city": ["Paris"], "unit": ["celsius", ""]}}
    >>> score_call(exp, {"name": "get_weather", "arguments": {"city": " paris"}})["correct"]
    True
    >>> r = score_call(exp, {"name": "get_weather", "arguments": {"unit": "kelvin", "lang": "fr"}})
    >>> r["correct"], r["missing"], r["wrong"], r["unknown"]
    (False, ['city'], ['unit'], ['lang'])
    >>> score_call(None, None)["correct"], score_call(None, {"name": "x", "arguments": {}})["correct"]
    (True, False)
    """
    if expected is None:
        ok = predicted is None
        return {"correct": ok, "name_ok": ok, "missing": [], "unknown": [], "wrong": []}
    call = _as_call(predicted)
    if call is None:
        return {"correct": False, "name_ok": False, "missing": [], "unknown": [], "wrong": []}
    name, arguments = call
    allowed: Mapping[str, list[Any]] = expected["arguments"]
    missing = [k for k, alts in allowed.items() if k not in arguments and OMITTED not in alts]
    unknown = [k for k in arguments if k not in allowed]
    wrong = [k for k, v in arguments.items() if k in allowed and not any(values_match(v, alt) for alt in allowed[k])]
    name_ok = name == expected["name"]
    correct = name_ok and not (missing or unknown or wrong)
    return {"correct": correct, "name_ok": name_ok, "missing": missing, "unknown": unknown, "wrong": wrong}


def schema_valid(call: Any, functions: Iterable[Mapping[str, Any]]) -> bool:
    """Whether ``call`` names one of ``functions`` and its arguments validate against that function's schema.

    >>> fns = [{"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}]
    >>> schema_valid({"name": "f", "arguments": {"n": 3}}, fns), schema_valid({"name": "f", "arguments": {"n": "3"}}, fns)
    (True, False)
    """
    shaped = _as_call(call)
    if shaped is None:
        return False
    name, arguments = shaped
    for fn in functions:
        if fn.get("name") == name:
            validator = jsonschema.Draft202012Validator(fn.get("parameters") or {"type": "object"})
            return validator.is_valid(dict(arguments))
    return False


def _rate(hits: list[bool]) -> float | None:
    return sum(hits) / len(hits) if hits else None


def _summary(results: list[Mapping[str, Any]]) -> dict[str, Any]:
    tool = [r for r in results if r.get("expected") is not None]
    no_tool = [r for r in results if r.get("expected") is None]
    attempts = [r.get("attempt", r.get("predicted")) for r in tool]
    correct_tool = [score_call(r["expected"], r.get("predicted"))["correct"] for r in tool]
    correct_text = [r.get("predicted") is None for r in no_tool]
    seconds = [float(r["seconds"]) for r in results if r.get("seconds") is not None]
    return {
        "n": len(results),
        "n_tool": len(tool),
        "n_no_tool": len(no_tool),
        "parse_rate": _rate([a is not None for a in attempts]),
        "schema_valid_rate": _rate(
            [schema_valid(a, r.get("functions", ())) for a, r in zip(attempts, tool, strict=True)]
        ),
        "correct_rate": _rate(correct_tool),
        "no_tool_accuracy": _rate(correct_text),
        "overall_accuracy": _rate(correct_tool + correct_text),
        "mean_seconds": sum(seconds) / len(seconds) if seconds else None,
    }


def summarise(results: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Aggregate rates over per-request results (structure in the module docstring).

    >>> fns = [{"name": "f", "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}]
    >>> exp = {"name": "f", "arguments": {"n": [3]}}
    >>> s = summarise([
    ...     {"expected": exp, "predicted": {"name": "f", "arguments": {"n": 3}}, "functions": fns, "seconds": 1.0},
    ...     {"expected": exp, "predicted": None, "attempt": {"name": "f", "arguments": {"n": "x"}}, "functions": fns},
    ...     {"expected": None, "predicted": None, "seconds": 3.0},
    ... ])
    >>> s["parse_rate"], s["schema_valid_rate"], s["correct_rate"], s["no_tool_accuracy"], s["mean_seconds"]
    (1.0, 0.5, 0.5, 1.0, 2.0)
    """
    results = list(results)
    summary = _summary(results)
    categories = sorted({r["category"] for r in results if r.get("category") is not None})
    summary["by_category"] = {c: _summary([r for r in results if r.get("category") == c]) for c in categories}
    return summary


if __name__ == "__main__":
    _tasks = load_tasks()
    _cases = load_fc_cases()
    _no_tool = sum(t["expected"] is None for t in _tasks["tasks"])
    print(f"tasks.json: {len(_tasks['tools'])} tools, {len(_tasks['tasks'])} requests ({_no_tool} need no tool)")
    for _category in ("simple", "multiple"):
        print(f"fc_cases.json: {sum(c['category'] == _category for c in _cases)} {_category} cases")
