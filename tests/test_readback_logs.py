"""Evaluation logs read back checked (issue 45 item 3): every row field by its type, strict JSON.

A hostile log line (a wrong type in any field, NaN or Infinity, a 5,000-digit integer, a line
nested 10,000 deep) is a TranscriptError naming the file, the line and the field, never a bare
TypeError / ValueError / AttributeError / RecursionError, and never a row that ``summary()``
counts wrongly. Good rows load back equal.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentnb
from agentnb import Agent
from agentnb.errors import AgentnbError, TranscriptError
from agentnb.evaluation import Evaluation
from agentnb.evaluation.log import EvalLog, read_log
from agentnb.messages import jsonfile
from agentnb.testing import FunctionProvider, ScriptedProvider

#: Per row field: values of a wrong type (each must be refused, naming the field).
WRONG: dict[str, list[Any]] = {
    "key": [5, None, True, [], {}],
    "index": ["0", 1.5, True, None, [], {}],
    "case": [5, True, None, [], {}],
    "agent": [5, True, None, ["a"], {}],
    "repeat": ["0", 0.5, False, None, [], {}],
    "output": [5, True, [], {"a": 1}],
    "scores": [[], "x", True, 3, {"ok": "yes"}, {"ok": []}, {"ok": {}}],
    "scorer_errors": [[], "x", 3, True, {"ok": 5}, {"ok": None}],
    "passed": ["a string", "", 1, 0, None, [], {}],
    "stop_reason": [5, None, True, [], "finished", "<b>answer</b>"],
    "tool_calls": ["1", 1.5, True, None, []],
    "tools": ["add", {}, 3, True, [1], [None], [["add"]]],
    "model_calls": ["1", 2.5, True, None, {}],
    "input_tokens": ["10", 1.5, True, None, []],
    "output_tokens": ["10", 1.5, False, None, {}],
    "latency": ["0.5", True, [], {}],
    "queue_wait": ["0", True, [0.1], {}],
    "error": [5, True, [], {"e": 1}],
    "run_id": [5, None, True, []],
    "metadata": [True, [], "x", 5, None],
    "lost": ["yes", 1, None, []],
}
#: Per row field: values of the right type that are not the one written (each must load).
RIGHT: dict[str, list[Any]] = {
    "output": [None, ""],
    "scores": [{}, {"ok": None, "n": 2, "f": 0.25, "b": False}],
    "latency": [None, 3],
    "queue_wait": [None, 0],
    "error": [None, "RuntimeError: boom"],
    "metadata": [{}, {"nested": {"a": [1, 2]}}],
    "input": [None, 5, ["a"], {"role": "user"}],
    "expected": [None, 3.5, {"a": 1}],
    "value": [None, [1, {"x": "y"}]],
    "lost": [True, False],
}


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    """A real evaluation's log line: (row, transcript)."""
    log = tmp_path_factory.mktemp("log") / "runs.jsonl"
    agentnb.evaluate(
        Agent(ScriptedProvider(["4"])),
        [{"input": "2 + 2?", "expected": "4", "level": "easy"}],
        scorers=["contains"],
        log=str(log),
        progress=False,
    )
    item = json.loads(log.read_text())
    return item["row"], item["transcript"]


def _write(path: Path, *rows: dict[str, Any], transcript: Any = None) -> Path:
    path.write_text("".join(json.dumps({"row": r, "transcript": transcript}) + "\n" for r in rows))
    return path


def _use(ev: Evaluation) -> None:
    """Everything a person does with a loaded evaluation."""
    ev.summary()
    ev.table  # noqa: B018
    repr(ev)
    ev._repr_html_()
    ev.failures()


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, vs in WRONG.items() for v in vs])
def test_each_wrong_type_in_each_row_field_is_refused_naming_file_line_and_field(
    tmp_path: Path, logged: tuple[dict[str, Any], dict[str, Any]], field: str, value: Any
) -> None:
    row, transcript = logged
    good = {**row, "key": "0|agent|1"}
    path = _write(tmp_path / "runs.jsonl", good, {**row, field: value}, transcript=transcript)
    with pytest.raises(TranscriptError) as info:
        Evaluation.load(path)
    message = str(info.value)
    assert "runs.jsonl, line 2: " in message and f"row.{field}" in message, message
    with pytest.raises(TranscriptError, match=f"line 2: row.{field}"):  # resuming reads it the same way
        agentnb.evaluate(Agent(ScriptedProvider([])), ["2 + 2?"], log=str(path), progress=False)


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, vs in RIGHT.items() for v in vs])
def test_right_types_load_and_every_view_of_them_works(
    tmp_path: Path, logged: tuple[dict[str, Any], dict[str, Any]], field: str, value: Any
) -> None:
    row, transcript = logged
    ev = Evaluation.load(_write(tmp_path / "runs.jsonl", {**row, field: value}, transcript=transcript))
    assert ev.rows[0][field] == value
    _use(ev)
    pytest.importorskip("ipywidgets")
    ev.view()


