"""agentnb.evaluate: datasets in, scored rows out; each case isolated; the log and resume."""

from __future__ import annotations

import asyncio
import io
import json
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

import agentnb
from agentnb import Agent, UserError, tool
from agentnb.evaluation import (
    Evaluation,
    Stopper,
    at_most,
    called,
    contains,
    exact,
    judge,
    load_cases,
    no_tool,
    number,
    regex,
    value_equals,
)
from agentnb.evaluation.log import read_log
from agentnb.evaluation.progress import TerminalProgress
from agentnb.messages import UserMessage
from agentnb.testing import FunctionProvider, ScriptedProvider, call

CASES = [
    {"input": "2 + 2", "expected": "4", "level": "easy"},
    {"input": "3 * 3", "expected": "9", "level": "easy"},
    {"input": "10 - 7", "expected": "3", "level": "hard"},
]


def prompt_of(messages: Any) -> str:
    return next(m.content for m in messages if isinstance(m, UserMessage))


def arithmetic(wrong: set[str] = frozenset()) -> FunctionProvider:  # type: ignore[assignment]
    """Answers each question by evaluating it (wrongly, +1, for the prompts in ``wrong``)."""

    def answer(messages: Any, tools: Any) -> str:
        q = prompt_of(messages)
        value = eval(q, {})  # the test's own arithmetic strings
        return f"The answer is {value + (1 if q in wrong else 0)}."

    return FunctionProvider(answer)


def test_lists_dataframes_csv_and_jsonl_give_the_same_cases_with_metadata(tmp_path: Path) -> None:
    jsonl = tmp_path / "cases.jsonl"
    jsonl.write_text("".join(json.dumps(c) + "\n" for c in CASES))
    csv_path = tmp_path / "cases.csv"
    pd.DataFrame(CASES).to_csv(csv_path, index=False)
    sources = [CASES, pd.DataFrame(CASES), str(jsonl), csv_path]
    loaded = [load_cases(s) for s in sources]
    for cases in loaded:
        assert [(c.input, str(c.expected), c.metadata) for c in cases] == [
            (c["input"], c["expected"], {"level": c["level"]}) for c in CASES
        ]
    assert loaded[0][0].id == loaded[2][0].id  # same content, same id: resume across sources
    ev = agentnb.evaluate(Agent(arithmetic()), csv_path, scorers=[contains()], progress=False)
    table = ev.table
    assert list(table["level"]) == ["easy", "easy", "hard"]
    assert list(table["passed"]) == [True, True, True]
    assert load_cases(["hi"])[0].input == "hi"


def test_input_column_or_template_and_clear_errors() -> None:
    rows = [{"a": 2, "b": 5, "want": 7}]
    assert load_cases(rows, input="{a} + {b}", expected="want")[0].input == "2 + 5"
    assert load_cases([{"q": "x"}], input="q")[0].metadata == {}
    with pytest.raises(UserError, match="no 'input' column"):
        load_cases([{"q": "x"}])
    with pytest.raises(UserError, match="cannot be filled"):
        load_cases(rows, input="{c}")
    with pytest.raises(UserError, match=r"\.jsonl or \.csv"):
        load_cases(__file__)
    with pytest.raises(UserError, match="the id '1'"):
        load_cases([{"input": "a", "id": 1}, {"input": "b", "id": 1}])


