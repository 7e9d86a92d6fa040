"""Cassettes (issue 38): model calls recorded at the Provider seam, answered from the file next time."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import agentnb
from agentnb import Agent, CassetteError, CassetteMiss, tool
from agentnb.messages import ToolCall, Usage
from agentnb.providers import OpenAIProvider
from agentnb.providers.base import Completion, TextChunk, ToolCallChunk
from agentnb.providers.fallback import FallbackProvider
from agentnb.testing import FunctionProvider, ScriptedProvider, Streamed, call
from agentnb.testing.server import ScriptedServer, error, text, tool_calls
from agentnb.timetravel import Cassette

KEY = "sk-live-SECRETSECRET0123456789abcd"
PASSWORD = "hunter2-in-the-url"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def entries(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert json.loads(lines[0])["agentnb_cassette"] == 1
    return [json.loads(line) for line in lines[1:]]


def test_recorded_over_http_then_replayed_in_a_new_process_with_the_server_stopped_and_no_key(tmp_path) -> None:
    path = tmp_path / "calls.jsonl"
    with ScriptedServer() as server:
        # A model can echo what it was shown: a key, a URL with credentials in it.
        echo = f"5 (your key is {KEY}; see http://alice:{PASSWORD}@db.internal/v1)"
        server.script(tool_calls(("add", {"a": 2, "b": 3})), text(echo))
        provider = OpenAIProvider("gpt-test", api_key=KEY, base_url=server.url)
        with agentnb.cassette(path, mode="once"):
            first = Agent(provider, tools=[add]).run("2 + 3?")
        assert len(server.requests) == 2 and first.output.startswith("5")
    raw = path.read_text()
    assert KEY not in raw and PASSWORD not in raw and "Bearer" not in raw and "alice" not in raw
    assert len(entries(path)) == 2
    script = textwrap.dedent(
        f"""
        import agentnb
        from agentnb import Agent, tool
        from agentnb.providers import OpenAIProvider

        @tool
        def add(a: int, b: int) -> int:
            '''Add two integers.'''
            return a + b

        with agentnb.cassette({str(path)!r}, mode="once"):  # the file exists: replay only
            r = Agent(OpenAIProvider("gpt-test", base_url="http://127.0.0.1:9/v1"), tools=[add]).run("2 + 3?")
        print(r.output, r.tool_calls, r.stop_reason)
        """
    )
    env = {**os.environ, "PYTHONPATH": ROOT, "OPENAI_API_KEY": ""}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "5 (your key is ***; see http://***@db.internal/v1) 1 answer"


def test_agent_cassette_and_streamed_calls_replay_their_chunks(tmp_path) -> None:
    path = tmp_path / "agent.jsonl"
    model = ScriptedProvider([Streamed(["The ", "answer ", "is 5."])])
    first = Agent(model, cassette=str(path), stream=True).run("2 + 3?")
    again = Agent(ScriptedProvider([]), cassette=str(path), stream=True).run("2 + 3?")
    assert again.output == first.output == "The answer is 5."
    assert [e.text for e in again.events if e.kind == "text_delta"] == ["The ", "answer ", "is 5."]
    assert again.cost == 0.0


def test_modes(tmp_path) -> None:
    path = tmp_path / "modes.jsonl"
    with pytest.raises(agentnb.UserError, match="no such cassette"):
        agentnb.cassette(path, mode="replay").__enter__()
    with pytest.raises(agentnb.UserError, match="is not one of once, replay, record, new"):
        agentnb.cassette(path, mode="all").__enter__()
    with agentnb.cassette(path, mode="record"):
        Agent(ScriptedProvider(["one"])).run("q1")
    with agentnb.cassette(path, mode="new"):  # q1 from the file, q2 recorded
        model = ScriptedProvider(["two"])
        assert Agent(model).run("q1").output == "one"
        assert Agent(model).run("q2").output == "two"
    assert [e["reply"]["text"] for e in entries(path)] == ["one", "two"]
    with agentnb.cassette(path, mode="replay"):
        assert Agent(ScriptedProvider([])).run("q2").output == "two"
    with agentnb.cassette(path, mode="record"):  # a fresh recording
        Agent(ScriptedProvider(["three"])).run("q3")
    assert [e["reply"]["text"] for e in entries(path)] == ["three"]


def test_a_call_not_in_the_cassette_shows_the_nearest_recorded_request_and_the_difference(tmp_path) -> None:
    path = tmp_path / "miss.jsonl"
    with agentnb.cassette(path):
        Agent(ScriptedProvider([call("add", a=1, b=2), "3"]), tools=[add], system="Be exact.").run("1 + 2?")
        Agent(ScriptedProvider(["hi"])).run("hello")
    with agentnb.cassette(path), pytest.raises(CassetteMiss) as info:
        Agent(ScriptedProvider(["never asked"]), tools=[add], system="Be exact.").run("1 + 5?")
    message = str(info.value)
    assert "messages[1].content" in message and "nearest recorded call: line 2" in message
    assert "'1 + 2?'" in message and "'1 + 5?'" in message


def test_replay_of_a_cassette_path_names_what_changed_on_a_miss_not_the_model(tmp_path) -> None:
    path = tmp_path / "calls.jsonl"
    with ScriptedServer() as server, agentnb.cassette(path):
        server.script(text("4"))
        Agent(OpenAIProvider("m-1", base_url=server.url)).run("2 + 2?")
    assert '"model":"m-1"' in path.read_text()  # the entry names its model; replay(path) knows none
    with pytest.raises(CassetteMiss) as info:
        Agent(agentnb.replay(path)).run("2 + 3?")
    message = str(info.value)
    assert "at messages[0].content (nearest recorded call: line 2)" in message
    assert "'2 + 2?'" in message and "'2 + 3?'" in message and "model" not in message.split("\n")[0][-60:]
    assert Agent(agentnb.replay(path)).run("2 + 2?").output == "4"


def test_corrupt_or_hand_edited_files_are_errors_naming_the_line(tmp_path) -> None:
    path = tmp_path / "c.jsonl"
    with agentnb.cassette(path):
        Agent(ScriptedProvider(["a"])).run("1")
        Agent(ScriptedProvider(["b"])).run("2")
    lines = path.read_text().splitlines()
    edited = json.loads(lines[2])
    edited["request"]["messages"][0]["content"] = "3"  # a hand edit that is still an entry: found by what it says
    (tmp_path / "edited.jsonl").write_text("\n".join([lines[0], lines[1], json.dumps(edited)]) + "\n")
    with agentnb.cassette(tmp_path / "edited.jsonl", mode="replay"):
        assert Agent(ScriptedProvider([])).run("3").output == "b"
    cases = {
        "torn.jsonl": ("\n".join([*lines[:2], lines[2][:-15], lines[2]]) + "\n", r"torn\.jsonl, line 3: not JSON"),
        "bad.jsonl": ("\n".join([lines[0], lines[1], '{"request": {"messages": []}, "reply": {"text": 5}}']) + "\n",
                      r"bad\.jsonl, line 3: not a cassette entry: reply\.text: expected str, not int 5"),
        "nohead.jsonl": ("\n".join(lines[1:]) + "\n", r"nohead\.jsonl, line 1: not an agentnb cassette"),
    }  # fmt: skip
    for name, (content, pattern) in cases.items():
        (tmp_path / name).write_text(content)
        with pytest.raises(CassetteError, match=pattern):
            agentnb.cassette(tmp_path / name, mode="replay").__enter__()
    (tmp_path / "nonl.jsonl").write_text("\n".join(lines))  # whole, but no newline at its end: still read
    assert len(Cassette(tmp_path / "nonl.jsonl", mode="replay").entries) == 2


def test_an_evaluation_at_concurrency_16_loses_no_entry(tmp_path) -> None:
    path = tmp_path / "eval.jsonl"

    async def answer(messages, tools):
        await asyncio.sleep(0.001)  # the runs interleave
        return f"echo {messages[-1].content}"

    cases = [{"input": f"case {i}", "expected": f"echo case {i}"} for i in range(48)]
    with agentnb.cassette(path):
        ev = agentnb.evaluate(Agent(FunctionProvider(answer)), cases, scorers=["exact"], concurrency=16, progress=False)
    assert ev.table["passed"].all()
    recorded = entries(path)
    assert sorted(e["reply"]["text"] for e in recorded) == sorted(c["expected"] for c in cases)
    assert all(e["reply"]["text"] == "echo " + e["request"]["messages"][-1]["content"] for e in recorded)
    with agentnb.cassette(path, mode="replay"):
        again = agentnb.evaluate(Agent(ScriptedProvider([])), cases, scorers=["exact"], concurrency=16, progress=False)
    assert again.table["passed"].all()


def test_two_processes_writing_one_cassette_at_once_lose_nothing(tmp_path) -> None:
    path = tmp_path / "two.jsonl"
    script = textwrap.dedent(
        """
        import sys, agentnb
        from agentnb import Agent
        from agentnb.testing import FunctionProvider
        who = sys.argv[1]
        with agentnb.cassette(sys.argv[2], mode="new"):
            agent = Agent(FunctionProvider(lambda m, t: "x" * 3000 + m[-1].content))
            for i in range(150):
                agent.run(f"{who} {i}")
        """
    )
    env = {**os.environ, "PYTHONPATH": ROOT}
    procs = [
        subprocess.Popen([sys.executable, "-c", script, who, str(path)], env=env, stderr=subprocess.PIPE, text=True)
        for who in ("p1", "p2")
    ]
    try:
        for p in procs:
            assert p.wait(timeout=180) == 0, p.stderr.read() if p.stderr else ""
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    recorded = entries(path)  # every line whole JSON
    asked = sorted(e["request"]["messages"][-1]["content"] for e in recorded)
    assert asked == sorted(f"{w} {i}" for w in ("p1", "p2") for i in range(150))


def test_every_provider_kind_goes_through_the_cassette(tmp_path) -> None:
    path = tmp_path / "kinds.jsonl"
    with ScriptedServer() as text_server, ScriptedServer() as down:
        text_server.script(text('{"name": "add", "arguments": {"a": 2, "b": 3}}'), text("It is 5."))
        untooled = Agent(OpenAIProvider("textmodel", base_url=text_server.url, tool_calling="untooled"), tools=[add])
        down.script(error(500, "down", retry_after_ms=None), error(500, "down", retry_after_ms=None))
        fallback = FallbackProvider(
            [OpenAIProvider("a", base_url=down.url, max_retries=0), ScriptedProvider(["backup"])]
        )
        helper = Agent(ScriptedProvider(["helped"]), name="helper")
        boss = Agent(ScriptedProvider([call("helper", prompt="help"), "boss done"]), tools=[helper.as_tool()])
        with agentnb.cassette(path):
            assert untooled.run("2 + 3?").output == "It is 5."
            assert Agent(fallback).run("hi").output == "backup"
            assert boss.run("go").output == "boss done"
        with agentnb.cassette(path, mode="replay"):
            n = len(text_server.requests), len(down.requests)
            assert untooled.run("2 + 3?").output == "It is 5."
            assert Agent(fallback).run("hi").output == "backup"
            helper.provider = ScriptedProvider([])
            boss.provider = ScriptedProvider([])
            assert boss.run("go").output == "boss done"
            assert (len(text_server.requests), len(down.requests)) == n  # no request reached a server
    providers = [e["provider"] for e in entries(path)]
    assert providers == ["OpenAIProvider"] * 2 + ["FallbackProvider"] + ["ScriptedProvider"] * 3


def test_replay_of_a_cassette_file_answers_by_request(tmp_path) -> None:
    path = tmp_path / "r.jsonl"
    with agentnb.cassette(path):
        Agent(ScriptedProvider(["first"])).run("a")
        Agent(ScriptedProvider(["second"])).run("b")
    replayer = agentnb.replay(path)
    assert Agent(replayer).run("b").output == "second"
    assert Agent(replayer).run("a").output == "first"
    with pytest.raises(CassetteMiss):
        Agent(replayer).run("c")


# What the cassette writes reads back equal (text that holds no secret: secrets are scrubbed).
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_calls = st.lists(
    st.builds(
        lambda i, name, args: ToolCall(f"call_{i}", name, args),
        st.integers(0, 99),
        st.from_regex(r"[a-z_]{1,10}", fullmatch=True),
        st.dictionaries(st.text(max_size=5), _json, max_size=3),
    ),
    max_size=3,
)
_chunks = st.lists(
    st.one_of(
        st.builds(TextChunk, st.text(max_size=10)),
        st.builds(
            ToolCallChunk,
            st.integers(0, 3),
            st.none() | st.text(max_size=4),
            st.none() | st.text(max_size=4),
            st.text(max_size=6),
        ),
    ),
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(
    prompt=st.text(max_size=30),
    reply=st.none() | st.text(max_size=30),
    calls=_calls,
    usage=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    finish=st.none() | st.sampled_from(["stop", "tool_calls", "length"]),
    chunks=_chunks,
)
def test_what_the_cassette_writes_reads_back_equal(
    tmp_path_factory, prompt, reply, calls, usage, finish, chunks
) -> None:
    from agentnb.timetravel.entries import scrub

    completion = Completion(reply, tuple(calls), Usage(*usage), finish, model="m-1")
    request = {"model": "m-1", "messages": [{"role": "user", "content": prompt}], "tools": [], "tool_choice": "auto"}
    assume(scrub([prompt, reply, [c.arguments for c in calls], [c.text if isinstance(c, TextChunk) else c.arguments for c in chunks]], None)
           == [prompt, reply, [c.arguments for c in calls], [c.text if isinstance(c, TextChunk) else c.arguments for c in chunks]])  # fmt: skip
    path = tmp_path_factory.mktemp("prop") / "p.jsonl"
    writer = Cassette(path, mode="record")
    writer.write(request, completion, tuple(chunks), "P")
    writer.close()
    (entry,) = Cassette(path, mode="replay").entries
    assert entry.request == request
    assert entry.completion == Completion(reply, tuple(calls), Usage(*usage, 0.0), finish, model="m-1")
    assert entry.chunks == tuple(chunks)


def test_an_agents_own_cassette_records_the_agents_it_runs_as_tools(tmp_path) -> None:
    path = str(tmp_path / "own.jsonl")

    def team(helper_replies: list, boss_replies: list) -> Agent:
        helper = Agent(ScriptedProvider(helper_replies), name="helper")
        return Agent(ScriptedProvider(boss_replies), tools=[helper.as_tool()], cassette=path)

    first = team(["helped"], [call("helper", prompt="help"), "boss done"]).run("go")
    assert first.output == "boss done" and len(entries(path)) == 3
    again = team([], []).run("go")  # mode once, the file exists: every call from the cassette
    assert again.output == "boss done"
    inner = [e.event for e in again.events if e.kind == "sub_agent" and e.event.kind == "final_answer"]
    assert [e.text for e in inner] == ["helped"]


def test_a_fork_inside_a_cassette_records_only_the_model_s_own_replies(tmp_path) -> None:
    path = tmp_path / "fork.jsonl"
    model = ScriptedProvider([call("add", a=1, b=2), "3", "it is three"])
    result = Agent(model, tools=[add]).run("1 + 2?")
    with agentnb.cassette(path):
        fork = result.fork(0, reply=[{"name": "add", "arguments": {"a": 1, "b": 2}}])
    assert fork.output == "it is three"
    assert [e["reply"]["text"] for e in entries(path)] == ["it is three"]  # not the edited reply
