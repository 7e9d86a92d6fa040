"""Saved sessions, transcripts and cassettes read back checked (issue 45 items 3 and 4).

Every field of a real file is replaced, in turn, by each wrong type and by each number JSON has
not (NaN, Infinity, 1e999, a 5,000-digit integer, 10,000-deep nesting): the file loads, or the
error is agentnb's, naming the file (and line) and the field, never a bare TypeError /
ValueError / OverflowError / RecursionError / AttributeError. A cassette's header format is
checked; a writer process killed mid-line leaves a cassette that later runs replay, with a
warning for the torn last line, and a torn line anywhere else is an error naming it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentnb
from agentnb import Agent, CassetteError, CassetteMiss, RunResult, UserError, tool
from agentnb.errors import AgentnbError, TranscriptError
from agentnb.messages import Image, UserMessage
from agentnb.messages.jsonfile import path_of
from agentnb.run.session import Session
from agentnb.testing import FunctionProvider, ScriptedProvider, call
from agentnb.timetravel import Cassette

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRONG = ["x", 7, 2.5, True, None, [], {}, [1], {"a": 1}, -1]
HOSTILE = ["NaN", "Infinity", "-Infinity", "1e999", "8" * 5000, "[" * 10_000 + "]" * 10_000]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON value: the value itself, then each field and item, depth first."""
    yield at
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        yield from _paths(v, (*at, k))


def _put(data: Any, at: tuple[Any, ...], value: Any) -> Any:
    if not at:
        return value
    data = copy.deepcopy(data)
    parent = data
    for k in at[:-1]:
        parent = parent[k]
    parent[at[-1]] = value
    return data


def _named(message: str, at: tuple[Any, ...]) -> bool:
    """Whether an error names the field at ``at``: the last key on the way there, and the item
    of the top list it is in (``messages[2]``)."""
    keys = [k for k in at if isinstance(k, str)]
    top = path_of(list(at[:2])) if len(at) > 1 and isinstance(at[1], int) else (keys[0] if keys else "")
    return (not keys or keys[-1] in message) and top in message


def _run() -> RunResult:
    prompt = [UserMessage("1 + 2? See the picture.", (Image(b"\x89PNG", "image/png"),))]
    return Agent(ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add], system="Be exact.").run(prompt)


def _session_file(tmp_path: Path) -> Path:
    chat = Agent(ScriptedProvider([call("add", a=1, b=2), "3", "4"]), tools=[add], system="Be exact.").session()
    chat.run("1 + 2?")
    chat.run("and 2 + 2?")
    chat.save(tmp_path / "chat.json")
    return tmp_path / "chat.json"


def _load_session(path: Path) -> Session:
    return Session.load(path, Agent(ScriptedProvider([])))


@pytest.mark.parametrize("value", WRONG, ids=repr)
@pytest.mark.parametrize("kind", ["session", "transcript"])
def test_each_wrong_type_anywhere_in_a_session_or_transcript_loads_or_names_the_field(
    tmp_path: Path, kind: str, value: Any
) -> None:
    if kind == "session":
        path, load = _session_file(tmp_path), _load_session
    else:
        path, load = tmp_path / "run.json", RunResult.load
        _run().save(path)
    data = json.loads(path.read_text())
    refused = 0
    for at in _paths(data):
        path.write_text(json.dumps(_put(data, at, value)))
        try:
            load(path)
        except TranscriptError as exc:
            refused += 1
            assert str(exc).startswith(str(path)) and _named(str(exc), at), (at, str(exc))
    assert refused > 10


@pytest.mark.parametrize("raw", HOSTILE, ids=lambda r: r[:12])
@pytest.mark.parametrize("kind", ["session", "transcript"])
def test_numbers_json_has_not_and_deep_nesting_anywhere_are_refused_naming_the_field(
    tmp_path: Path, kind: str, raw: str
) -> None:
    if kind == "session":
        path, load = _session_file(tmp_path), _load_session
    else:
        path, load = tmp_path / "run.json", RunResult.load
        _run().save(path)
    data = json.loads(path.read_text())
    for at in _paths(data):
        path.write_text(json.dumps(_put(data, at, "@HERE@")).replace('"@HERE@"', raw))
        with pytest.raises(TranscriptError) as info:
            load(path)
        assert str(info.value).startswith(f"{path}: {path_of(list(at[:4]))}"), (at, str(info.value)[:300])


