"""Label a finished run (issue 48 item 2): good / bad, a note, the expected answer.

From Python (``result.label``), kept in the run's transcript (a saved or loaded run's file
rewritten with it), told to ``on_label`` callbacks, and from the label editor under a finished
trace, whose Save is driven here through the widgets' traits; hostile notes and expected
answers are checked in every view with the render properties' checker.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings

from agentnb import Agent, Label, RunResult, load_transcript
from agentnb.errors import TranscriptError, UserError
from agentnb.notebook.forks.bar import ForkBar
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.run.labels import LabelWarning, on_label
from agentnb.testing import ScriptedProvider
from tests.test_render_properties import _PROPERTIES, _widget_htmls, assert_inert, untrusted_text

AT = "2026-01-02T03:04:05.000+00:00"


def _run(answer: str = "Lyon.") -> RunResult:
    return Agent(ScriptedProvider([answer])).run("Capital of France?")


def test_a_label_from_python_is_kept_oldest_first() -> None:
    r = _run()
    assert r.labels == ()
    first = r.label(good=False, expected="Paris.", note="wrong city")
    second = r.label(good=True)
    assert r.labels == (first, second) and isinstance(first, Label)
    assert (first.good, first.expected, first.note) == (False, "Paris.", "wrong city")
    assert first.at.endswith("+00:00") and first.at <= second.at
    assert r == _run() or r.output == "Lyon."  # labels take no part in equality
    assert hash(r) == hash(RunResult.from_dict(r.to_dict(redact=False)))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"good": "no"}, "good: expected True, False or None, not str 'no'"),
        ({"good": 1}, "good: expected True, False or None, not int 1"),
        ({"note": 3}, "note: expected a string or None, not int 3"),
        ({"expected": ["Paris"]}, "expected: expected a string or None, not list ['Paris']"),
        ({}, "a label says something: give good (True or False), expected or note"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_added(given: dict[str, Any], message: str) -> None:
    r = _run()
    with pytest.raises(UserError) as err:
        r.label(**given)
    assert str(err.value) == message and r.labels == ()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "a label is a JSON object, not list"),
        ({"good": True}, "at: missing (when the label was given)"),
        ({"good": True, "at": AT, "score": 1}, "score: not a field of a label (it has good, expected, note, at)"),
        ({"good": "true", "at": AT}, "good: expected true, false or null, not str 'true'"),
        ({"note": None, "at": AT}, "a label says something: give good (True or False), expected or note"),
        ({"good": True, "at": "yesterday"}, "at: not an ISO-8601 timestamp: 'yesterday'"),
        (
            {"good": True, "at": "2026-01-02T03:04:05"},
            "at: labels are timed in UTC (+00:00), not '2026-01-02T03:04:05'",
        ),
        ({"good": True, "at": 5}, "at: expected an ISO-8601 timestamp string, not int 5"),
    ],
)
def test_from_dict_is_strict_and_names_the_field(data: Any, message: str) -> None:
    with pytest.raises(TranscriptError) as err:
        Label.from_dict(data)
    assert str(err.value) == message
    assert Label.from_dict({"good": None, "expected": "x", "note": None, "at": AT}) == Label(expected="x", at=AT)


def test_a_saved_run_keeps_its_labels_in_its_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    r = _run()
    r.save(path)
    assert "labels" not in json.loads(path.read_text())  # a transcript without labels, as before
    label = r.label(good=False, expected="Paris.", note="key sk-abcdefghijklmnop1234 leaked")
    stored = json.loads(path.read_text())["labels"]
    assert stored == [{**label.to_dict(), "note": "key *** leaked"}]  # rewritten, the secret redacted
    assert [x for x in path.parent.iterdir()] == [path]  # written through a temporary file, renamed
    loaded = load_transcript(path)
    assert loaded.labels[0].expected == "Paris." and loaded.agent is None
    # a run with no agent (loaded from its transcript) is labelled too, and saves
    loaded.label(good=True, note="second look")
    again = load_transcript(path)
    assert [(x.good, x.note) for x in again.labels] == [(False, "key *** leaked"), (True, "second look")]
    # another copy of the run (loaded earlier) labels the file: the first copy's label is kept
    label_c = load_transcript(path)
    r.label(note="third")
    label_c.label(note="fourth")
    assert [x.note for x in load_transcript(path).labels][-2:] == ["third", "fourth"]


def test_a_file_that_cannot_take_the_label_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    r = _run()
    r.save(path)
    _run("Other.").save(tmp_path / "other.json")
    (tmp_path / "other.json").replace(path)  # the file now holds another run
    before = path.read_bytes()
    with pytest.warns(LabelWarning, match="holds another run"):
        label = r.label(good=True)
    assert r.labels == (label,) and path.read_bytes() == before  # kept in memory, the file untouched
    path.unlink()
    with pytest.warns(LabelWarning, match="No such file"):
        r.label(note="gone")
    r.save(path)  # the next save writes every label
    assert [x.note for x in load_transcript(path).labels] == [None, "gone"]


def test_old_and_damaged_transcripts(tmp_path: Path) -> None:
    data = _run().to_dict()
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))  # saved before labels: none
    assert load_transcript(old).labels == ()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**data, "labels": [{"good": True, "at": AT}, {"good": "yes", "at": AT}]}))
    with pytest.raises(TranscriptError, match=r"bad\.json: labels\[1\]: good: expected true, false or null"):
        load_transcript(bad)
    bad.write_text(json.dumps({**data, "labels": {"good": True}}))
    with pytest.raises(TranscriptError, match="'labels' must be list, not dict"):
        load_transcript(bad)


def test_on_label_callbacks_are_told_and_a_failing_one_loses_nothing() -> None:
    seen: list[tuple[Any, Label]] = []

    def broken(result: Any, label: Label) -> None:
        raise RuntimeError("store down, token sk-abcdefghijklmnop1234")

    stops = [on_label(broken), on_label(lambda result, label: seen.append((result, label)))]
    r = _run()
    try:
        with pytest.warns(LabelWarning) as caught:
            label = r.label(good=False)
    finally:
        for stop in stops:
            stop()
    assert seen == [(r, label)] and r.labels == (label,)  # the next callback still ran
    (w,) = caught
    assert "broken" in str(w.message) and "store down" in str(w.message) and "sk-abc" not in str(w.message)
    r.label(good=True)
    assert len(seen) == 1  # removed
    with pytest.raises(UserError, match="on_label takes a function"):
        on_label("not callable")  # type: ignore[arg-type]


def test_the_label_editor_saves_through_its_widgets(tmp_path: Path) -> None:
    r = _run()
    r.save(tmp_path / "run.json")
    trace = TraceWidget.replay(r)
    bar = ForkBar(trace)
    bar.fill(r)
    editor = bar.labeller
    assert editor in bar.children and bar.steps is not None  # beside Fork from here
    assert editor.expected.value == "Lyon."  # prefilled with the run's answer, to edit
    editor.save_button.click()  # nothing said yet: shown, not raised, nothing added
    assert r.labels == () and "pick 👍 or 👎, write a note, or edit the expected answer" in editor.shown.value
    editor.good.value = False
    editor.note.value = "wrong city"
    editor.save_button.click()  # 👎 with the answer unedited: the wrong answer is not the expected one
    assert (r.labels[-1].good, r.labels[-1].expected, r.labels[-1].note) == (False, None, "wrong city")
    editor.expected.value = "Paris."
    editor.save_button.click()
    assert r.labels[-1].expected == "Paris." and "pick" not in editor.shown.value
    assert load_transcript(tmp_path / "run.json").labels == r.labels  # saved with the run
    assert "Paris." in editor.shown.value and "earlier labels (1)" in editor.shown.value
    assert "label: 👎 bad · expected: Paris. · note: wrong city" in trace.text()
    bar.freeze()  # the next cell: the bar's static copy shows the label
    frozen = bar.static_bundle()
    assert "👎 bad" in frozen["text/html"] and "Paris." in frozen["text/html"] and editor.good.comm is None
    assert "label: 👎 bad · expected: Paris." in frozen["text/plain"]
    assert "👎 bad" in TraceWidget.replay(load_transcript(tmp_path / "run.json")).static_html()
    good = _run()
    bar = ForkBar(TraceWidget.replay(good))
    bar.fill(good)
    bar.labeller.good.value = True  # 👍 with the answer unedited: the run's answer was the expected one
    assert bar.labeller.save().expected == "Lyon."


@settings(**{**_PROPERTIES, "max_examples": 20})
@given(untrusted_text)
def test_hostile_notes_and_expected_answers_are_text_in_every_view(s: str) -> None:
    r = _run(s or "x")
    trace = TraceWidget.replay(r)
    bar = ForkBar(trace)
    bar.fill(r)
    bar.labeller.good.value = True
    bar.labeller.note.value = s + " note"
    bar.labeller.expected.value = "expected " + s
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no file, no warning
        assert bar.labeller.save() is not None
    assert_inert(_widget_htmls(bar), shows=s + " note", live=True)
    assert_inert(_widget_htmls(bar), shows="expected " + s, live=True)
    static = [trace.static_html(), bar.static_bundle()["text/html"], bar._repr_mimebundle_()[0]["text/html"]]
    assert_inert(static, shows=s + " note")
    assert_inert(static, shows="expected " + s)
