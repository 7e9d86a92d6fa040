"""What an evaluation tells its reader (issue 39): which agent is better and whether significantly,
pairing per case over repeats, latency apart from queueing, a readable summary, a log that opens
alone after a restart, resumes and stops that say so, and a view that outlives its kernel."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentnb
from agentnb import Agent, UserError
from agentnb.evaluation import Evaluation, Stopper, contains
from agentnb.evaluation.compare import compare_rows
from agentnb.evaluation.progress import Tally
from agentnb.evaluation.stats import mcnemar_exact
from agentnb.messages import UserMessage
from agentnb.testing import FunctionProvider


def prompt_of(messages: Any) -> str:
    return next(m.content for m in messages if isinstance(m, UserMessage))


def passes_for(good: set[str]) -> FunctionProvider:
    """Answers "ok" to the prompts in ``good``, "no" to the others."""
    return FunctionProvider(lambda m, t: "ok" if prompt_of(m) in good else "no")


# --- compare() in words ---------------------------------------------------------------------


def test_compare_says_which_agent_is_better_and_that_it_is_significant() -> None:
    cases = [f"q{i}" for i in range(14)]
    ev = agentnb.evaluate(
        {"plain": Agent(passes_for({"q0", "q1"})), "tools": Agent(passes_for(set(cases)))},
        cases, scorers=[contains("ok")], progress=False,
    )  # fmt: skip
    cmp = ev.compare()
    assert (cmp.a, cmp.b, cmp.only_a, cmp.only_b, cmp.both_pass) == ("plain", "tools", 0, 12, 2)
    assert cmp.better == "tools" and cmp.significant
    assert str(cmp) == (
        "'tools' better: 12 cases pass only with it, 0 only with 'plain'; significant at 5% (McNemar exact p = 0.00049)"
    )
    assert str(cmp) in repr(ev) and str(cmp).replace("'", "&#x27;") in ev._repr_html_()


def test_compare_says_when_a_difference_is_not_significant_and_when_there_is_none() -> None:
    cases = [f"q{i}" for i in range(6)]
    ev = agentnb.evaluate(
        {"a": Agent(passes_for({"q0", "q1", "q2"})), "b": Agent(passes_for({"q0"})), "c": Agent(passes_for({"q5"}))},
        cases, scorers=[contains("ok")], progress=False,
    )  # fmt: skip
    ahead = ev.compare("a", "b")
    assert ahead.better == "a" and not ahead.significant
    assert str(ahead) == (
        "'a' ahead but not significantly: 2 cases pass only with it, 0 only with 'b'; not significant at 5% "
        "(McNemar exact p = 0.5): the difference may be chance"
    )
    tie = ev.compare("b", "c")
    assert tie.better is None and str(tie).startswith("no difference between 'b' and 'c': 1 cases pass only")
    assert "not significant (McNemar exact p = 1)" in str(tie)
    with pytest.raises(UserError, match="two different agents"):
        ev.compare("a", "a")


def test_repeats_are_paired_per_case_not_as_independent_pairs() -> None:
    # 20 deterministic cases: 'tools' passes 8 that 'plain' fails. Twice as many rows must not
    # make the difference look twice as sure (it was p 0.109 with repeats against 0.296 without).
    cases = [f"q{i}" for i in range(20)]
    agents = {"tools": Agent(passes_for(set(cases[:10]))), "plain": Agent(passes_for(set(cases[:2])))}
    once = agentnb.evaluate(agents, cases, scorers=[contains("ok")], progress=False).compare()
    twice = agentnb.evaluate(agents, cases, scorers=[contains("ok")], repeats=2, progress=False).compare()
    assert (once.pairs, once.only_a, once.only_b) == (twice.pairs, twice.only_a, twice.only_b) == (20, 8, 0)
    assert twice.p_value == once.p_value == mcnemar_exact(8, 0)
    assert once.test == "McNemar exact"
    assert twice.test == "exact sign test on per-case pass rates over 2 repeats"
    assert "8 cases pass more often with it, 0 with 'plain'" in str(twice) and twice.test in str(twice)
    assert list(twice.changed.columns) == ["case", "tools", "plain", "direction"]
    assert set(twice.changed["tools"]) == {1.0} and set(twice.changed["plain"]) == {0.0}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=30))
def test_one_repeat_pairing_is_mcnemar_on_the_discordant_cases(pairs: list[tuple[bool, bool]]) -> None:
    rows = [
        {"case": str(i), "agent": name, "repeat": 0, "passed": passed}
        for i, pair in enumerate(pairs)
        for name, passed in zip(("a", "b"), pair, strict=True)
    ]
    cmp = compare_rows(rows, "a", "b")
    only_a = sum(1 for x, y in pairs if x and not y)
    only_b = sum(1 for x, y in pairs if y and not x)
    assert (cmp.only_a, cmp.only_b, cmp.both_pass, cmp.neither) == (
        only_a, only_b, sum(1 for x, y in pairs if x and y), sum(1 for x, y in pairs if not x and not y),
    )  # fmt: skip
    assert cmp.p_value == mcnemar_exact(only_a, only_b) and len(cmp.changed) == only_a + only_b


# --- latency and queueing -------------------------------------------------------------------


class InProcess(FunctionProvider):
    """A model that, like the embedded one, serves one request at a time (its own lock)."""

    __test__ = False
    in_process = True

    def __init__(self, seconds: float) -> None:
        self.busy = 0
        self.peak = 0

        async def reply(messages: Any, tools: Any) -> str:
            self.busy += 1
            self.peak = max(self.peak, self.busy)
            await asyncio.sleep(seconds)
            self.busy -= 1
            return "ok"

        super().__init__(reply)


def test_latency_is_a_runs_own_time_and_the_wait_for_an_in_process_model_is_apart() -> None:
    model = InProcess(0.05)
    agents = {"tools": Agent(model), "plain": Agent(model)}  # one model, two configurations
    with pytest.warns(UserWarning, match="in-process model, which serves one run at a time"):
        ev = agentnb.evaluate(agents, [f"q{i}" for i in range(6)], concurrency=6, progress=False)
    assert model.peak == 1  # runs of the model went one after another
    lat, waits = list(ev.table["latency"]), list(ev.table["queue_wait"])
    assert max(lat) < 0.05 * 3, lat  # each its own ~0.05 s, not the queue's ~0.6 s
    assert max(waits) > 0.05 * 4 and sum(waits) > 0.05 * 20, waits  # 6 in flight: up to 5 runs ahead
    s = ev.summary().set_index("agent")
    assert s.loc["tools", "queue_wait_p50"] > 0 and "queue wait p50" in repr(ev)


def test_agents_on_a_server_are_not_queued_and_not_warned_about(recwarn: pytest.WarningsRecorder) -> None:
    busy = peak = 0

    async def reply(messages: Any, tools: Any) -> str:
        nonlocal busy, peak
        busy += 1
        peak = max(peak, busy)
        await asyncio.sleep(0.05)
        busy -= 1
        return "ok"

    ev = agentnb.evaluate(Agent(FunctionProvider(reply)), [f"q{i}" for i in range(8)], concurrency=4, progress=False)
    assert peak == 4 and set(ev.table["queue_wait"]) == {0.0}
    assert not [w for w in recwarn if "in-process" in str(w.message)]


# --- the summary, resume and stop notes -----------------------------------------------------


def test_the_summary_shows_rounded_values_left_aligned_text_and_keeps_exact_ones() -> None:
    ev = agentnb.evaluate(
        {"<i>x</i>": Agent(passes_for({"q0"}))}, ["q0", "q1", "q2"], scorers=[contains("ok")], progress=False
    )
    s = ev.summary()
    assert s["pass_rate"].tolist() == [1 / 3]  # exact values stay
    html = s._repr_html_()
    assert "33.3%" in html and "0.333333" not in html and re.search(r"\d\.\d{3,} s", html) is None
    assert "&lt;i&gt;x&lt;/i&gt;" in html and "<i>x" not in html
    assert 'text-align:left;white-space:nowrap">&lt;i&gt;' in html  # the agent column is text: left
    assert "latency p50" in html  # headers wrap at spaces: the table fits 1280 px
    text = repr(s)
    assert "33.3%" in text and "0.333333" not in text
    assert type(s.set_index("agent")).__name__ == "DataFrame"  # derived frames are plain


def test_a_resumed_run_says_how_many_rows_came_from_the_log_and_a_stopped_one_how_to_resume(tmp_path: Path) -> None:
    t = Tally(["a"], total=4, clock=lambda: 1.0)
    t.add({"agent": "a", "passed": True, "error": None}, new=False)
    assert t.speed().endswith("1 from the log (resumed)")
    log = tmp_path / "runs.jsonl"
    stopper = Stopper()

    async def stop_on_third(messages: Any, tools: Any) -> str:
        if prompt_of(messages) == "q2":
            stopper.stop()
        await asyncio.sleep(0.01)
        return "ok"

    cases = [f"q{i}" for i in range(10)]
    ev = agentnb.evaluate(
        Agent(FunctionProvider(stop_on_third)), cases, concurrency=1, stopper=stopper, log=str(log), progress=False
    )
    assert ev.stopped
    assert "run the same call again to resume from the log" in repr(ev)
    assert "run the same call again to resume from the log" in ev._repr_html_()
    stopper = Stopper()
    no_log = agentnb.evaluate(Agent(FunctionProvider(stop_on_third)), cases, concurrency=1, stopper=stopper,
                              progress=False)  # fmt: skip
    assert no_log.stopped and "evaluate with log=... to be able to resume" in repr(no_log)


# --- Evaluation.load and rows lost to the infrastructure ------------------------------------


def test_a_log_opens_alone_after_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    agents = {"good": Agent(passes_for({"q0", "q1"})), "bad": Agent(passes_for(set()))}
    ev = agentnb.evaluate(agents, ["q0", "q1", "q2"], scorers=[contains("ok")], log=str(log), progress=False)
    back = Evaluation.load(log)
    assert back.agents == ["good", "bad"] and back.scorers == ["contains"]
    cols = ["case", "agent", "output", "contains", "passed"]
    assert back.table[cols].equals(ev.table[cols])
    assert str(back.compare()) == str(ev.compare())
    assert back.run(1).output == ev.run(1).output == "no"
    with pytest.raises(UserError, match="no evaluation log"):
        Evaluation.load(tmp_path / "missing.jsonl")


def test_a_row_lost_to_the_infrastructure_is_not_done_a_resume_runs_it(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    agentnb.evaluate(Agent(passes_for({"q0", "q1"})), ["q0", "q1"], scorers=[contains("ok")], log=str(log),
                     progress=False)  # fmt: skip
    lines = log.read_text().splitlines()
    lost = json.loads(lines[1])
    lost["row"].update(lost=True, passed=False, stop_reason="error", error="infrastructure error, not a verdict")
    log.write_text(lines[0] + "\n" + json.dumps(lost) + "\n")
    assert Evaluation.load(log).rows[1]["lost"]  # shown as the error it was
    ran = []
    again = agentnb.evaluate(
        Agent(FunctionProvider(lambda m, t: ran.append(prompt_of(m)) or "ok")), ["q0", "q1"],
        scorers=[contains("ok")], log=str(log), progress=False,
    )  # fmt: skip
    assert ran == ["q1"] and again.resumed == 1 and all(again.table["passed"])
    back = Evaluation.load(log)  # the later run of the case wins over the lost one
    assert len(back.rows) == 2 and all(back.table["passed"])


# --- the view outlives its kernel -----------------------------------------------------------


def test_the_view_opens_a_trace_above_the_table_and_has_a_static_copy() -> None:
    pytest.importorskip("ipywidgets")
    ev = agentnb.evaluate(
        Agent(FunctionProvider(lambda m, t: "<script>alert(1)</script>")), ["a", "b"], scorers=[contains("ok")],
        progress=False,
    )  # fmt: skip
    view = ev.view()
    children = list(view.widget.children)
    assert children.index(view.trace) < children.index(view.html)  # the trace opens next to the controls
    view.show(1)
    assert view.shown == 1
    static = view.static_html()
    assert "trace of row 1" in static and "<script>" not in static and "&lt;script&gt;" in static
    assert "agentnb-eval" in static and "run it again for the live table" in static
    data, _ = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data and data["text/html"].startswith("<div")


def test_a_score_that_does_not_gate_is_recorded_and_leaves_passed_alone() -> None:
    from agentnb.evaluation import Scorer

    words = Scorer("words", lambda case, result: len(result.output.split()), gate=False)
    ev = agentnb.evaluate(Agent(passes_for({"q0"})), ["q0", "q1"], scorers=[contains("ok"), words], progress=False)
    assert list(ev.table["words"]) == [1, 1] and list(ev.table["passed"]) == [True, False]
    assert ev.summary().loc[0, "mean_words"] == 1.0
