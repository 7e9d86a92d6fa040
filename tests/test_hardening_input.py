"""Bad input a model or a user can produce (issue 13): readable errors, never a crash."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from agentnb import Agent, load_transcript, tool
from agentnb.errors import TranscriptError
from agentnb.events import ToolFinished, ValidationResult
from agentnb.messages import ToolCall
from agentnb.messages.jsonsafe import MAX_DEPTH
from agentnb.providers.base import parse_arguments
from agentnb.providers.untooled.parse import parse_reply
from agentnb.run.result import RunResult
from agentnb.testing import ScriptedProvider, Streamed, call, tool_chunks


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def take(data: dict) -> str:  # type: ignore[type-arg]
    """Accept any object."""
    return "ok"


DEEP = "[" * 100_000 + "]" * 100_000


# -- 1. deep nesting ----------------------------------------------------------------------


def test_deeply_nested_native_arguments_are_a_readable_error() -> None:
    c = parse_arguments("c1", "take", '{"data": ' + DEEP + "}")
    assert c.arguments is None and "nested more than" in (c.parse_error or "")
    # Just inside the bound still parses.
    ok = parse_arguments("c1", "take", '{"data": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}")
    assert ok.arguments is not None


@pytest.mark.parametrize("streamed", [False, True])
def test_deep_arguments_keep_the_run_going(streamed: bool) -> None:
    raw = '{"data": ' + DEEP + "}"
    first = Streamed(tool_chunks(0, "take", raw, pieces=4)) if streamed else call("take")
    if not streamed:
        first = ToolCall("c1", "take", None, raw, parse_arguments("c1", "take", raw).parse_error)
    model = ScriptedProvider([first, "sorry"])
    result = Agent(model, tools=[take], stream=streamed).run("go")
    assert result.stop_reason == "answer" and result.output == "sorry"
    assert "nested more than" in model.requests[1].messages[-1].content


def test_deep_untooled_reply_is_a_readable_error() -> None:
    for text in ('{"name": "take", "arguments": {"data": ' + DEEP + "}}", "```json\n" + DEEP + "\n```", DEEP):
        _prose, calls = parse_reply(text, ["take"])
        assert calls == () or "nested more than" in (calls[0].parse_error or "")


def test_deep_reply_through_an_untooled_agent() -> None:
    model = ScriptedProvider(['{"name": "take", "arguments": {"data": ' + DEEP + "}}", "fine"], native_tools=False)
    result = Agent(model, tools=[take]).run("go")
    assert result.stop_reason == "answer" and result.output == "fine"


# -- 2. lone surrogates, atomic save ---------------------------------------------------------


def test_lone_surrogates_in_arguments_and_results(tmp_path: Path) -> None:
    model = ScriptedProvider([call("echo", text="a\ud800b"), call("echo", text="a\ud800b"), "done \udfff"])
    result = Agent(model, tools=[echo]).run("go")
    assert result.stop_reason == "answer", result.error
    finished = [e for e in result.events if isinstance(e, ToolFinished)]
    assert finished[0].result == "a\ud800b"
    assert [e.action for e in result.events if e.kind == "dedup"] == ["execute", "skip"]
    path = tmp_path / "run.json"
    result.save(path)
    again = load_transcript(str(path))
    assert again.output == "done \udfff" and again.messages == result.messages and again.events == result.events


def test_a_failed_save_keeps_the_old_transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.json"
    good = Agent(ScriptedProvider(["first"])).run("go")
    good.save(path)
    before = path.read_bytes()

    def broken(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(OSError, match="disk full"):
        Agent(ScriptedProvider(["second"])).run("go").save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["run.json"]  # no temp file left behind


# -- 3. transcript tags cannot be forged ------------------------------------------------------


@pytest.mark.parametrize("key", ["__image__", "__usage__", "__tool_call__"])
def test_model_data_that_looks_like_a_type_tag_round_trips(tmp_path: Path, key: str) -> None:
    forged = {key: {"mime": "image/png", "data": "!!", "input_tokens": 1, "id": "x", "name": "y"}}
    model = ScriptedProvider([call("take", data=forged), "ok"])
    result = Agent(model, tools=[take]).run("go")
    path = tmp_path / "t.json"
    result.save(path)
    again = load_transcript(str(path))
    assert again.events == result.events and again.messages == result.messages
    started = next(e for e in again.events if e.kind == "tool_started")
    assert started.arguments == {"data": forged}  # still plain data, not an object


def test_version_1_transcripts_still_load(tmp_path: Path) -> None:
    old = {
        "version": 1,
        "output": "5",
        "stop_reason": "answer",
        "tool_calls": 1,
        "usage": {"input_tokens": 1, "output_tokens": 2},
        "messages": [{"role": "user", "content": "hi"}],
        "events": [
            {
                "kind": "model_response",
                "depth": 0,
                "text": None,
                "tool_calls": [{"__tool_call__": {"id": "c", "name": "add", "arguments": {"a": 1}}}],
                "usage": {"__usage__": {"input_tokens": 1, "output_tokens": 2}},
                "duration": 0.1,
            }
        ],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    r = load_transcript(str(path))
    assert r.events[0].tool_calls[0] == ToolCall("c", "add", {"a": 1})  # type: ignore[union-attr]


# -- 4. load errors name the file and the problem ---------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("not json", "invalid JSON"),
        ("[1, 2]", "a transcript is a JSON object"),
        ('{"version": 99}', "version 99 is not supported"),
        ('{"version": 2, "output": "", "stop_reason": "answer", "events": []}', "no 'messages'"),
        ('{"version": 2, "output": "", "stop_reason": "answer", "messages": null, "events": []}', "'messages' must be"),
        (
            '{"version": 2, "output": "", "stop_reason": "answer", "messages": [{"role": "x"}], "events": []}',
            "messages[0]",
        ),
        (
            '{"version": 2, "output": "", "stop_reason": "answer", "messages": [], "events": [{"kind": "zzz"}]}',
            "events[0]: unknown event kind",
        ),
        (
            '{"version": 2, "output": "", "stop_reason": "answer", "messages": [], "events": [{"kind": "text_delta"}]}',
            "events[0]",
        ),
        ('{"version": 2, "output": "", "stop_reason": "won", "messages": [], "events": []}', "stop_reason"),
        (b"\xff\xfe garbage", "not UTF-8"),
    ],
)
def test_load_errors_name_the_file_and_what_is_wrong(tmp_path: Path, content: str | bytes, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(TranscriptError) as info:
        load_transcript(str(path))
    assert str(path) in str(info.value) and expected in str(info.value)
    assert isinstance(info.value, ValueError)


# -- 5, 6. linear, bounded UnTooled parsing; Python sets ---------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "echo", "arguments": {"text": "a"}}' + " " * 200_000 + "x",
        "```\n```\n" * 150_000,
        "```{```" * 150_000,
        'Sure: {"name": "echo", "arguments": {"text": "a"}}' + " " * 200_000 + "x",
        "{" + "a" * 1_000_000,
        "[" * 300_000,
        "'" * 500_000,
    ],
)
def test_untooled_parsing_is_fast_on_hostile_replies(text: str) -> None:
    # CPU time, not wall time: the bound is about the parser's work (linear, not quadratic), and
    # must hold on a busy machine
    start = time.process_time()
    parse_reply(text, ["echo"])
    assert time.process_time() - start < 2.0


def test_python_sets_are_an_error_for_the_model_not_a_crash() -> None:
    for reply in ("{'name': 'take', 'arguments': {1, 2}}", "{'name': 'take', 'arguments': {'data': {1, 2}}}"):
        _, calls = parse_reply(reply, ["take"])
        assert calls and calls[0].arguments is None and calls[0].parse_error
    _, calls = parse_reply("{'name': 'take', 'arguments': {'data': {'a': (1, 2)}}}", ["take"])
    assert calls[0].arguments == {"data": {"a": [1, 2]}}  # a tuple is a list
    model = ScriptedProvider(["{'name': 'take', 'arguments': {'data': {1, 2}}}", "ok"], native_tools=False)
    assert Agent(model, tools=[take]).run("go").stop_reason == "answer"


def test_huge_integers_are_an_error_for_the_model() -> None:
    big = "1" * 5000
    assert parse_arguments("c", "take", '{"data": ' + big + "}").arguments is None
    _, calls = parse_reply('{"name": "take", "arguments": {"data": ' + big + "}}", ["take"])
    assert calls[0].arguments is None


# -- 7. tools that fail strangely ---------------------------------------------------------------


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print me")


class BadValue:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


@tool
def weird() -> str:
    """Raises an exception that cannot be printed."""
    raise UnprintableError


@tool
def quits() -> str:
    """Calls sys.exit."""
    raise SystemExit(3)


@tool
def bad_value() -> object:
    """Returns an object that cannot be printed."""
    return BadValue()


@tool(timeout=5)
def quits_in_thread() -> str:
    """Calls sys.exit on a thread."""
    raise SystemExit(4)


@tool
def stray_generator_exit() -> str:
    """Raises GeneratorExit (it escaped the run before, losing everything)."""
    raise GeneratorExit


@tool(timeout=5)
def stray_generator_exit_in_thread() -> str:
    """Raises GeneratorExit on a thread."""
    raise GeneratorExit


@tool
def own_timeout() -> str:
    """Raises TimeoutError itself (no timeout configured)."""
    raise TimeoutError("upstream timed out")


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (weird, "UnprintableError: <unprintable UnprintableError>"),
        (quits, "SystemExit: 3"),
        (quits_in_thread, "SystemExit: 4"),
        (own_timeout, "TimeoutError: upstream timed out"),
        (stray_generator_exit, "GeneratorExit"),
        (stray_generator_exit_in_thread, "GeneratorExit"),
    ],
)
def test_strange_tool_failures_are_tool_errors(t: object, expected: str) -> None:
    model = ScriptedProvider([call(t.name), "recovered"])  # type: ignore[attr-defined]
    result = Agent(model, tools=[t]).run("go")
    assert result.stop_reason == "answer" and result.output == "recovered"
    finished = next(e for e in result.events if isinstance(e, ToolFinished))
    assert finished.error == expected


def test_a_result_that_cannot_be_printed_is_still_a_result() -> None:
    result = Agent(ScriptedProvider([call("bad_value"), "ok"]), tools=[bad_value]).run("go")
    assert result.stop_reason == "answer"
    assert "unprintable BadValue" in next(e for e in result.events if isinstance(e, ToolFinished)).result


# -- 14. bounded tool results --------------------------------------------------------------------


@tool
def big() -> str:
    """A 10 MB result."""
    return "A" * 5_000_000 + "B" * 5_000_000


@tool(max_result_chars=100)
def small_bound() -> str:
    """A result bounded by its own limit."""
    return "x" * 1000


def test_the_model_reads_a_bounded_result_and_the_transcript_keeps_all() -> None:
    model = ScriptedProvider([call("big"), "ok"])
    result = Agent(model, tools=[big]).run("go")
    seen = model.requests[1].messages[-1].content
    assert len(seen) < 21_000 and seen.startswith("A") and seen.endswith("B")
    assert "characters cut: the result had 10000000 characters" in seen
    assert len(next(e for e in result.events if isinstance(e, ToolFinished)).result) == 10_000_000
    # The agent's bound, the tool's own bound, and no bound.
    model = ScriptedProvider([call("big"), "ok"])
    Agent(model, tools=[big], max_result_chars=1000).run("go")
    assert len(model.requests[1].messages[-1].content) < 1100
    model = ScriptedProvider([call("small_bound"), "ok"])
    Agent(model, tools=[small_bound], max_result_chars=None).run("go")
    assert len(model.requests[1].messages[-1].content) < 200
    model = ScriptedProvider([call("big"), "ok"])
    Agent(model, tools=[big], max_result_chars=None).run("go")
    assert len(model.requests[1].messages[-1].content) == 10_000_000


def test_bad_bounds_are_user_errors() -> None:
    from agentnb.errors import ToolDefinitionError, UserError

    with pytest.raises(UserError):
        Agent(ScriptedProvider([]), max_result_chars=0)
    with pytest.raises(ToolDefinitionError):
        tool(max_result_chars=-1)(lambda: "x")


# -- 16. the turn after the limit -----------------------------------------------------------------


@pytest.mark.parametrize("limit", [0, 1])
def test_a_call_where_none_is_offered_gets_one_clear_retry(limit: int) -> None:
    replies = [call("echo", text=str(i)) for i in range(limit)] + [call("echo", text="again"), "the answer"]
    model = ScriptedProvider(replies)
    result = Agent(model, tools=[echo], max_tool_calls=limit).run("go")
    assert (result.output, result.stop_reason) == ("the answer", "limit")
    assert "Answer my request now in plain text" in model.requests[-1].messages[-1].content
    assert model.requests[-1].tools == ()


def test_the_retry_happens_once() -> None:
    model = ScriptedProvider([call("echo", text="a"), call("echo", text="b")])
    result = Agent(model, tools=[echo], max_tool_calls=0).run("go")
    assert (result.stop_reason, len(model.requests)) == ("limit", 2)
    # The model never answered in text: agentnb says so instead of an empty output (issue 27).
    assert result.output.startswith("[agentnb]") and "the tool-call limit (0)" in result.output


def test_max_tool_calls_zero_and_a_plain_answer_is_an_answer() -> None:
    result = Agent(ScriptedProvider(["hello"]), tools=[echo], max_tool_calls=0).run("go")
    assert (result.output, result.stop_reason) == ("hello", "answer")


def test_validation_still_applies() -> None:
    model = ScriptedProvider([call("echo", text=5), "ok"])
    result = Agent(model, tools=[echo]).run("go")
    v = next(e for e in result.events if isinstance(e, ValidationResult))
    assert v.errors == ("text: 5 is not of type 'string'",)


def test_run_result_round_trips_partial_output() -> None:
    r = RunResult("", (), (), Agent(ScriptedProvider(["x"])).run("go").usage, "cancelled", 0, partial_output="half")
    assert RunResult.from_dict(r.to_dict()).partial_output == "half"


def test_the_printer_survives_lone_surrogates() -> None:
    import io

    from agentnb import TextPrinter

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    model = ScriptedProvider([call("echo", text="a\ud800"), Streamed(["x\udfff", "y"])])
    result = Agent(model, tools=[echo]).run("go", on_event=TextPrinter(out), stream=True)
    out.flush()
    assert result.stop_reason == "answer"
    assert b"\\ud800" in raw.getvalue()


# -- 17. the CLI ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--tools", ":calculator"], "give an importable module name"),
        (["--tools", "..x"], "give an importable module name"),
        (["--tools", "agentnb.demo_tools:,calculator"], "an empty tool name"),
        (["--tools", "no_such_module_x"], "cannot import tools module 'no_such_module_x'"),
        (["--provider", "openai:m", "--base-url", "notaurl"], "must start with http://"),
    ],
)
def test_cli_usage_errors_are_one_line_without_traceback(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentnb.cli import main

    assert main(["run", "hi", *argv]) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_prints_lone_surrogates_without_crashing(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "surrogate_tools.py").write_text(
        "from agentnb import tool\n"
        "@tool\n"
        "def odd() -> str:\n"
        "    '''Returns a lone surrogate.'''\n"
        "    return 'x\\ud800'\n"
    )
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from agentnb.providers import get_provider\n"
        "from agentnb.testing import ScriptedProvider, call\n"
        "import agentnb.cli as cli\n"
        "cli.get_provider = lambda spec, **kw: ScriptedProvider([call('odd'), 'answer \\udfff'])\n"
        "sys.exit(cli.main(['run', 'go', '--tools', 'surrogate_tools', *sys.argv[2:]]))\n"
    )
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONPATH": os.pathsep.join(sys.path)}
    for extra in (["--quiet"], ["--json"], []):
        out = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path), *extra], capture_output=True, text=True, env=env, timeout=60
        )
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr


def test_a_text_model_that_writes_a_call_after_the_limit_is_asked_again() -> None:
    model = ScriptedProvider(
        ['{"name": "echo", "arguments": {"text": "a"}}', '{"name": "echo", "arguments": {"text": "b"}}', "It is a."],
        native_tools=False,
    )
    result = Agent(model, tools=[echo], max_tool_calls=1).run("go")
    assert (result.output, result.stop_reason, result.tool_calls) == ("It is a.", "limit", 1)
    assert "Answer my request now in plain text" in model.requests[-1].messages[-1].content


def test_json_text_that_is_not_a_call_is_an_answer_when_no_tools_are_offered() -> None:
    model = ScriptedProvider(['{"answer": 42}'], native_tools=False)
    result = Agent(model, tools=[echo], tool_choice="none").run("go")
    assert (result.output, result.stop_reason) == ('{"answer": 42}', "answer")


def test_the_trace_widget_renders_a_run_with_lone_surrogates() -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    result = Agent(ScriptedProvider([call("echo", text="a\ud800"), "done \udfff"]), tools=[echo]).run("go")
    from agentnb.notebook.trace.blocks import save_link

    widget = TraceWidget()
    for event in result.events:
        widget.handle(event)
    widget.finish(result)
    widget.flush()
    assert "done" in widget.text()
    assert "base64," in save_link(result)  # the transcript download link (lone surrogates escaped)
    assert TraceWidget.replay(result).answer == "done \udfff"
