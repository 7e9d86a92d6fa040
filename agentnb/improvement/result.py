"""The :class:`Improvement`: the best agent, every candidate, the accepted changes, the test.

``best`` is a new :class:`~agentnb.Agent` (the original is untouched); ``candidates`` a DataFrame
(one row per candidate tried: its texts, its parent, what happened to it, its validation scores
per case and the runs it cost); ``diffs`` the text diff of each accepted change; ``diff()`` the
winning texts against the original; ``compare()`` the original against the best on the test
cases, paired (McNemar's exact test), and ``verdict`` the same in words.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentnb.errors import UserError
from agentnb.improvement.texts import build_agent, text_diff

#: Columns of ``Improvement.candidates``, in order.
COLUMNS = [
    "id",
    "parent",
    "status",
    "component",
    "text",
    "val_mean",
    "val_scores",
    "runs",
    "parent_minibatch",
    "child_minibatch",
    "minibatch",
    "reason",
    "step",
    "texts",
]


class Improvement:
    """What :func:`agentnb.improve` found: the best agent, the candidates, the diffs, the test comparison.

    >>> from agentnb import Agent, improve
    >>> from agentnb.testing import FunctionProvider
    >>> student = Agent(FunctionProvider(lambda m, t: "4" if "digits" in (m[0].content or "") else "four"))
    >>> cases = [{"input": f"2+2 ({i})", "expected": "4"} for i in range(6)]
    >>> imp = improve(student, cases[:4], ["exact"], reflector=FunctionProvider(lambda m, t: "Use digits."),
    ...               test=cases[4:], budget=16, progress=False)
    >>> imp.candidates[["status", "val_mean"]].values.tolist(), imp.spent <= imp.budget
    ([['seed', 0.0], ['accepted', 1.0]], True)
    >>> print(imp.diff())
    --- original system
    +++ best system
    @@ -0,0 +1 @@
    +Use digits.
    >>> imp.compare().only_b, imp.best.system, student.system
    (2, 'Use digits.', None)
    """

    def __init__(self, search: Any) -> None:
        self._search = search
        self._best: tuple[str, Any] | None = None

    # -- the agents and their texts --------------------------------------------------------

    @property
    def original(self) -> Any:
        """The agent given to improve (never modified)."""
        return self._search.agent

    @property
    def best_id(self) -> str:
        """The id of the best candidate (the best mean on the validation cases; the original on a tie)."""
        return str(self._search.best())

    @property
    def best(self) -> Any:
        """A new Agent with the best candidate's texts (a copy of the original when none beat it)."""
        cid = self.best_id
        if self._best is None or self._best[0] != cid:
            self._best = (cid, build_agent(self._search.agent, self._search.texts[cid]))
        return self._best[1]

    @property
    def original_texts(self) -> dict[str, str]:
        return dict(self._search.texts[self._search.seed_id])

    @property
    def best_texts(self) -> dict[str, str]:
        return dict(self._search.texts[self.best_id])

    # -- the search ------------------------------------------------------------------------

    @property
    def candidates(self) -> Any:
        """A DataFrame: one row per candidate tried (seed, accepted, rejected, skipped)."""
        import pandas as pd

        records = [{k: r.get(k) for k in COLUMNS} for r in self._search.records]
        return pd.DataFrame.from_records(records, columns=COLUMNS)

    @property
    def diffs(self) -> list[str]:
        """The text diff of each accepted change, parent against child, in the order they came."""
        texts = self._search.texts
        return [
            text_diff(texts[r["parent"]], texts[r["id"]], r["parent"], r["id"])
            for r in self._search.records
            if r["status"] == "accepted"
        ]

    def diff(self) -> str:
        """The best texts against the original, as a unified diff ("" when the best is the original)."""
        return text_diff(self.original_texts, self.best_texts)

    @property
    def reflections(self) -> list[dict[str, Any]]:
        """Every request to the reflector: the step, parent, component, cases shown, prompt, reply, verdict."""
        return list(self._search.reflections)

    @property
    def reflector_usage(self) -> Any:
        """The reflector's tokens (and cost, where priced) over this improvement's reflections."""
        from agentnb.messages.types import Usage

        return self._search.reflector_usage or Usage()

    @property
    def spent(self) -> int:
        """Case runs spent, those read back from the log included (never more than ``budget``)."""
        return int(self._search.spent)

    @property
    def budget(self) -> int:
        return int(self._search.budget)

    @property
    def reason(self) -> str:
        """Why the search ended."""
        return str(self._search.reason)

    @property
    def stopped(self) -> bool:
        return bool(self._search.stopper.stopped.is_set())

    @property
    def sizes(self) -> dict[str, int]:
        """How many cases each split holds."""
        s = self._search
        return {"train": len(s.train), "validation": len(s.val), "test": len(s.test)}

    # -- the test --------------------------------------------------------------------------

    @property
    def test(self) -> Any:
        """The :class:`~agentnb.Evaluation` of the original and the best on ``test=`` (None before it ran)."""
        return self._search.test_eval

    def compare(self, finish: bool = True) -> Any:
        """Original against best on the test cases, paired: a :class:`~agentnb.evaluation.Comparison`.

        When a Stop came before or during the test comparison, ``finish=True`` runs what it left
        undone first (the runs that finished are kept, not repeated; within the budget);
        ``finish=False`` compares the test cases that both finished. A UserError says why there
        is nothing to compare (no test set, the original never scored, no test case finished by both).
        """
        s = self._search
        if not s.test:
            raise UserError("no test= cases were given: improve(..., test=HELD_OUT_CASES) to compare on them")
        if s.seed_id not in s.pool:
            raise UserError(f"nothing to compare: {s.reason}; call improve(...) again (with log=... it resumes)")
        if finish and min(s.test_done().values()) < len(s.test):
            from agentnb.evaluation.run import Stopper
            from agentnb.run.sync import run_sync

            run_sync(lambda: s.run_test(Stopper()))  # a Stop of its own: the search's ended the search
        ev, best = s.test_eval, self.best_id
        done = s.test_done()
        if ev is None or min(done.values()) == 0:
            raise UserError(
                f"the test comparison was stopped before any test case was run by both the original and the best "
                f"({s.test_progress()}): call .compare() to run it"
            )
        if best == s.seed_id:
            return _same(ev, s.seed_id)
        cmp = ev.compare(s.seed_id, best)
        changed = cmp.changed.rename(columns={s.seed_id: "original", best: "best"})
        changed["direction"] = changed["direction"].str.replace(s.seed_id, "the original").str.replace(best, "best")
        return dataclasses.replace(cmp, a="original", b="best", changed=changed)

    @property
    def verdict(self) -> str:
        """The test comparison in words (or why there is none yet)."""
        s = self._search
        if not s.test:
            return "No test set was given: nothing here measures the improvement on unseen cases."
        if s.seed_id not in s.pool:
            return (
                "The search was stopped before the original was scored: there is nothing to compare on the test cases."
            )
        if s.test_eval is None:
            return "The search was stopped before the test comparison: call .compare() to run it."
        if min(s.test_done().values()) < len(s.test):
            return partial(self, s.test_progress())
        return words(self.compare(), len(s.test), self.best_id == s.seed_id)

    # -- traces and views ------------------------------------------------------------------

    def run(self, candidate: str, case: str) -> Any:
        """The RunResult of one case run of one candidate (ids as in ``candidates`` and the tables)."""
        if (candidate, case) not in self._search.rows:
            raise UserError(f"candidate {candidate!r} was not run on case {case!r}")
        return self._search.result_of(candidate, case)

    def trace(self, candidate: str, case: str) -> Any:
        """That run in the trace widget (needs ipywidgets)."""
        from agentnb.notebook.trace.widget import TraceWidget

        return TraceWidget.replay(self.run(candidate, case))

    def runs_of(self, candidate: str) -> list[str]:
        """The ids of the cases this candidate was run on."""
        return [case for cid, case in self._search.rows if cid == candidate]

    def view(self) -> Any:
        """A widget: the candidates, the winning diff, the test comparison, and any run's trace."""
        from agentnb.improvement.views import ImprovementView

        return ImprovementView(self)

    def __repr__(self) -> str:
        from agentnb.improvement.report import summary_text

        return summary_text(self)

    def _repr_html_(self) -> str:
        from agentnb.improvement.report import improvement_html

        return improvement_html(self)