@pytest.mark.parametrize(
    ("change", "message"),
    [({"turn_starts": [0, "2"]}, r"turn_starts\[1\] must be int, not str"),
     ({"turn_starts": [0, True]}, r"turn_starts\[1\] must be int, not bool"),
     ({"turn_starts": [0, 2.0]}, r"turn_starts\[1\] must be int, not float"),
     ({"turn_starts": [0, 99]}, r"turn_starts\[1\] = 99 does not fit the 7 messages"),
     ({"turn_starts": {"0": 0}}, "'turn_starts' must be list, not dict"),
     ({"id": 5}, "'id' must be str or null, not int"),
     ({"messages": {"role": "user"}}, "'messages' must be list, not dict"),
     ({"version": True}, "session version True is not supported"),
     ({"version": 1.0}, "session version 1.0 is not supported"),
     ({"version": None}, "session version None is not supported")],
)  # fmt: skip
def test_a_session_file_s_fields_are_checked_one_by_one(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    path = _session_file(tmp_path)
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    with pytest.raises(TranscriptError, match=message):
        _load_session(path)


def test_a_session_with_a_huge_turn_start_is_refused_not_an_overflow(tmp_path: Path) -> None:
    path = _session_file(tmp_path)
    path.write_text(path.read_text().replace('"turn_starts": [', '"turn_starts": [1e400, '))
    with pytest.raises(TranscriptError, match=r"turn_starts\[0\]: 1e400 is too large for a float"):
        _load_session(path)


def test_a_non_finite_duration_or_cost_is_never_written_and_never_read(tmp_path: Path) -> None:
    run = _run()
    for name, broken in [("duration", {"duration": float("nan")}), ("usage", {"usage": {"cost": float("inf")}})]:
        data = {**run.to_dict(), **broken}
        with pytest.raises(TranscriptError, match=f"not a readable transcript: .*{name}"):
            RunResult.from_dict(data)
    bad = dataclasses.replace(run, duration=float("inf"))
    bad.save(tmp_path / "inf.json")
    assert "Infinity" not in (tmp_path / "inf.json").read_text()
    assert RunResult.load(tmp_path / "inf.json").duration == 0.0  # written as null: no duration


# -- cassettes ----------------------------------------------------------------------------


def _cassette(path: Path, n: int = 2) -> list[str]:
    with agentnb.cassette(path):
        for i in range(n):
            Agent(ScriptedProvider([call("add", a=i, b=1), f"{i + 1}"]), tools=[add]).run(f"{i} + 1?")
    return path.read_text().splitlines()


@pytest.mark.parametrize("version", [0, 2, 99, None, True, "1", 1.5, [1]])
def test_a_cassette_of_another_format_is_refused(tmp_path: Path, version: Any) -> None:
    lines = _cassette(tmp_path / "c.jsonl")
    (tmp_path / "c.jsonl").write_text("\n".join([json.dumps({"agentnb_cassette": version}), *lines[1:]]) + "\n")
    for mode in ("replay", "once", "new"):
        with pytest.raises(CassetteError, match=r"c\.jsonl, line 1: cassette format .* is not supported"):
            Cassette(tmp_path / "c.jsonl", mode=mode)  # type: ignore[arg-type]


def test_an_empty_cassette_is_said_to_be_empty(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(UserError, match=r"empty\.jsonl: the cassette is empty"):
        Cassette(tmp_path / "empty.jsonl", mode="replay")
    with pytest.raises(UserError, match=r"missing\.jsonl: no such cassette"):
        Cassette(tmp_path / "missing.jsonl", mode="replay")
    with agentnb.cassette(tmp_path / "empty.jsonl", mode="once"):  # once: an empty file is recorded into
        Agent(ScriptedProvider(["hi"])).run("hello")
    assert len(Cassette(tmp_path / "empty.jsonl", mode="replay").entries) == 1


@pytest.mark.parametrize("value", [*WRONG, *HOSTILE], ids=lambda v: repr(v)[:12])
def test_each_wrong_value_anywhere_in_a_cassette_entry_replays_or_names_line_and_field(
    tmp_path: Path, value: Any
) -> None:
    path = tmp_path / "c.jsonl"
    lines = _cassette(path)
    entry = json.loads(lines[2])
    refused = 0
    for at in _paths(entry):
        changed = _put(entry, at, value if value not in HOSTILE else "@HERE@")
        text = json.dumps(changed).replace('"@HERE@"', value) if value in HOSTILE else json.dumps(changed)
        path.write_text("\n".join([*lines[:2], text, *lines[3:]]) + "\n")
        try:
            Cassette(path, mode="replay")
        except CassetteError as exc:
            refused += 1
            message = str(exc)
            assert message.startswith(f"{path}, line 3: "), message
            if value in HOSTILE:
                assert path_of(list(at[:4])) in message, (at, message[:300])
            else:
                assert all(k in message for k in at if isinstance(k, str) and k not in ("request",)), (at, message)
    assert refused >= (len(list(_paths(entry))) if value in HOSTILE else 5)


# -- a killed writer -----------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import os, sys, time, agentnb
    from agentnb import Agent
    from agentnb.testing import FunctionProvider
    real = os.write
    def slow(fd, data):  # a slow disk: a line goes out in pieces, so the kill lands mid-line
        for i in range(0, len(data), 256):
            real(fd, data[i:i + 256])
            time.sleep(0.001)
        return len(data)
    os.write = slow
    with agentnb.cassette(sys.argv[1], mode="new"):
        agent = Agent(FunctionProvider(lambda m, t: "x" * 8000 + " " + m[-1].content))
        for i in range(100000):
            agent.run(f"question {i}")
    """
)


def _killed_mid_line(path: Path) -> None:
    """Start a process recording into ``path`` and SIGKILL it once it is in the middle of a line."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    for _ in range(5):  # the kill lands mid-line nearly always; try again in the rare case it did not
        path.unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], env=env, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while True:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "the writer recorded too slowly"
                raw = path.read_bytes() if path.exists() else b""
                if raw.count(b"\n") >= 4 and not raw.endswith(b"\n"):
                    break
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        if not path.read_bytes().endswith(b"\n"):
            return
    pytest.fail("the writer was never killed mid-line")


def test_a_writer_killed_mid_line_leaves_a_cassette_that_later_runs_replay(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    _killed_mid_line(path)
    whole = path.read_bytes().count(b"\n") - 1  # the header, then the whole entries
    assert whole >= 3
    torn_line = whole + 2
    for mode in ("once", "replay"):
        warned = pytest.warns(UserWarning, match=f"line {torn_line}, the last, is torn")
        with warned, agentnb.cassette(path, mode=mode):  # type: ignore[arg-type]
            answers = [Agent(ScriptedProvider([])).run(f"question {i}").output for i in range(whole)]
            with pytest.raises(CassetteMiss):  # the torn call is not in the cassette
                Agent(ScriptedProvider([])).run(f"question {whole}")
        assert answers == ["x" * 8000 + f" question {i}" for i in range(whole)]
    with pytest.warns(UserWarning) as caught, agentnb.cassette(path, mode="new"):  # records what was torn
        Agent(FunctionProvider(lambda m, t: "again " + m[-1].content)).run(f"question {whole}")
    assert any("cut off its torn last line" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn line left
        tape = Cassette(path, mode="replay")
    assert len(tape.entries) == whole + 1 and path.read_bytes().endswith(b"\n")
    assert [json.loads(line) for line in path.read_text().splitlines()]  # every line whole JSON


def test_a_torn_line_anywhere_but_last_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    lines = _cassette(path, 3)
    path.write_text("\n".join([lines[0], lines[1][: len(lines[1]) // 2], *lines[2:]]) + "\n")
    for mode in ("once", "replay"):
        with pytest.raises(CassetteError, match=r"c\.jsonl, line 2: not JSON .*torn"):
            Cassette(path, mode=mode)  # type: ignore[arg-type]


def test_a_whole_last_line_without_its_newline_is_read_and_appended_after(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    lines = _cassette(path)
    path.write_text("\n".join(lines))  # a hand edit that dropped the last newline
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with agentnb.cassette(path, mode="new"):
            assert Agent(ScriptedProvider([]), tools=[add]).run("1 + 1?").output == "2"  # the last line, read
            Agent(ScriptedProvider(["new"])).run("something new")
    assert [json.loads(x) for x in path.read_text().splitlines()][-1]["reply"]["text"] == "new"
    assert len(Cassette(path, mode="replay").entries) == len(lines)


def test_no_bare_exception_from_any_hostile_file(tmp_path: Path) -> None:
    hostile = [b"\xff\xfe", b"", b"[]", b"null", b'{"agentnb_cassette": 1}\n' + b"[" * 20000, b"\x00" * 10,
               b'{"kind": "agentnb.run.session", "version": 1, "messages": [' + b"{" * 5000]  # fmt: skip
    for raw in hostile:
        for load in (_load_session, RunResult.load, lambda p: Cassette(p, mode="replay"), agentnb.replay):
            (tmp_path / "f.json").write_bytes(raw)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    load(tmp_path / "f.json")
                except AgentnbError:
                    pass