def test_a_string_passed_is_not_counted_as_passed(tmp_path: Path, logged: tuple[dict[str, Any], Any]) -> None:
    row, _ = logged
    path = _write(tmp_path / "runs.jsonl", {**row, "passed": False}, {**row, "key": "x", "passed": "a string"})
    with pytest.raises(TranscriptError, match=r"line 2: row\.passed: expected bool, not str 'a string'"):
        Evaluation.load(path)
    assert Evaluation.load(_write(path, {**row, "passed": False})).summary()["passed"].tolist() == [0]


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("NaN", "NaN is not a JSON number"),
        ("Infinity", "Infinity is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e999", "1e999 is too large for a float"),
        ("-1e400", "-1e400 is too large for a float"),
        ("9" * 5000, "a number of 5000 digits is longer than 4300 digits"),
        ("[" * 10_000 + "]" * 10_000, "nested more than 200 levels deep"),
        ("[" * 300 + "]" * 300, "nested more than 200 levels deep"),
    ],
)
@pytest.mark.parametrize("field", ["latency", "input_tokens", "scores", "metadata", "value"])
def test_numbers_json_has_not_and_deep_nesting_are_refused_naming_the_field(
    tmp_path: Path, logged: tuple[dict[str, Any], dict[str, Any]], raw: str, why: str, field: str
) -> None:
    row, transcript = logged
    line = json.dumps({"row": {**row, field: "@HERE@"}, "transcript": transcript}).replace('"@HERE@"', raw)
    path = tmp_path / "runs.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(TranscriptError) as info:
        Evaluation.load(path)
    assert f"runs.jsonl, line 1: row.{field}" in str(info.value) and why in str(info.value), str(info.value)


@pytest.mark.parametrize("raw", ["NaN", "1e999", "7" * 5000, "[" * 5000 + "]" * 5000])
def test_a_transcript_on_a_log_line_is_read_as_strictly(tmp_path: Path, logged: Any, raw: str) -> None:
    row, transcript = logged
    line = json.dumps({"row": row, "transcript": {**transcript, "duration": "@HERE@"}}).replace('"@HERE@"', raw)
    path = tmp_path / "runs.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(TranscriptError, match=r"runs\.jsonl, line 1: transcript\.duration"):
        Evaluation.load(path)


def test_a_bad_transcript_names_its_line_when_the_row_s_trace_is_asked_for(tmp_path: Path, logged: Any) -> None:
    row, transcript = logged
    bad = {**transcript, "messages": [{"role": "alien"}]}
    path = _write(tmp_path / "runs.jsonl", {**row, "key": "0|agent|1"}, row, transcript=None)
    path.write_text(path.read_text().splitlines()[0] + "\n" + json.dumps({"row": row, "transcript": bad}) + "\n")
    ev = Evaluation.load(path)
    _use(ev)  # the rows are fine
    with pytest.raises(TranscriptError, match=r"runs\.jsonl, line 2: transcript: .*messages\[0\]: .*alien"):
        ev.run([r["key"] for r in ev._ordered()].index(row["key"]))


