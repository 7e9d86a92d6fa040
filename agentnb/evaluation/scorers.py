"""Scorers: ``(case, result) -> bool | float``, named, with a pass threshold.

A scorer's value is a bool or a number; a row passes when every scorer's value is at least
its ``threshold`` (True counts 1, False 0); a ``Scorer(..., gate=False)`` is only recorded. Any plain function ``(case, result)`` is a scorer
named after the function; it may be async. A scorer that raises is recorded as an error for
that case and scorer (the value is None, the row fails), and the evaluation goes on.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> from agentnb.evaluation.cases import Case
>>> r = Agent(ScriptedProvider(["The answer is 42."])).run("?")
>>> case = Case("?", expected="42")
>>> contains()(case, r), exact()(case, r), number()(case, r), no_tool()(case, r)
(True, False, True, True)
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")


@dataclass(frozen=True)
class Scorer:
    """A named scoring function ``fn(case, result)``; ``threshold``: the least value that passes.

    ``gate=False`` makes a score that is recorded (a column, a mean in the summary) but does not
    decide ``passed``: a measurement such as the answer's length or the tool calls made.

    >>> words = Scorer("words", lambda case, result: len(result.output.split()), gate=False)
    >>> words.passes(0), words.passes(None)
    (True, True)
    """

    name: str
    fn: Callable[[Any, Any], Any]
    threshold: float = 0.5
    gate: bool = True

    def __call__(self, case: Any, result: Any) -> Any:
        return self.fn(case, result)

    def passes(self, value: Any) -> bool:
        if not self.gate:
            return True
        return value is not None and float(value) >= self.threshold


def as_scorers(scorers: Any) -> list[Scorer]:
    """Scorers from one scorer or function, a list of them, or a ``{name: scorer}`` dict."""
    if scorers is None:
        return []
    if isinstance(scorers, Mapping):
        items = [dataclasses.replace(_one(s), name=str(n)) for n, s in scorers.items()]
    else:
        seq = (
            [scorers]
            if callable(scorers) or isinstance(scorers, str)
            else list(scorers)
            if isinstance(scorers, Iterable)
            else [scorers]
        )
        items = [_one(s) for s in seq]
    names = [s.name for s in items]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise UserError(f"two scorers are named {dup!r}: pass a dict {{name: scorer}} to name them apart")
    reserved = {"input", "output", "value", "expected", "passed", "error", "agent", "case", "repeat"}
    if reserved & set(names):
        raise UserError(f"scorer name {sorted(reserved & set(names))[0]!r} is a column of the table; rename it")
    return items


def _one(obj: Any) -> Scorer:
    if isinstance(obj, Scorer):
        return obj
    if isinstance(obj, str):
        if obj not in BY_NAME:
            raise UserError(f"unknown scorer {obj!r}; by name: {', '.join(sorted(BY_NAME))}")
        return BY_NAME[obj]()
    if callable(obj):
        name = getattr(obj, "__name__", None) or type(obj).__name__
        return Scorer(name if name != "<lambda>" else "score", obj)
    raise UserError(f"a scorer must be a function (case, result) -> bool | float, not {obj!r}")


async def apply(scorer: Scorer, case: Any, result: Any) -> tuple[Any, str | None]:
    """(value, None) or (None, "ErrorType: message") when the scorer raised."""
    try:
        value = scorer(case, result)
        if inspect.isawaitable(value):
            value = await value
        if value is not None and not isinstance(value, (bool, int, float)):
            raise TypeError(f"a scorer returns a bool or a number, not {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):  # JSON has none; a sum would be NaN
            raise ValueError(f"a scorer returns a finite number, not {value!r}")
        return value, None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


# -- the output ---------------------------------------------------------------------------


def _expected(case: Any, given: Any) -> Any:
    want = case.expected if given is None else given
    if want is None:
        raise ValueError("the case has no expected value")
    return want


def exact(expected: Any = None, *, ignore_case: bool = False, name: str = "exact") -> Scorer:
    """The output (stripped) equals the expected text."""

    def score(case: Any, result: Any) -> bool:
        a, b = result.output.strip(), str(_expected(case, expected)).strip()
        return a.lower() == b.lower() if ignore_case else a == b

    return Scorer(name, score)


def contains(expected: Any = None, *, ignore_case: bool = True, name: str = "contains") -> Scorer:
    """The expected text occurs in the output (case-insensitive by default)."""

    def score(case: Any, result: Any) -> bool:
        a, b = result.output, str(_expected(case, expected))
        return b.lower() in a.lower() if ignore_case else b in a

    return Scorer(name, score)


def regex(pattern: str | None = None, *, name: str = "regex") -> Scorer:
    """The pattern (or the expected value as a pattern) matches somewhere in the output."""
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise UserError(f"regex({pattern!r}) is not a regular expression: {exc}") from None

    def score(case: Any, result: Any) -> bool:
        return re.search(str(_expected(case, pattern)), result.output) is not None

    return Scorer(name, score)


def number(
    expected: float | None = None, *, tolerance: float = 1e-6, relative: float = 0.0, name: str = "number"
) -> Scorer:
    """The last number in the output is within ``tolerance`` (or ``relative``) of the expected number."""

    def score(case: Any, result: Any) -> bool:
        want = float(str(_expected(case, expected)).replace(",", ""))
        found = _NUMBER.findall(result.output)
        if not found:
            return False
        got = float(found[-1].replace(",", ""))
        return math.isclose(got, want, rel_tol=relative, abs_tol=tolerance)

    return Scorer(name, score)


# -- structured output --------------------------------------------------------------------


def value_equals(expected: Any = None, *, name: str = "value_equals") -> Scorer:
    """``result.value`` against the expected value, field by field: the share of equal fields.

    Passes only when every field is equal (threshold 1.0); no value (an invalid answer) is 0.
    """

    def score(case: Any, result: Any) -> float:
        want = _data(_expected(case, expected))
        if result.value is None:
            return 0.0
        got = _data(result.value)
        if isinstance(want, dict) and isinstance(got, dict):
            if not want:
                return float(got == want)
            return sum(1 for k, v in want.items() if k in got and got[k] == v) / len(want)
        return float(got == want)

    return Scorer(name, score, threshold=1.0)


def _data(v: Any) -> Any:
    if hasattr(v, "model_dump"):
        return v.model_dump(mode="json")
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    return v


# -- the trajectory -----------------------------------------------------------------------


def tool_calls_of(result: Any) -> list[tuple[str, dict[str, Any]]]:
    """The (name, arguments) of every tool call the model made, in order."""
    return [(e.name, e.arguments or {}) for e in result.events if e.kind == "tool_call"]


def called(tool: str, *, name: str | None = None, **arguments: Any) -> Scorer:
    """The model called ``tool`` (with these arguments, when given: equal values, or a
    function of the value that returns True)."""

    def matches(args: dict[str, Any]) -> bool:
        for k, want in arguments.items():
            if k not in args:
                return False
            ok = want(args[k]) if callable(want) else args[k] == want
            if not ok:
                return False
        return True

    def score(case: Any, result: Any) -> bool:
        return any(n == tool and matches(a) for n, a in tool_calls_of(result))

    return Scorer(name or f"called_{tool}", score)


def no_tool(*, name: str = "no_tool") -> Scorer:
    """The model called no tool."""
    return Scorer(name, lambda case, result: not tool_calls_of(result))


def at_most(n: int, *, name: str | None = None) -> Scorer:
    """The model made at most ``n`` tool calls."""
    return Scorer(name or f"at_most_{n}_calls", lambda case, result: len(tool_calls_of(result)) <= n)


# -- a judge ------------------------------------------------------------------------------

JUDGE_PROMPT = """You grade an assistant's answer. Reply with one word: PASS or FAIL.