def test_builtin_scorers_on_output_structure_and_trajectory() -> None:
    @tool
    def lookup(city: str, units: str = "metric") -> str:
        """Look up the weather."""
        return "12 C"

    class Weather(BaseModel):
        city: str
        temp: int

    agent = Agent(
        ScriptedProvider([call("lookup", city="Oslo"), '{"city": "Oslo", "temp": 12}']),
        tools=[lookup],
        output_type=Weather,
    )
    ev = agentnb.evaluate(
        agent,
        [{"input": "Weather in Oslo?", "expected": {"city": "Oslo", "temp": 13}}],
        scorers=[
            value_equals(),
            called("lookup", city="Oslo"),
            called("lookup", name="metric", units=lambda u: u == "metric"),
            called("lookup", name="in_paris", city="Paris"),
            no_tool(),
            at_most(1),
            regex(r"\d+", name="digits"),
            contains("oslo", name="says_oslo"),
        ],
        progress=False,
    )
    row = ev.table.iloc[0]
    assert row["value_equals"] == 0.5  # city equal, temp not: field by field
    assert row["called_lookup"] and not row["metric"] and not row["in_paris"]  # units was not passed
    assert not row["no_tool"] and row["at_most_1_calls"] and row["digits"] and row["says_oslo"]
    assert row["tools"] == ["lookup"] and row["tool_calls"] == 1 and row["model_calls"] == 2
    assert row["value"] == {"city": "Oslo", "temp": 12}
    assert not row["passed"]

    r = Agent(ScriptedProvider(["It is 1,234.5 units"])).run("?")
    case = load_cases([{"input": "?", "expected": "1234.50"}])[0]
    assert number()(case, r) and not exact()(case, r) and number(1234.4, tolerance=0.2)(case, r)
    assert not number(1234.0)(case, r)


def test_function_scorers_async_scorers_thresholds_and_names() -> None:
    def length(case: Any, result: Any) -> float:
        return min(1.0, len(result.output) / 20)

    async def slow_ok(case: Any, result: Any) -> bool:
        await asyncio.sleep(0)
        return True

    ev = agentnb.evaluate(Agent(arithmetic()), CASES[:1], scorers={"len": length, "ok": slow_ok}, progress=False)
    assert ev.table.iloc[0]["len"] == pytest.approx(len("The answer is 4.") / 20)
    assert ev.table.iloc[0]["passed"]  # 0.8 >= the default threshold 0.5
    with pytest.raises(UserError, match="two scorers"):
        agentnb.evaluate(Agent(arithmetic()), CASES, scorers=[contains(), contains()], progress=False)
    with pytest.raises(UserError, match="unknown scorer"):
        agentnb.evaluate(Agent(arithmetic()), CASES, scorers=["nope"], progress=False)


def test_a_scorer_that_raises_is_an_error_for_that_case_and_scorer_only() -> None:
    def picky(case: Any, result: Any) -> bool:
        if case.input == "3 * 3":
            raise RuntimeError("cannot score this one")
        return True

    ev = agentnb.evaluate(Agent(arithmetic()), CASES, scorers=[picky, contains()], progress=False)
    t = ev.table
    bad = t[t["input"] == "3 * 3"].iloc[0]
    assert bad["picky"] is None and bad["contains"] and not bad["passed"]
    assert bad["scorer_errors"] == {"picky": "RuntimeError: cannot score this one"}
    assert list(t["passed"]) == [True, False, True]
    assert ev.summary().iloc[0]["scorer_errors"] == 1


def test_judge_scorer_asks_a_provider() -> None:
    judge_model = ScriptedProvider(["PASS", "FAIL because", "maybe"])
    ev = agentnb.evaluate(Agent(arithmetic()), CASES, scorers=[judge(judge_model)], concurrency=1, progress=False)
    assert list(ev.table["judge"]) == [True, False, None]
    assert "neither PASS nor FAIL" in ev.table.iloc[2]["scorer_errors"]["judge"]
    asked = judge_model.requests[0].messages[0].content
    assert "Question: 2 + 2" in asked and "Answer: The answer is 4." in asked