@pytest.mark.parametrize(
    ("line", "field"),
    [("[]", "a log line is a JSON object"), ('{"row": []}', "row: expected a JSON object"),
     ('{"row": {"passed": true}}', "row: missing field 'key'"),
     ('{"row": {"key": "k"}, "transcript": "x"}', "transcript: expected a JSON object or null"),
     ('{"row": {"key": "k", "improve": "proposal", "step": "1"}}', "row.step: expected int"),
     ('{"row": {"key": "k", "improve": "other"}}', "row.improve: expected one of 'proposal'")],
)  # fmt: skip
def test_a_line_of_the_wrong_shape_is_refused(tmp_path: Path, line: str, field: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(TranscriptError, match=r"runs\.jsonl, line 1: " + field.replace("[", r"\[")):
        list(read_log(path))


def test_torn_lines_are_still_skipped_with_a_warning(tmp_path: Path, logged: Any) -> None:
    row, transcript = logged
    path = _write(tmp_path / "runs.jsonl", row, transcript=transcript)
    whole = path.read_bytes()
    path.write_bytes(whole[:-9] + b"\n" + whole + whole[: len(whole) // 2 + 1])  # torn mid-line, twice
    with pytest.warns(UserWarning, match="torn") as caught:
        assert [r["key"] for r, _ in read_log(path)] == [row["key"]]
    assert sorted(str(w.message).split(": ")[1] for w in caught) == [
        "its last line is torn or not JSON; skipped",
        "line 1 is torn or not JSON; skipped",
    ]


def test_a_scorer_that_returns_nan_is_a_scorer_error_and_the_log_reads_back(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    ev = agentnb.evaluate(Agent(FunctionProvider(lambda m, t: "hi")), ["a"], scorers={"s": lambda case, result: math.nan},
                          log=str(log), progress=False)  # fmt: skip
    assert ev.rows[0]["scores"] == {"s": None} and "finite" in ev.rows[0]["scorer_errors"]["s"]
    assert Evaluation.load(log).rows == ev.rows


def test_what_json_cannot_hold_is_written_as_null_never_as_nan(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    with EvalLog(path) as log:
        log.append({"key": "k", "metadata": {"a": math.inf, "b": [-math.inf, math.nan], "c": 10**5000}}, None)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["row"]["metadata"] == {"a": None, "b": [None, None], "c": None}
    assert [r["metadata"] for r, _ in read_log(path)] == [{"a": None, "b": [None, None], "c": None}]


texts = st.text(max_size=8)
finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | finite | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
rows = st.fixed_dictionaries(
    {"key": texts, "index": st.integers(0, 10**6), "case": texts, "agent": texts, "repeat": st.integers(0, 9),
     "input": json_values, "output": st.none() | texts, "value": json_values, "expected": json_values,
     "scores": st.dictionaries(texts, st.none() | st.booleans() | st.integers() | finite, max_size=3),
     "scorer_errors": st.dictionaries(texts, texts, max_size=2), "passed": st.booleans(),
     "stop_reason": st.sampled_from(["answer", "limit", "error", "timeout", "cancelled"]),
     "tool_calls": st.integers(0, 99), "tools": st.lists(texts, max_size=3), "model_calls": st.integers(0, 99),
     "input_tokens": st.integers(0, 10**9), "output_tokens": st.integers(0, 10**9),
     "latency": st.none() | finite.map(abs), "queue_wait": finite.map(abs), "error": st.none() | texts,
     "run_id": texts, "metadata": st.dictionaries(texts, json_values, max_size=3)},
    optional={"lost": st.booleans()},
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(rows, min_size=1, max_size=4, unique_by=lambda r: r["key"]))
def test_good_rows_load_back_equal(tmp_path_factory: pytest.TempPathFactory, batch: list[dict[str, Any]]) -> None:
    path = tmp_path_factory.mktemp("rows") / "runs.jsonl"
    with EvalLog(path) as log:
        for row in batch:
            log.append(row, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [r for r, _ in read_log(path)] == batch


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-2.5e308", "3" * 4301]))
def test_loads_names_where_a_refused_number_is(value: Any, bad: str) -> None:
    text = '{"a": [' + json.dumps(value) + ', {"b": ' + bad + "}]}"
    with pytest.raises(jsonfile.ReadbackError, match=r"^a\[1\]\.b: "):
        jsonfile.loads(text)
    assert jsonfile.loads(json.dumps(value)) == value


def test_nothing_but_agentnb_errors_come_out_of_a_hostile_line(tmp_path: Path, logged: Any) -> None:
    row, transcript = logged
    path = tmp_path / "runs.jsonl"
    hostile = ['{"row": {"key": "k", "scores": ' + "{" * 3000, '{"row": ' + '{"a":' * 5000 + "1" + "}" * 5001,
               '{"row": {"key": "k", "input": "' + "\\ud800" * 3 + '"}}', "\ufeff" + json.dumps({"row": row})]  # fmt: skip
    for line in hostile:
        path.write_text(line + "\n" + json.dumps({"row": row, "transcript": transcript}) + "\n")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                _use(Evaluation.load(path))
            except AgentnbError:
                pass


def _depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth_of, value), default=0)
    return 0


tricky = st.text(alphabet='[]{}"\\/ab\n', max_size=6)
nested = st.recursive(
    st.none() | st.integers() | tricky,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(nested, st.integers(0, 230), st.sampled_from([None, 1]))
def test_the_depth_scan_sees_through_strings_and_escapes(value: Any, wrap: int, indent: int | None) -> None:
    text = "[" * wrap + json.dumps(value, indent=indent) + "]" * wrap
    looked = text.count("[") + text.count("{") > jsonfile.MAX_FILE_DEPTH  # else too few brackets to look
    assert jsonfile._depth(text) == (_depth_of(value) + wrap if looked else 0)
    if _depth_of(value) + wrap > jsonfile.MAX_FILE_DEPTH:
        with pytest.raises(jsonfile.ReadbackError, match="nested more than 200 levels deep"):
            jsonfile.loads(text)
    else:
        assert jsonfile.loads(text) == json.loads(text)