Criteria: {rubric}

Question: {input}
Expected (may be empty): {expected}
Answer: {output}"""


def judge(
    provider: Any, rubric: str = "The answer is correct and agrees with the expected answer.", *, name: str = "judge"
) -> Scorer:
    """Ask a model (any agentnb provider or spec) whether the answer passes; True on PASS.

    The judge sees the rubric, the case's input and expected value and the answer; its reply
    must start with PASS or FAIL (else the scorer records an error for that case).
    """
    from agentnb.messages import UserMessage
    from agentnb.providers import Request, get_provider

    model = get_provider(provider)

    async def score(case: Any, result: Any) -> bool:
        text = JUDGE_PROMPT.format(rubric=rubric, input=case.input, expected=case.expected or "", output=result.output)
        reply = await model.complete(Request([UserMessage(text)], settings={"temperature": 0}))
        word = (reply.text or "").strip().upper()
        if word.startswith("PASS"):
            return True
        if word.startswith("FAIL"):
            return False
        raise ValueError(f"the judge answered neither PASS nor FAIL: {(reply.text or '')[:80]!r}")

    return Scorer(name, score)


#: Built-in scorers that take no argument, by name (for ``scorers=["contains"]`` and the magic).
BY_NAME: dict[str, Callable[[], Scorer]] = {
    "exact": exact,
    "contains": contains,
    "regex": regex,
    "number": number,
    "value_equals": value_equals,
    "no_tool": no_tool,
}