def test_a_raising_tool_a_failing_provider_and_an_invalid_answer_mark_only_their_case() -> None:
    @tool
    def explode(x: int) -> int:
        """Always fails."""
        raise ValueError("boom")

    class Answer(BaseModel):
        n: int

    def model(messages: Any, tools: Any) -> Any:
        q = prompt_of(messages)
        if q == "tool" and not any(m.role == "tool" for m in messages):
            return call("explode", x=1)
        if q == "provider":
            return RuntimeError("server went away")
        if q == "invalid":
            return "not json at all"
        return '{"n": 1}'

    agent = Agent(FunctionProvider(model), tools=[explode], output_type=Answer, max_output_retries=1)
    ev = agentnb.evaluate(agent, ["tool", "provider", "invalid", "fine"], progress=False)
    t = ev.table.set_index("input")
    assert t.loc["tool", "stop_reason"] == "answer" and t.loc["tool", "passed"]  # the model read the error
    assert t.loc["provider", "stop_reason"] == "error" and "server went away" in t.loc["provider", "error"]
    assert t.loc["invalid", "stop_reason"] == "invalid_output" and not t.loc["invalid", "passed"]
    assert t.loc["invalid", "error"] and t.loc["invalid", "value"] is None
    assert t.loc["fine", "passed"] and t.loc["fine", "value"] == {"n": 1}
    assert ev.summary().iloc[0]["errors"] == 2


def test_a_hanging_tool_times_out_and_the_evaluation_goes_on() -> None:
    @tool
    async def hang() -> str:
        """Never returns."""
        await asyncio.sleep(3600)
        return "never"

    @tool
    def sleepy() -> str:
        """A blocking tool that takes too long."""
        time.sleep(2)
        return "late"

    def model(messages: Any, tools: Any) -> Any:
        q = prompt_of(messages)
        if q in ("hang", "sleepy") and not any(m.role == "tool" for m in messages):
            return call(q)
        return "ok"

    start = time.monotonic()
    ev = agentnb.evaluate(
        Agent(FunctionProvider(model), tools=[hang, sleepy]), ["hang", "sleepy", "quick"], timeout=0.5, progress=False
    )
    assert time.monotonic() - start < 10
    t = ev.table.set_index("input")
    assert t.loc["hang", "stop_reason"] == "timeout" and "0.5 s" in t.loc["hang", "error"]
    assert t.loc["sleepy", "stop_reason"] == "timeout"
    assert t.loc["quick", "stop_reason"] == "answer" and t.loc["quick", "output"] == "ok"


def test_concurrency_is_bounded_and_repeats_multiply_rows() -> None:
    live = peak = 0

    async def model(messages: Any, tools: Any) -> str:
        nonlocal live, peak
        live += 1
        peak = max(peak, live)
        await asyncio.sleep(0.02)
        live -= 1
        return "ok"

    ev = agentnb.evaluate(
        Agent(FunctionProvider(model)), [f"q{i}" for i in range(30)], concurrency=4, repeats=2, progress=False
    )
    assert peak == 4
    assert len(ev.table) == 60 and sorted(ev.table["repeat"].unique()) == [0, 1]
    assert list(ev.table["input"][:4]) == ["q0", "q0", "q1", "q1"]  # dataset order, repeats together


def test_two_agents_compared_with_a_paired_exact_test() -> None:
    cases = [{"input": f"{i} + {i}", "expected": str(2 * i)} for i in range(8)]
    worse = {f"{i} + {i}" for i in range(6)}
    ev = agentnb.evaluate(
        {"good": Agent(arithmetic()), "bad": Agent(arithmetic(worse))}, cases, scorers=[number()], progress=False
    )
    s = ev.summary().set_index("agent")
    assert s.loc["good", "pass_rate"] == 1.0 and s.loc["bad", "pass_rate"] == 0.25
    assert s.loc["bad", "ci_low"] < 0.25 < s.loc["bad", "ci_high"]
    cmp = ev.compare()
    assert (cmp.only_a, cmp.only_b, cmp.both_pass, cmp.pairs) == (6, 0, 2, 8)
    assert cmp.p_value == pytest.approx(2 / 2**6)
    assert set(cmp.changed["direction"]) == {"only good passes"}
    assert "McNemar" in repr(ev)
    with pytest.raises(UserError, match="no agent"):
        ev.compare("good", "other")


