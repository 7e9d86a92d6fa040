"""Two agents on the same cases: which is better, and whether the difference could be chance.

Rows are paired per case. With one run per case and agent, a case counts for ``a`` when it
passes only with ``a``, and the test is McNemar's exact test on those discordant cases. With
``repeats`` > 1 a case's runs are not independent pairs (the same case twice is not two
cases): each agent's pass rate over its repeats stands for the case, a case counts for the
agent that passes it more often, and the test is the exact sign test on those cases (the same
binomial test; with one repeat it *is* McNemar's). Ties are left out of the test.

>>> rows = [{"case": str(i), "agent": ag, "repeat": 0, "passed": ag == "tools" or i < 2}
...         for i in range(14) for ag in ("tools", "plain")]
>>> print(compare_rows(rows, "tools", "plain").verdict())
'tools' better: 12 cases pass only with it, 0 only with 'plain'; significant at 5% (McNemar exact p = 0.00049)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentnb.evaluation.stats import mcnemar_exact

#: The significance level the verdict uses.
ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    """Two agents paired per case: how many cases favour each, the exact test and its verdict.

    ``only_a`` / ``only_b``: cases that pass only with that agent (with repeats: more often with
    it); ``both_pass``: cases that pass equally often with both, at least once; ``neither``: cases
    that never pass. ``changed`` is a DataFrame of the cases that differ (with repeats, the two
    pass rates). ``str()`` (and :meth:`verdict`) says it in words.
    """

    a: str
    b: str
    pairs: int
    both_pass: int
    only_a: int
    only_b: int
    neither: int
    p_value: float
    changed: Any  # a DataFrame: case, a's and b's pass (or pass rate), direction
    repeats: int = 1

    @property
    def test(self) -> str:
        """The test used, in words."""
        if self.repeats > 1:
            return f"exact sign test on per-case pass rates over {self.repeats} repeats"
        return "McNemar exact"

    @property
    def significant(self) -> bool:
        """Whether the difference is significant at 5% (two-sided)."""
        return self.p_value < ALPHA

    @property
    def better(self) -> str | None:
        """The agent that passes more cases on its own (None: a tie), significant or not."""
        if self.only_a == self.only_b:
            return None
        return self.a if self.only_a > self.only_b else self.b

    def verdict(self) -> str:
        """Which agent is better, by how many cases, and whether that is significant at 5%."""
        if self.pairs == 0:
            return f"no case was run by both {self.a!r} and {self.b!r}: nothing to compare"
        only = "pass more often" if self.repeats > 1 else "pass only"
        test = f"{self.test} p = {self.p_value:.2g}"
        if self.better is None:
            return (
                f"no difference between {self.a!r} and {self.b!r}: {self.only_a} cases {only} with {self.a!r}, "
                f"{self.only_b} with {self.b!r}; not significant ({test})"
            )
        win, lose = (self.a, self.b) if self.better == self.a else (self.b, self.a)
        n_win, n_lose = max(self.only_a, self.only_b), min(self.only_a, self.only_b)
        counts = f"{n_win} cases {only} with it, {n_lose} {'with' if self.repeats > 1 else 'only with'} {lose!r}"
        if self.significant:
            return f"{win!r} better: {counts}; significant at 5% ({test})"
        return (
            f"{win!r} ahead but not significantly: {counts}; not significant at 5% ({test}): "
            "the difference may be chance"
        )

    def __str__(self) -> str:
        return self.verdict()

    def __repr__(self) -> str:
        return f"Comparison({self.a!r} vs {self.b!r}, {self.pairs} paired cases): {self.verdict()}"


def compare_rows(rows: Iterable[dict[str, Any]], a: str, b: str) -> Comparison:
    """Pair ``a``'s and ``b``'s rows per case (pass rate over repeats) and test the difference."""
    import pandas as pd

    runs: dict[str, dict[str, list[bool]]] = {a: defaultdict(list), b: defaultdict(list)}
    order: list[str] = []
    for r in rows:
        agent = r.get("agent")
        if agent in runs:
            if r["case"] not in runs[a] and r["case"] not in runs[b]:
                order.append(r["case"])
            runs[agent][r["case"]].append(bool(r.get("passed")))
    both = [c for c in order if c in runs[a] and c in runs[b]]
    repeats = max([len(v) for side in runs.values() for v in side.values()] or [1])
    counts = {"a": 0, "b": 0, "both": 0, "neither": 0}
    changed = []
    for case in both:
        ra, rb = _rate(runs[a][case]), _rate(runs[b][case])
        if ra == rb:
            counts["both" if ra > 0 else "neither"] += 1
            continue
        counts["a" if ra > rb else "b"] += 1
        shown = (ra == 1, rb == 1) if repeats == 1 else (ra, rb)
        changed.append({"case": case, a: shown[0], b: shown[1], "direction": f"only {a if ra > rb else b} passes"})
        if repeats > 1:
            changed[-1]["direction"] = f"{a if ra > rb else b} passes more often"
    frame = pd.DataFrame.from_records(changed, columns=["case", a, b, "direction"] if not changed else None)
    return Comparison(
        a, b, len(both), counts["both"], counts["a"], counts["b"], counts["neither"],
        mcnemar_exact(counts["a"], counts["b"]), frame, repeats,
    )  # fmt: skip


def _rate(passes: list[bool]) -> float:
    return sum(passes) / len(passes)
