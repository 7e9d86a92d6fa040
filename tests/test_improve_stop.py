"""improve's Stop at each moment of the search (issue 45, item 12), in process.

A student that answers "4" once its system prompt says "digits" (else "four"), a reflector that
proposes that prompt, and gates: a case that never answers at the moment under test, so that only
the Stop ends that moment. A view presses Stop when the search's events say the moment came
(a phase began, a run finished in it): states, not times. The kernel test
(test_improve_stop_kernel.py) and the browser test click the widget's own button.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentnb import Agent, UserError, aimprove, improve
from agentnb.evaluation.log import read_log
from agentnb.improvement.report import summary_text
from agentnb.testing import FunctionProvider

pytestmark = pytest.mark.timeout(60)

TRAIN = [{"id": f"t{i}", "input": f"2+2 (t{i})", "expected": "4"} for i in range(4)]
VAL = [{"id": f"v{i}", "input": f"2+2 (v{i})", "expected": "4"} for i in range(2)]
TEST = [{"id": f"x{i}", "input": f"2+2 (x{i})", "expected": "4"} for i in range(2)]
BETTER = "Answer in digits."


class Student:
    """The student's model. ``hang`` maps (prompt, case prefix) to how many such runs answer;
    the next ones never answer (until cancelled). ``once``: a case that hung answers when asked
    again (the rest of a stopped test comparison)."""

    def __init__(self, hang: dict[tuple[str, str], int] | None = None, once: bool = False) -> None:
        self.hang = dict(hang or {})
        self.once = once
        self.asked: list[tuple[str, str]] = []
        self.hung: set[tuple[str, str]] = set()
        self.provider = FunctionProvider(self.answer, name="student")

    async def answer(self, messages: Any, tools: Any) -> str:
        system = messages[0].content if messages[0].role == "system" else ""
        kind = "better" if "digits" in (system or "") else "original"
        case = str(messages[-1].content).split("(")[1].rstrip(")")
        self.asked.append((kind, case))
        rule = (kind, case[0])
        if rule in self.hang and not (self.once and (kind, case) in self.hung):
            if self.hang[rule] == 0:
                self.hung.add((kind, case))
                await asyncio.Event().wait()  # only a cancellation ends this
            self.hang[rule] -= 1
        return "4" if kind == "better" else "four"


def reflector(hang: bool = False) -> FunctionProvider:
    async def answer(messages: Any, tools: Any) -> str:
        if hang:
            await asyncio.Event().wait()
        return f"```\n{BETTER}\n```"

    return FunctionProvider(answer, name="reflector")


class StopWhen:
    """A view that presses Stop once ``phase`` began and ``runs`` case runs finished in it (or calls ``act``)."""

    def __init__(self, phase: str, runs: int = 0, act: Any = None) -> None:
        self.phase, self.runs, self.act = phase, runs, act  # act: what to do instead of pressing Stop
        self.spent_at_start: int | None = None
        self.spent = 0
        self.events: list[Any] = []

    def start(self, stopper: Any) -> None:
        self.stopper = stopper

    def event(self, e: Any) -> None:
        self.events.append(e)
        if e.kind == "runs_spent":
            self.spent = e.spent
        if e.kind == "phase_started" and e.phase == self.phase:
            self.spent_at_start = self.spent
        if self.spent_at_start is not None and self.spent - self.spent_at_start >= self.runs:
            (self.act or self.stopper.stop)()

    def finish(self, imp: Any) -> None:
        self.finished = imp


def run(student: Student, view: StopWhen, hang_reflector: bool = False, **options: Any) -> Any:
    agent = Agent(student.provider, system="Answer.")
    options = {"validation": VAL, "test": TEST, "budget": 40, "minibatch": 2, **options}
    return improve(agent, TRAIN, ["exact"], reflector=reflector(hang_reflector), progress=[view], **options)


def test_a_stop_during_the_originals_runs_keeps_the_finished_one_and_says_so() -> None:
    student = Student({("original", "v"): 1})
    imp = run(student, StopWhen("original", runs=1))
    assert imp.stopped
    assert imp.reason == "stopped before the original was scored: 1 of 2 runs finished on the validation set"
    assert imp.spent == 1 and imp.runs_of(imp.best_id) == ["v0"]  # the finished run is kept
    assert imp.run(imp.best_id, "v0").output == "four"
    assert imp.candidates.empty and imp.test is None
    assert imp.verdict.startswith("The search was stopped before the original was scored")
    with pytest.raises(UserError, match="nothing to compare: stopped before the original was scored"):
        imp.compare()
    text = summary_text(imp)
    assert "ended: stopped before the original" in text and "0/0" not in text and "p = " not in text


def test_a_stop_during_the_reflection_cancels_it_and_logs_no_proposal(tmp_path: Any) -> None:
    log = str(tmp_path / "improve.jsonl")
    view = StopWhen("reflection")
    imp = run(Student(), view, hang_reflector=True, log=log)
    assert imp.stopped and "budget" not in imp.reason
    assert imp.reason.startswith("stopped during step 1 (the reflection on the failures of the original (")
    assert imp.reason.endswith("was cancelled): the original is kept")
    assert imp.reflections == []
    assert not [row for row, _ in read_log(log) if row.get("improve") == "proposal"]  # a resume asks again
    assert imp.candidates["status"].tolist() == ["seed"] and imp.spent == 4  # validation 2 + minibatch 2
    assert view.events[-1].kind == "improve_finished" and view.events[-1].reason == imp.reason
    assert imp.verdict == "The search was stopped before the test comparison: call .compare() to run it."
    assert "validation: original 0%; no candidate beat it, so the best is the original" in summary_text(imp)
    same = imp.compare()  # runs the test on demand: the best is the original
    assert (same.pairs, same.both_pass) == (2, 0) and imp.spent == 6


def test_a_stop_during_a_new_candidates_minibatch_records_it_as_stopped() -> None:
    student = Student({("better", "t"): 1})
    imp = run(student, StopWhen("candidate", runs=1))
    child = imp.candidates.iloc[-1]
    assert imp.stopped and child["status"] == "stopped" and child["runs"] == 1
    assert child["reason"] == "stopped on the minibatch: 1 of 2 runs finished"
    assert (
        imp.reason
        == f"stopped during step 1 (new candidate {child['id']} on the minibatch: 1 of 2 runs finished): the original is kept"
    )
    assert imp.best_id == imp.candidates.iloc[0]["id"]  # a candidate cut short is never the best
    finished = imp.runs_of(child["id"])
    assert len(finished) == 1 and imp.run(child["id"], finished[0]).output == "4"  # its finished run is kept
    assert "1 stopped (a Stop cut its runs short)" in summary_text(imp)


def test_a_stop_during_a_new_candidates_validation_keeps_its_runs_but_does_not_select_it() -> None:
    student = Student({("better", "v"): 1})
    imp = run(student, StopWhen("validation", runs=1))
    child = imp.candidates.iloc[-1]
    assert (
        imp.stopped and child["status"] == "stopped" and child["runs"] == 3 and child["val_mean"] != child["val_mean"]
    )  # NaN: not scored
    assert child["reason"] == "stopped on the validation set: 1 of 2 runs finished"
    assert child["parent_minibatch"] == 0 and child["child_minibatch"] == 2
    assert imp.reason.startswith(f"stopped during step 1 (new candidate {child['id']} on the validation set")
    kept = imp.runs_of(child["id"])
    assert len(kept) == 3 and [c for c in kept if c.startswith("v")] == ["v0"]  # the finished ones
    assert imp.best_id != child["id"] and imp.spent == 2 + 2 + 2 + 1


def test_a_stop_during_the_test_comparison_keeps_its_runs_and_compare_finishes_only_the_rest() -> None:
    student = Student({("better", "x"): 1}, once=True)
    view = StopWhen("test", runs=3)
    imp = run(student, view)
    best = imp.best_id
    assert imp.best.system == BETTER and imp.stopped
    assert imp.reason.startswith(
        "stopped during the test comparison (the original finished 2 of 2 test cases, the best finished 1 of 2 "
        "test cases); the search had ended: candidate "
    )
    assert "budget" not in imp.reason
    assert imp.test.stopped and len(imp.test.rows) == 3
    assert imp.verdict == (
        "The test comparison was stopped (the original finished 2 of 2 test cases, the best finished 1 of 2 test "
        "cases); on the 1 that both finished, the original passes 0, the best 1: a part of the test set; "
        "call .compare() to finish it (the finished runs are kept, not repeated)."
    )
    text = summary_text(imp)
    assert "0/0" not in text and "p = 1" not in text and "ended: stopped during the test comparison" in text
    part = imp.compare(finish=False)
    assert (part.pairs, part.only_b) == (1, 1)
    asked = len(student.asked)
    whole = imp.compare()  # runs what the Stop left undone: the best on x1, once
    assert student.asked[asked:] == [("better", "x1")]
    assert (whole.pairs, whole.only_b, whole.only_a) == (2, 2, 0)
    assert not imp.test.stopped and len(imp.test.rows) == 4 and imp.spent <= imp.budget
    assert sorted((r["agent"] == best, r["case"]) for r in imp.test.rows) == [
        (False, "x0"), (False, "x1"), (True, "x0"), (True, "x1"),
    ]  # fmt: skip
    assert [imp.test.run(i).output for i in range(4)] == ["four", "4", "four", "4"]  # transcripts kept
    assert imp.verdict.startswith("On the 2 test cases")


def test_compare_without_finishing_says_why_when_no_test_case_finished_for_both() -> None:
    student = Student({("better", "x"): 0})
    imp = run(student, StopWhen("test", runs=2))  # the original's two; the best's hang
    with pytest.raises(UserError, match=r"before any test case was run by both .*the best finished 0 of 2"):
        imp.compare(finish=False)
    assert "call .compare() to finish it" in imp.verdict


@pytest.mark.parametrize(
    ("phase", "runs", "hang", "reason"),
    [
        ("original", 1, {("original", "v"): 1}, "stopped before the original was scored: 1 of 2 runs finished"),
        ("reflection", 0, {}, "stopped during step 1 (the reflection on the failures of the original ("),
    ],
)
def test_cancelling_aimprove_is_a_stop(phase: str, runs: int, hang: dict[Any, int], reason: str) -> None:
    async def main() -> Any:
        came = asyncio.Event()
        view = StopWhen(phase, runs, act=came.set)
        agent = Agent(Student(hang).provider, system="Answer.")
        task = asyncio.ensure_future(aimprove(agent, TRAIN, ["exact"], reflector=reflector(hang=phase == "reflection"),
                                              validation=VAL, budget=40, minibatch=2, progress=[view]))  # fmt: skip
        await came.wait()
        task.cancel()  # what Ctrl-C does to a sync improve(...)
        return await task

    imp = asyncio.run(main())
    assert imp.stopped and imp.reason.startswith(reason), imp.reason


def test_the_live_widget_shows_the_phase_and_catches_up_with_a_held_back_count() -> None:
    pytest.importorskip("ipywidgets")
    from agentnb.improvement.events import ImproveStarted, PhaseStarted, RunsSpent
    from agentnb.improvement.views import ImproveWidget

    widget = ImproveWidget()

    async def main() -> None:
        widget.event(ImproveStarted(4, 2, 2, 40, ("system",)))
        widget.event(PhaseStarted("original", 0, "c1"))
        widget.event(RunsSpent(1, 40))
        widget.event(RunsSpent(2, 40))  # within the throttle's interval: held back, then drawn
        assert "runs 2/40" not in widget.line.value
        while "runs 2/40" not in widget.line.value:  # the search now waits: nothing else would draw it
            await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(main(), 30))
    assert "now: scoring the original on the validation set" in widget.now.value and widget.bar.value == 2
