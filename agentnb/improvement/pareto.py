"""Choosing which candidate to improve next, and which training cases to show, as GEPA does.

*Pareto selection*: on each validation case, the candidates with the best score there form that
case's front. A candidate that is on no front of its own (every front it is on holds another
surviving candidate) is dominated and left out; the others are drawn with a probability that
grows with the number of cases they lead. So a candidate that alone solves one hard case keeps a
chance to be improved, even when another has the better mean.

>>> import random
>>> scores = {"a": {"1": 1.0, "2": 0.0, "3": 0.0}, "b": {"1": 0.0, "2": 1.0, "3": 1.0},
...           "c": {"1": 0.0, "2": 1.0, "3": 0.0}}
>>> front(scores)
{'a': 1, 'b': 2}
>>> pick(scores, random.Random(0)) in ("a", "b")
True
>>> best({"a": {"1": 1.0, "2": 0.0}, "b": {"1": 1.0, "2": 0.0}})  # a tie keeps the earlier one
'a'
"""

from __future__ import annotations

import random
from collections.abc import Sequence


def mean(scores: dict[str, float]) -> float:
    return sum(scores.values()) / len(scores) if scores else 0.0


def front(scores: dict[str, dict[str, float]]) -> dict[str, int]:
    """The candidates on the Pareto front, each with the number of validation cases it leads."""
    cases = sorted({c for s in scores.values() for c in s})
    leaders: dict[str, set[str]] = {}
    for case in cases:
        top = max(s.get(case, 0.0) for s in scores.values())
        leaders[case] = {cid for cid, s in scores.items() if s.get(case, 0.0) == top}
    alive = set(scores)
    rank = {cid: i for i, cid in enumerate(scores)}
    # The weakest first: a candidate goes when every front it is on keeps another live candidate.
    order = sorted(scores, key=lambda cid: (mean(scores[cid]), -rank[cid]))
    for cid in order:
        mine = [lead for lead in leaders.values() if cid in lead]
        if mine and all(len(lead & alive) > 1 for lead in mine):
            alive.discard(cid)
    counts = {cid: sum(1 for lead in leaders.values() if cid in lead) for cid in scores if cid in alive}
    return {cid: n for cid, n in counts.items() if n > 0} or {best(scores): 1}


def pick(scores: dict[str, dict[str, float]], rng: random.Random) -> str:
    """One candidate of the front, drawn in proportion to the cases it leads."""
    counts = front(scores)
    names = list(counts)
    return rng.choices(names, weights=[counts[n] for n in names])[0]


def best(scores: dict[str, dict[str, float]]) -> str:
    """The candidate with the best mean validation score; ties go to the earliest."""
    rank = {cid: i for i, cid in enumerate(scores)}
    return max(scores, key=lambda cid: (mean(scores[cid]), -rank[cid]))


class Batches:
    """Training minibatches: the cases shuffled once per epoch, then taken ``size`` at a time.

    >>> b = Batches(["1", "2", "3", "4", "5"], 2, random.Random(0))
    >>> len(set(b.next() + b.next()))  # two batches of one epoch: four different cases
    4
    """

    def __init__(self, ids: Sequence[str], size: int, rng: random.Random) -> None:
        self.ids = list(ids)
        self.size = max(1, min(size, len(self.ids)))
        self.rng = rng
        self.order: list[str] = []
        self.at = 0

    def next(self) -> list[str]:
        if self.at + self.size > len(self.order):
            self.order = list(self.ids)
            self.rng.shuffle(self.order)
            self.at = 0
        batch = self.order[self.at : self.at + self.size]
        self.at += self.size
        return batch
