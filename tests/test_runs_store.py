"""The store of runs (issue 48 items 3 and 4): keep_runs(), runs(), labels, to_dataset, the view.

Two processes writing one store, and a writer killed mid-write: tests/test_runs_store_processes.py.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentnb
from agentnb import Agent, RunResult, evaluate, tool
from agentnb.errors import TranscriptError, UserError
from agentnb.evaluation.cases import load_cases
from agentnb.runstore import keeping
from agentnb.runstore.query import Runs
from agentnb.runstore.schema import connect
from agentnb.runstore.store import RunStore
from agentnb.runstore.view import RunsView, table_html
from agentnb.testing import ScriptedProvider, call
from tests.test_roundtrip_properties import _same
from tests.test_roundtrip_properties import runs as any_run
from tests.untrusted_payloads import PAYLOADS, check_html

texts = st.text(max_size=12)
#: Labels as agentnb.Label takes them: at least one of good / expected / note, timed in UTC.
labels = st.fixed_dictionaries(
    {
        "good": st.none() | st.booleans(),
        "expected": st.none() | texts,
        "note": st.none() | texts,
        "at": st.datetimes(timezones=st.just(__import__("datetime").timezone.utc)).map(lambda d: d.isoformat()),
    }
).filter(lambda label: any(label[name] is not None for name in ("good", "expected", "note")))


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


@pytest.fixture
def kept(tmp_path: Path) -> Any:
    """keep_runs() on a fresh file, turned off after the test."""
    keeper = agentnb.keep_runs(tmp_path / "runs.sqlite")
    yield keeper
    agentnb.keep_runs(None)


# --- round trip ----------------------------------------------------------------------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(run=any_run, given_labels=st.lists(labels, max_size=3))
def test_a_stored_run_reads_back_equal_with_its_labels(
    tmp_path_factory: Any, run: RunResult, given_labels: list
) -> None:
    path = tmp_path_factory.mktemp("rt") / "runs.sqlite"
    store = RunStore(path)
    assert store.save([(run, 1.5)]) == []
    row = Runs(path).rows()[0]
    for label in given_labels:
        assert store.add_label(row["id"], label)
    store.close()
    back = Runs(path)[0]
    given = [label.to_dict() for label in run.labels] + [agentnb.Label(**x).to_dict() for x in given_labels]
    every = list(
        {json.dumps(x, sort_keys=True): x for x in given}.values()
    )  # the run's own, then those added; each once
    _same(dataclasses.replace(run, labels=tuple(agentnb.Label.from_dict(label) for label in every)), back)
    assert json.loads(Runs(path).rows()[0]["labels"]) == every
    last = every[-1] if every else {"good": None, "expected": None, "note": None}
    assert (row := Runs(path).rows()[0])["expected"] == last["expected"] and row["note"] == last["note"]
    assert row["label"] == {None: None, True: "good", False: "bad"}[last["good"]]


# --- keeping the runs of the process -------------------------------------------------------


def test_every_run_is_kept_with_its_columns_and_a_fork_names_its_parent(kept: Any) -> None:
    model = ScriptedProvider([call("weather", city="Paris"), "It is sunny.", "Take an umbrella."])
    agent = Agent(model, tools=[weather], name="forecaster")
    first = agent.run("Weather in Paris?")
    fork = first.fork(1, reply="Rain.")
    Agent(ScriptedProvider(["4"]), name="calc").run("2 + 2?")
    found = agentnb.runs()
    assert len(found) == 3
    by_id = {r["id"]: r for r in found.rows()}
    row = by_id[first.run_id]
    assert (row["agent"], row["model"], row["prompt"], row["answer"]) == (
        "forecaster", "scripted", "Weather in Paris?", "It is sunny.",
    )  # fmt: skip
    assert (row["stop_reason"], row["tools"], row["tool_calls"], row["parent"]) == ("answer", "weather", 1, None)
    assert by_id[fork.run_id]["parent"] == first.run_id and by_id[fork.run_id]["answer"] == "Rain."
    assert found.get(fork.run_id) == fork and found.get(first.run_id) == first  # the whole transcript
    assert [r.output for r in found] == ["4", "Rain.", "It is sunny."]  # newest first
    assert keeping() is kept and kept.kept == 3 and not kept.errors


def test_the_run_never_waits_on_the_disk(kept: Any) -> None:
    """A run ends while another connection holds the store's write lock; its row comes later."""
    blocker = sqlite3.connect(kept.path, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        result = Agent(ScriptedProvider(["done"])).run("go")
        assert result.output == "done"
        assert not kept.flush(timeout=0.2)  # the writer is still waiting for the lock
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert kept.flush(timeout=60)
    assert [r.output for r in agentnb.runs()] == ["done"]


def test_keep_runs_off_and_on_and_its_errors(tmp_path: Path, kept: Any) -> None:
    Agent(ScriptedProvider(["a"])).run("one")
    agentnb.keep_runs(False)
    assert keeping() is None
    Agent(ScriptedProvider(["b"])).run("two")  # not kept
    with pytest.raises(UserError, match="no runs are kept"):
        agentnb.runs()
    assert [r.output for r in agentnb.runs(kept.path)] == ["a"]
    with pytest.raises(UserError, match="keep_runs\\(\\) takes a file's path"):
        agentnb.keep_runs(True)
    missing = tmp_path / "nothing.sqlite"
    with pytest.raises(UserError, match=r"nothing\.sqlite: no store of runs here"):
        agentnb.runs(missing)
    assert not missing.exists()


def test_a_label_on_a_run_not_kept_saves_the_run_with_it(tmp_path: Path, kept: Any) -> None:
    """A run loaded from a transcript (no agent), labelled while runs are kept: kept with its label."""
    path = tmp_path / "run.json"
    agentnb.keep_runs(None)
    Agent(ScriptedProvider(["Lyon."])).run("Capital of France?").save(path)
    keeper = agentnb.keep_runs(kept.path)
    loaded = agentnb.load_transcript(path)
    keeper.add_label(
        loaded, {"good": False, "expected": "Paris.", "note": "<b>wrong</b>", "at": "2026-12-07T10:00:00+00:00"}
    )
    keeper.add_label(
        loaded.run_id, {"good": False, "expected": "Paris!", "note": None, "at": "2026-12-07T10:01:00+00:00"}
    )
    row = agentnb.runs().rows()[0]
    assert (row["id"], row["label"], row["expected"], len(json.loads(row["labels"]))) == (
        loaded.run_id,
        "bad",
        "Paris!",
        2,
    )
    with pytest.raises(UserError, match="good: expected True, False or None"):
        keeper.add_label(loaded, {"good": "yes"})
    with pytest.raises(UserError, match="a label has the fields"):
        keeper.add_label(loaded, {"score": 1})


# --- finding -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def filled(tmp_path_factory: Any) -> Runs:
    """A store of five runs: two agents, a tool, labels good and bad, hostile text."""
    path = tmp_path_factory.mktemp("filled") / "runs.sqlite"
    store = RunStore(path)
    runs = [
        Agent(ScriptedProvider([call("weather", city="Paris"), "Sunny."]), tools=[weather], name="w").run("Paris?"),
        Agent(ScriptedProvider(["5"]), name="calc").run("2 + 2?"),
        Agent(ScriptedProvider(["100%_sure"]), name="calc").run("How sure?"),
        Agent(ScriptedProvider([PAYLOADS[0]]), name="calc").run(PAYLOADS[1]),
        Agent(ScriptedProvider(["9"]), name="calc").run("3 * 3?"),
    ]
    assert store.save([(r, 1_000_000.0 + i) for i, r in enumerate(runs)]) == []
    store.add_label(
        runs[1].run_id, {"good": False, "expected": "4", "note": PAYLOADS[2], "at": "2026-12-07T10:00:00+00:00"}
    )
    store.add_label(runs[4].run_id, {"good": True, "expected": None, "note": None, "at": "2026-12-07T10:00:00+00:00"})
    store.add_label(
        runs[2].run_id,
        {"good": False, "expected": None, "note": "no expected answer", "at": "2026-12-07T10:00:00+00:00"},
    )
    store.close()
    return Runs(path)


def test_filters_and_search(filled: Runs) -> None:
    assert len(filled) == 5
    assert len(filled.where(agent="calc")) == 4 and len(filled.where(agent="w", tool="weather")) == 1
    assert [r["answer"] for r in filled.where(label="bad").rows()] == ["100%_sure", "5"]
    assert [r["answer"] for r in filled.where(label="good").rows()] == ["9"]
    assert len(filled.where(label="labelled")) == 3 and len(filled.where(label="unlabelled")) == 2
    assert [r.output for r in filled.search("%")] == [r.output for r in filled.search("_")] == ["100%_sure"]  # literal
    assert [r.output for r in filled.search("PARIS")] == ["Sunny."]
    assert len(filled.where(since=1_000_003.0)) == 2 and len(filled.where(until="1970-01-12T13:46:41")) > 0
    with pytest.raises(UserError, match="has no 'colour'"):
        filled.where(colour="red")
    with pytest.raises(UserError, match="label= is one of"):
        filled.where(label="meh")
    with pytest.raises(UserError, match="ISO date"):
        filled.where(since="yesterday")


def test_the_table(filled: Runs) -> None:
    table = filled.where(agent="calc").table
    assert list(table.columns[:11]) == [
        "date", "agent", "model", "prompt", "answer", "stop_reason", "tools", "cost", "tokens", "label", "note",
    ]  # fmt: skip
    assert list(table["answer"]) == ["9", PAYLOADS[0], "100%_sure", "5"]
    assert list(table["label"].fillna("-")) == ["good", "-", "bad", "bad"]
    assert str(table["date"].dtype).startswith("datetime64")


def test_labelled_runs_become_cases_that_evaluate_reads(filled: Runs, tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    assert filled.to_dataset(path) == 2  # the bad run with no expected answer has nothing to compare
    cases = load_cases(path)
    assert sorted((c.input, c.expected, c.metadata["label"]) for c in cases) == [
        ("2 + 2?", "4", "bad"), ("3 * 3?", "9", "good"),
    ]  # fmt: skip
    assert all(c.id == c.metadata["run_id"] for c in cases)
    assert filled.to_dataset(path, where={"label": "bad"}) == 1
    # the selection itself is a dataset: a bad run becomes a regression case in one step
    fixed = Agent(ScriptedProvider(["4"]))
    ev = evaluate(fixed, filled.where(label="bad"), scorers=["contains"], progress=False)
    assert [(row["input"], row["expected"], row["passed"]) for row in ev.rows] == [("2 + 2?", "4", True)]


# --- a store that is not ours --------------------------------------------------------------


def test_corrupt_foreign_and_other_version_stores_are_refused_and_left_as_they_were(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE orders (id INTEGER)")
    future = tmp_path / "future.sqlite"
    connect(future, create=True).execute("PRAGMA user_version=99")
    cases = [(junk, "junk.sqlite: not a store of runs: file is not a database"),
             (foreign, "foreign.sqlite: not a store of runs \\(a SQLite database of another program\\)"),
             (future, "future.sqlite: a store of runs of schema version 99; this agentnb reads version 1")]  # fmt: skip
    for path, message in cases:
        before = path.read_bytes()
        with pytest.raises(TranscriptError, match=message):
            agentnb.keep_runs(path)
        with pytest.raises(TranscriptError, match=message):
            agentnb.runs(path)
        assert path.read_bytes() == before
    assert keeping() is None


def test_a_bad_file_leaves_the_runs_kept_where_they_were(tmp_path: Path, kept: Any) -> None:
    (tmp_path / "junk.sqlite").write_bytes(b"junk" * 200)
    with pytest.raises(TranscriptError):
        agentnb.keep_runs(tmp_path / "junk.sqlite")
    assert keeping() is kept
    Agent(ScriptedProvider(["still kept"])).run("x")
    assert [r.output for r in agentnb.runs()] == ["still kept"]


# --- the notebook view ---------------------------------------------------------------------


def test_the_view_shows_hostile_text_as_text_live_and_static(filled: Runs) -> None:
    view = RunsView(filled.where(agent="calc"))
    assert "4 runs" in view.html.value
    view.picked.value = (1, 3)  # the hostile run and the bad one
    view.show_diff()
    html = view.static_html()
    for page in (html, view.html.value, table_html(view.rows, view.total)):
        problems, text = check_html(page)
        assert not problems
    assert PAYLOADS[0][:20] in text and PAYLOADS[1][:20] in text
    assert "diff of rows 1 and 3" in html and "tex2jax_ignore" in html
    view.label.value = "bad"
    assert [r["answer"] for r in view.rows] == ["100%_sure", "5"]
    view.search.value = "2 + 2"
    assert view.total == 1 and "1 run, newest first" in view.html.value
    view.picked.value = (0,)
    trace = view.show_trace()
    assert trace.result.output == "5" and view.opened[0] == "trace of row 0"
    view.show_fork()  # a kept run has no agent: the view says how to give one
    assert "a kept run has no agent" in view.opened[0]
    problems, _ = check_html(view.static_html())
    assert not problems


def test_the_view_forks_a_row_with_the_agent_given(filled: Runs) -> None:
    agent = Agent(ScriptedProvider(["4"]), name="calc")
    view = filled.where(label="bad").view(agent=agent)
    view.picked.value = (1,)
    panel = view.show_fork()
    assert panel.result.output == "5" and panel.result.agent is agent


def test_a_store_answers_while_a_writer_writes(kept: Any) -> None:
    """Readers and the writer thread share the file (WAL): a count never waits for the writer."""
    agent = Agent(ScriptedProvider(["x"] * 60))
    writer = threading.Thread(target=lambda: [agent.run("go") for _ in range(60)])
    writer.start()
    counts = []
    while writer.is_alive():
        counts.append(len(Runs(kept.path)))
    writer.join()
    assert kept.flush(timeout=60)
    assert counts == sorted(counts) and len(Runs(kept.path)) == 60
    assert connect(kept.path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_improve_reads_a_selection(filled: Runs) -> None:
    """improve() takes the store's labelled runs as its dataset, as evaluate does."""
    from agentnb import improve
    from agentnb.testing import FunctionProvider

    def student(messages: Any, tools: Any) -> str:
        return "4 and 9" if "Check your sums." in str(messages[0].content) else "no idea"

    reflector = FunctionProvider(lambda messages, tools: "```\nCheck your sums.\n```", name="reflector")
    agent = Agent(FunctionProvider(student), system="Answer.")
    imp = improve(agent, filled.where(label="labelled"), ["contains"], reflector=reflector, budget=10, progress=False)
    assert imp.best.system == "Check your sums." and agent.system == "Answer."


def test_the_view_freezes_into_its_static_copy_when_the_next_cell_runs(filled: Runs, monkeypatch: Any) -> None:
    import IPython.display
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    updates: list[dict[str, Any]] = []
    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []

    class Handle:
        def update(self, data: dict[str, Any], raw: bool) -> None:
            updates.append(data)

    def display(data: dict[str, Any], raw: bool, metadata: dict[str, Any], display_id: bool) -> Handle:
        shown.append((data, metadata))
        return Handle()

    monkeypatch.setattr(IPython.display, "display", display)
    view = RunsView(filled)
    view._ipython_display_()
    ((data, meta),) = shown
    assert "application/vnd.jupyter.widget-view+json" in data and meta["agentnb_static"] is True
    assert data["text/plain"].startswith("agentnb live trace") and "5 runs" in data["text/html"]
    view.search.value = "2 + 2"
    shell.events.trigger("pre_run_cell", None)
    assert updates and "widget-view" not in str(updates[-1]) and "search: 2 + 2" in updates[-1]["text/html"]
    assert "1 run, newest first" in updates[-1]["text/html"] and view.widget.comm is None  # closed
    assert updates[-1]["text/plain"] == "1 of 1 kept run"  # one run: said in the singular


def test_a_watcher_that_fails_on_the_result_never_breaks_the_run(caplog: Any) -> None:
    class Broken:
        def __call__(self, event: Any) -> None:
            pass

        def take_run_result(self, result: Any) -> None:
            raise RuntimeError("disk on fire")

    class Watcher:
        def start(self, first: Any) -> Broken:
            return Broken()

    result = Agent(ScriptedProvider(["ok"]), instrument=Watcher()).run("x")
    assert result.output == "ok" and "failed on a run's result" in caplog.text


def test_a_label_given_in_python_reaches_the_store_and_reads_back(tmp_path: Path) -> None:
    """The label hook (agentnb.run.labels.on_label) is followed by the store keep_runs turns on."""
    from agentnb import Agent, keep_runs, runs
    from agentnb.testing import ScriptedProvider

    keep_runs(tmp_path / "labels.sqlite")
    try:
        result = Agent(ScriptedProvider(["Lyon."])).run("Capital of France?")
        result.label(good=False, expected="Paris.", note="wrong city")
        kept = runs()
        assert len(kept) == 1
        (back,) = list(kept)
        assert [(label.good, label.expected, label.note) for label in back.labels] == [(False, "Paris.", "wrong city")]
        assert len(kept.where(label="bad")) == 1 and len(kept.where(label="good")) == 0
        assert kept.table["prompt"].tolist() == ["Capital of France?"]
    finally:
        keep_runs(None)


def test_a_steered_run_becomes_a_case_with_what_the_person_said(kept: Any, tmp_path: Path) -> None:
    """A labelled run that a person steered is not its prompt alone: the case says both."""
    inbox = agentnb.Inbox()
    inbox.send("I meant Oslo, not Paris.")
    model = ScriptedProvider([call("weather", city="Oslo"), "Snow in Oslo."])
    result = Agent(model, tools=[weather]).run("Weather in Paris?", inbox=inbox)
    result.label(good=True)
    plain = Agent(ScriptedProvider(["Sunny."])).run("Weather in Rome?")
    plain.label(good=False, expected="Rain.")
    cases = {c["run_id"]: c for c in agentnb.runs().to_cases()}
    assert cases[result.run_id]["input"] == "Weather in Paris?\n\nI meant Oslo, not Paris."
    assert cases[result.run_id]["steered"] == ["I meant Oslo, not Paris."]
    assert cases[plain.run_id]["input"] == "Weather in Rome?" and "steered" not in cases[plain.run_id]
    path = tmp_path / "cases.jsonl"
    assert agentnb.runs().to_dataset(path) == 2
    assert {c.input for c in load_cases(str(path))} == {
        "Weather in Paris?\n\nI meant Oslo, not Paris.",
        "Weather in Rome?",
    }


def test_a_label_s_texts_are_kept_redacted(kept: Any) -> None:
    """A key pasted into a note or an expected answer is not written to the store."""
    key = "sk-" + "a1B2" * 8
    result = Agent(ScriptedProvider(["4"])).run("2+2?")
    result.label(good=False, expected=f"use {key}", note=f"key {key}")
    kept.flush(timeout=30)
    raw = Path(kept.path).read_bytes() + b"".join(
        json.dumps(row, default=str).encode() for row in agentnb.runs().where(label="bad").rows()
    )
    assert key.encode() not in raw
    (back,) = list(agentnb.runs())
    assert key not in (back.labels[-1].note or "") and "***" in (back.labels[-1].note or "")
