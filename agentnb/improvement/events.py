"""What an improvement reports as it goes: typed, frozen events that its views consume.

The search renders nothing; the notebook view and the terminal bar fold these events.

>>> e = RunsSpent(spent=3, budget=10)
>>> e.kind, e.spent
('runs_spent', 3)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ImproveStarted:
    """The split sizes, the budget and the components the search may change."""

    train: int
    validation: int
    test: int
    budget: int
    targets: tuple[str, ...]
    kind: Literal["improve_started"] = "improve_started"


@dataclass(frozen=True)
class RunsSpent:
    """A case run finished (or was read back from the log): ``spent`` of ``budget`` so far."""

    spent: int
    budget: int
    kind: Literal["runs_spent"] = "runs_spent"


@dataclass(frozen=True)
class CandidateDone:
    """A candidate's outcome: ``record`` is its row of ``Improvement.candidates`` (status
    ``seed``, ``accepted``, ``rejected`` or ``skipped``); ``best`` is the best candidate's id now."""

    record: dict[str, Any] = field(hash=False)
    best: str = ""
    best_score: float = 0.0
    kind: Literal["candidate_done"] = "candidate_done"


@dataclass(frozen=True)
class ImproveFinished:
    """The search ended; ``reason`` says why (budget, stopped, every training case passes...)."""

    reason: str
    spent: int
    kind: Literal["improve_finished"] = "improve_finished"


ImproveEvent = ImproveStarted | RunsSpent | CandidateDone | ImproveFinished