def test_log_resume_skips_logged_cases_and_reloads_traces(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    ev = agentnb.evaluate(Agent(arithmetic()), CASES, scorers=[contains()], log=str(log), progress=False)
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x)["transcript"]["events"] for x in lines)
    assert ev._results == {}  # with a log, memory holds rows, not transcripts
    assert ev.run(2).output == "The answer is 3."
    refuse = FunctionProvider(lambda m, t: pytest.fail("a logged case ran again"))
    again = agentnb.evaluate(Agent(refuse), CASES, scorers=[contains()], log=str(log), progress=False)
    assert again.resumed == 3 and list(again.table["output"]) == list(ev.table["output"])
    assert again.run(0).output == "The answer is 4." and len(log.read_text().splitlines()) == 3


def test_a_torn_last_line_is_skipped_with_a_warning_and_its_case_runs_again(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    agentnb.evaluate(Agent(arithmetic()), CASES[:2], log=str(log), progress=False)
    text = log.read_text()
    log.write_text(text[: len(text) - 40])  # the second line torn, as a kill -9 mid-write leaves it
    with pytest.warns(UserWarning, match="torn"):
        ev = agentnb.evaluate(Agent(arithmetic()), CASES, log=str(log), progress=False)
    assert ev.resumed == 1 and len(ev.rows) == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        keys = [row["key"] for row, _ in read_log(log)]
    assert len(caught) == 1  # the torn fragment stays on its own line, still skipped
    assert sorted(keys) == sorted(r["key"] for r in ev.rows)
    assert ev.run(2).output == "The answer is 3."


def test_stop_keeps_what_finished_and_resume_completes_the_rest(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    stopper = Stopper()
    seen = 0

    async def model(messages: Any, tools: Any) -> str:
        nonlocal seen
        seen += 1
        if seen == 5:
            stopper.stop()
        await asyncio.sleep(0.05)
        return "ok"

    cases = [f"q{i}" for i in range(20)]
    ev = agentnb.evaluate(
        Agent(FunctionProvider(model)), cases, log=str(log), concurrency=2, stopper=stopper, progress=False
    )
    assert ev.stopped and 2 <= len(ev.rows) < 20
    assert all(r["stop_reason"] == "answer" for r in ev.rows)  # runs cut by Stop are not rows
    assert len(log.read_text().splitlines()) == len(ev.rows)
    rest = agentnb.evaluate(Agent(FunctionProvider(lambda m, t: "ok")), cases, log=str(log), progress=False)
    assert not rest.stopped and len(rest.rows) == 20 and len(log.read_text().splitlines()) == 20


async def test_aevaluate_in_a_running_loop_and_evaluate_from_inside_one() -> None:
    ev = await agentnb.aevaluate(Agent(arithmetic()), CASES, scorers=[contains()], progress=False)
    assert len(ev.rows) == 3
    ev2 = agentnb.evaluate(Agent(arithmetic()), CASES, scorers=[contains()], progress=False)  # like Jupyter
    assert list(ev2.table["passed"]) == [True, True, True]


def test_untrusted_text_is_escaped_in_html_and_terminal_views() -> None:
    hostile = '<script>alert(1)</script><img src=x onerror="x()">'
    ev = agentnb.evaluate(
        Agent(FunctionProvider(lambda m, t: hostile)), [{"input": hostile, "tag": hostile}], progress=False
    )
    html = ev._repr_html_()
    assert "<script>" not in html and "<img" not in html and "&lt;script&gt;" in html
    out = io.StringIO()
    bar = TerminalProgress(out)
    bar.start(Evaluation(["agent"], []), 1, Stopper())
    bar.row(ev.rows[0])
    bar.finish(ev)
    assert "] 1/1 · 100% passed" in out.getvalue() and "agent: 1/1 passed" in out.getvalue()


def test_bad_arguments_are_clear_errors() -> None:
    agent = Agent(arithmetic())
    with pytest.raises(UserError, match="concurrency"):
        agentnb.evaluate(agent, CASES, concurrency=0)
    with pytest.raises(UserError, match="not an agentnb Agent"):
        agentnb.evaluate({"x": "local"}, CASES)
    with pytest.raises(UserError, match="executor"):
        agentnb.evaluate(agent, CASES, executor="spark", progress=False)
    with pytest.raises(UserError, match="dataset"):
        agentnb.evaluate(agent, 42)


def test_wilson_interval_always_holds_the_rate_and_plot_draws() -> None:
    from agentnb.evaluation.stats import wilson

    for n in range(1, 60):
        for k in range(n + 1):
            lo, hi = wilson(k, n)
            assert 0.0 <= lo <= k / n <= hi <= 1.0
    ev = agentnb.evaluate(
        {"a": Agent(arithmetic()), "b": Agent(arithmetic({"3 * 3"}))}, CASES, scorers=[number()], progress=False
    )
    fig = ev.plot()
    assert [ax.get_title() for ax in fig.axes] == ["pass rate (95% CI)", "pass rate by level", "latency (s)"]


@tool
def _double(x: int) -> int:
    """Double a number."""
    return 2 * x


def test_tools_and_a_used_openai_provider_travel_pickled_as_ray_sends_them() -> None:
    from ray import cloudpickle as pickle  # what the Ray executor sends them with

    from agentnb.providers import OpenAIProvider

    copy = pickle.loads(pickle.dumps(_double))
    assert copy.validate({"x": 2}) == [] and copy.validate({"x": "no"})  # the validator still compiles
    provider = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key="sk-secret-key")

    async def use() -> None:
        assert provider.client is not None  # a live client: locks and sockets, not picklable

    asyncio.run(use())
    clone = pickle.loads(pickle.dumps(Agent(provider, tools=[_double])))
    assert clone.provider._clients._client is None and clone.tools["_double"].validate({"x": 1}) == []


def test_the_progress_widget_counts_rows_escapes_names_and_its_stop_button_stops(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from agentnb.evaluation.progress import ProgressWidget

    widget = ProgressWidget()
    clicked = 0

    async def model(messages: Any, tools: Any) -> str:
        nonlocal clicked
        clicked += 1
        if clicked == 3:
            widget.stop_button.click()  # as a user would, while runs are in flight
        await asyncio.sleep(0.02)
        return "ok"

    name = "<b>bold</b>"
    ev = agentnb.evaluate(
        {name: Agent(FunctionProvider(model))}, [f"q{i}" for i in range(30)], concurrency=2, progress=widget
    )
    assert ev.stopped and 1 <= len(ev.rows) < 30
    assert widget.stop_button.disabled and widget.bar.value == len(ev.rows)
    assert "&lt;b&gt;bold&lt;/b&gt;" in widget.lines.value and "<b>bold" not in widget.lines.value


def test_a_scorer_that_raises_is_counted_in_the_summary_and_a_bad_pattern_or_log_path_fails_first(
    tmp_path: Path,
) -> None:
    def broken(case: Any, result: Any) -> bool:
        raise ValueError("a bug in the scorer")

    agent = Agent(FunctionProvider(lambda m, t: "4"))
    ev = agentnb.evaluate(agent, [{"input": "2 + 2", "expected": "4"}], scorers=[broken, exact()], progress=False)
    assert ev.table.loc[0, "scorer_errors"] == {"broken": "ValueError: a bug in the scorer"}
    # the summary read "0/1 passed  errors 0", as if the agent had failed the case
    assert "scorer errors 1" in repr(ev) and "scorer errors 1" in ev._repr_html_()
    with pytest.raises(UserError, match="is not a regular expression"):
        regex("(")  # was: every row's score None, "0/n passed  errors 0"
    (tmp_path / "runs").mkdir()
    for path, says in [(tmp_path / "runs", "is a folder"), (tmp_path / "no" / "runs.jsonl", "does not exist")]:
        with pytest.raises(UserError, match=says):  # was: IsADirectoryError after the executor started
            agentnb.evaluate(agent, [{"input": "x"}], log=path, progress=False)
