"""evaluate and the garbage collector: older objects are frozen during the runs only, and a
collector that the caller manages (off, or with objects frozen already) is left as it is."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agentnb import Agent, evaluate, tool
from agentnb.testing import FunctionProvider, call


def probe_agent(seen: list[int]) -> Agent:
    @tool
    def probe() -> str:
        """Report the collector's frozen count."""
        seen.append(gc.get_freeze_count())
        return "ok"

    def model(messages, tools):
        return call("probe") if messages[-1].role == "user" else "done"

    return Agent(FunctionProvider(model), tools=[probe])


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    was = gc.isenabled()
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()
    if was:
        gc.enable()


def test_objects_older_than_the_runs_are_frozen_while_they_go_on_and_thawed_after() -> None:
    seen: list[int] = []
    ev = evaluate(probe_agent(seen), ["a", "b", "c"], concurrency=3, progress=False)
    assert [r["output"] for r in ev.rows] == ["done"] * 3
    assert len(seen) == 3 and min(seen) > 1000  # the modules' objects, at least
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_freeze_gc_false_leaves_the_collector_alone() -> None:
    seen: list[int] = []
    evaluate(probe_agent(seen), ["a"], progress=False, freeze_gc=False)
    assert seen == [0]


def test_a_collector_that_is_off_or_already_frozen_is_left_as_it_is() -> None:
    seen: list[int] = []
    gc.disable()
    evaluate(probe_agent(seen), ["a"], progress=False)
    assert seen == [0] and not gc.isenabled()
    gc.enable()
    gc.freeze()
    mine = gc.get_freeze_count()
    evaluate(probe_agent(seen), ["b"], progress=False)
    # neither frozen again (the count would grow) nor thawed (it would fall to 0); frozen objects
    # that die meanwhile leave the permanent generation, so the count may fall by a few
    assert mine * 0.9 <= seen[-1] <= mine and mine * 0.9 <= gc.get_freeze_count() <= mine


class Broken:
    """A progress view that fails on the first row."""

    def start(self, ev, total, stopper):
        pass

    def row(self, row):
        raise RuntimeError("view broke")

    def finish(self, ev):
        pass


def test_an_evaluation_that_fails_midway_thaws_too() -> None:
    seen: list[int] = []
    with pytest.raises(RuntimeError, match="view broke"):
        evaluate(probe_agent(seen), ["a", "b"], progress=Broken(), concurrency=1)
    assert seen and seen[0] > 0 and gc.get_freeze_count() == 0


def test_the_young_threshold_is_raised_during_the_runs_and_set_back_after() -> None:
    """evaluate collects the youngest generation less often while it runs (never more often),
    and the process's thresholds are as they were afterwards, also when a run raises."""
    from agentnb.evaluation.heap import YOUNG_THRESHOLD

    seen: list[int] = []

    @tool
    def probe() -> str:
        """Report the collector's young threshold."""
        seen.append(gc.get_threshold()[0])
        return "ok"

    def model(messages, tools):
        return call("probe") if messages[-1].role == "user" else "done"

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        evaluate(Agent(FunctionProvider(model), tools=[probe]), ["a", "b"], concurrency=2, progress=False)
        assert seen == [YOUNG_THRESHOLD] * 2 and gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(50_000, 10, 10)  # a caller's higher threshold is kept, not lowered
        evaluate(Agent(FunctionProvider(model), tools=[probe]), ["c"], progress=False)
        assert seen[-1] == 50_000 and gc.get_threshold() == (50_000, 10, 10)
        gc.set_threshold(700, 10, 10)
        evaluate(Agent(FunctionProvider(model), tools=[probe]), ["d"], progress=False, freeze_gc=False)
        assert seen[-1] == 700
    finally:
        gc.set_threshold(*before)