def _same(ev: Any, seed: str) -> Any:
    """The comparison when the best is the original: every pair agrees."""
    import pandas as pd

    from agentnb.evaluation.results import Comparison

    rows = [r for r in ev.rows if r["agent"] == seed]
    passed = sum(1 for r in rows if r.get("passed"))
    empty = pd.DataFrame(columns=["case", "repeat", "original", "best", "direction"])
    return Comparison("original", "best", len(rows), passed, 0, 0, len(rows) - passed, 1.0, empty)


def partial(imp: Any, progress: str) -> str:
    """The verdict of a test comparison that a Stop cut short: what finished, and how to finish it."""
    head = f"The test comparison was stopped ({progress})"
    try:
        cmp = imp.compare(finish=False)
    except UserError:
        return head + ": call .compare() to finish it (the finished runs are kept, not repeated)."
    if imp.best_id == imp._search.seed_id:
        seen = f"on the {cmp.pairs} that finished, the original (the best) passes {cmp.both_pass}"
    else:
        orig, best = cmp.both_pass + cmp.only_a, cmp.both_pass + cmp.only_b
        seen = f"on the {cmp.pairs} that both finished, the original passes {orig}, the best {best}"
    return f"{head}; {seen}: a part of the test set; call .compare() to finish it (the finished runs are kept, not repeated)."


def words(cmp: Any, n: int, same: bool) -> str:
    """A comparison in a sentence, with what it can and cannot say.

    >>> from agentnb.evaluation.results import Comparison
    >>> print(words(Comparison("original", "best", 8, 2, 0, 5, 1, 0.0625, None), 8, False))
    On the 8 test cases (never shown to the reflector, never used for selection): the original passes 2/8, the best 7/8; 5 pass only with the best, 0 only with the original. McNemar's exact test: p = 0.0625, not significant at the 5% level (8 cases is few).
    """
    head = f"On the {n} test cases (never shown to the reflector, never used for selection): "
    if same:
        return head + (
            f"no candidate beat the original on validation, so the best is the original; it passes "
            f"{cmp.both_pass}/{cmp.pairs}."
        )
    orig, best = cmp.both_pass + cmp.only_a, cmp.both_pass + cmp.only_b
    sig = "significant" if cmp.p_value < 0.05 else "not significant"
    few = f" ({n} cases is few)" if n < 30 and cmp.p_value >= 0.05 else ""
    return (
        head + f"the original passes {orig}/{cmp.pairs}, the best {best}/{cmp.pairs}; {cmp.only_b} pass only with the "
        f"best, {cmp.only_a} only with the original. McNemar's exact test: p = {cmp.p_value:.3g}, {sig} at the 5% "
        f"level{few}."
    )
