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


#: What a phase does, in words: ``{step}`` and ``{candidate}`` are filled in.
PHASES = {
    "original": "scoring the original on the validation set",
    "parent": "step {step}: candidate {candidate} on a training minibatch",
    "reflection": "step {step}: the reflector reads the failures of candidate {candidate}",
    "candidate": "step {step}: new candidate {candidate} on the same minibatch",
    "validation": "step {step}: new candidate {candidate} on the validation set",
    "test": "the test comparison: the original and the best on the test cases",
}


@dataclass(frozen=True)
class PhaseStarted:
    """The search began a phase (what a Stop would cut short now); ``text`` says it in words.

    >>> PhaseStarted("reflection", 2, "c1a2").text
    'step 2: the reflector reads the failures of candidate c1a2'
    """

    phase: Literal["original", "parent", "reflection", "candidate", "validation", "test"]
    step: int = 0
    candidate: str = ""
    kind: Literal["phase_started"] = "phase_started"

    @property
    def text(self) -> str:
        return PHASES[self.phase].format(step=self.step, candidate=self.candidate)


@dataclass(frozen=True)
class CandidateDone:
    """A candidate's outcome: ``record`` is its row of ``Improvement.candidates`` (status
    ``seed``, ``accepted``, ``rejected``, ``skipped``, or ``stopped``: a Stop cut its runs short);
    ``best`` is the best candidate's id now."""

    record: dict[str, Any] = field(hash=False)
    best: str = ""
    best_score: float = 0.0
    kind: Literal["candidate_done"] = "candidate_done"


@dataclass(frozen=True)
class ImproveFinished:
    """The improvement ended (the test comparison included); ``reason`` says why (budget, stopped,
    every training case passes...)."""

    reason: str
    spent: int
    kind: Literal["improve_finished"] = "improve_finished"


ImproveEvent = ImproveStarted | RunsSpent | PhaseStarted | CandidateDone | ImproveFinished
