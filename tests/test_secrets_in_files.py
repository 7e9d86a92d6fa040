"""No secret in any file agentnb writes (issue 45 item 2): cassettes are meant to be committed.

Generated secrets (the provider's API key, a default header's value, the password of the
base URL, and key-shaped strings) are planted everywhere a user, a server or a model can put
them: the prompt, the system prompt, a server's error message, the reply's text (streamed in
pieces that cut a secret in two, or not), tool-call names, argument names and values, malformed
(raw) arguments and a tool's result. A real server on 127.0.0.1 answers. Then the bytes of
every file written (a cassette, a transcript, a session, an evaluation log) are grepped for
every secret, and the redacted cassette is replayed.
"""

from __future__ import annotations

import json
import sqlite3
import string
import traceback
import zlib
from contextlib import closing

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

pytest.importorskip("openai")

import agentnb
from agentnb import Agent, tool
from agentnb.providers import OpenAIProvider
from agentnb.testing.server import ScriptedServer, error, text, tool_calls
from agentnb.tracing.redact import Redactor

_ALNUM = string.ascii_letters + string.digits


def _secret(prefix: str) -> st.SearchStrategy[str]:
    # The prefix keeps a short generated secret from being a word of the file's own structure
    # ("assistant", "content"), which no redaction could tell from the secret.
    return st.text(_ALNUM + "-_", min_size=10, max_size=24).map(lambda s: prefix + s)


_shaped = st.one_of(
    st.from_regex(r"sk-[A-Za-z0-9]{20,32}", fullmatch=True),
    st.from_regex(r"sk-ant-api03-[A-Za-z0-9_\-]{20,32}", fullmatch=True),
    st.from_regex(r"gh[pousr]_[A-Za-z0-9]{36}", fullmatch=True),
    st.from_regex(r"hf_[A-Za-z0-9]{30,34}", fullmatch=True),
    st.from_regex(r"AKIA[0-9A-Z]{16}", fullmatch=True),
    st.from_regex(r"Bearer [A-Za-z0-9._~+/\-]{20,40}", fullmatch=True),
)
_secrets = st.fixed_dictionaries(
    {"key": _secret("K9"), "header": _secret("H7"), "password": _secret("P5"), "shaped": _shaped}
)


@tool
def echo(text: str) -> str:
    """Say it back."""
    return f"echoed {text}"


def _provider(server: ScriptedServer, s: dict[str, str]) -> OpenAIProvider:
    url = server.url.replace("http://", f"http://ann:{s['password']}@")
    headers = {"X-Team-Auth": f"Bearer {s['header']}"}
    return OpenAIProvider("m-1", api_key=s["key"], base_url=url, default_headers=headers, max_retries=1)


def _script(server: ScriptedServer, s: dict[str, str], places: list[str], everything: str) -> None:
    """One run's replies: a server error (retried), every kind of tool call, then an answer."""
    tool_name, arg_name, arg_value, raw = places
    server.script(
        error(500, f"upstream overloaded for {everything}"),
        tool_calls(
            ("echo", {"text": everything}),
            ("echo", {arg_name: arg_value}),
            (tool_name, {"text": arg_value}),
            ("echo", '{"text": "' + raw),  # malformed: the string never ends
            content=f"calling with {everything}",
        ),
        text(f"done: {everything}"),
    )


def _grep(tmp, s: dict[str, str]) -> dict[str, list[str]]:
    """For every file under ``tmp``, the planted secrets its bytes hold."""
    forms = {v for v in s.values()} | {f"ann:{s['password']}", s["shaped"].removeprefix("Bearer ")}
    found = {}
    for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        if path.suffix == ".sqlite":  # the runs store: its columns as they are, its transcripts unzipped
            with closing(sqlite3.connect(path)) as db:
                raw += b"".join(zlib.decompress(blob) for (blob,) in db.execute("SELECT data FROM transcripts"))
        held = [f for f in forms if f.encode() in raw or json.dumps(f, ensure_ascii=True)[1:-1].encode() in raw]
        found[path.name] = held
    return found


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
# No shrinking: a failure names the file and the secret; shrinking one took minutes on a busy machine.
@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(s=_secrets, data=st.data())
def test_planted_secrets_are_in_no_file_written(tmp_path_factory, stream: bool, s: dict[str, str], data) -> None:
    tmp = tmp_path_factory.mktemp("secrets")
    values = list(s.values())
    everything = " ".join(values) + f" http://ann:{s['password']}@db.internal/v1"
    places = [data.draw(st.sampled_from(values), label=where) for where in ("name", "arg", "value", "raw")]
    prompt, system = f"please use {everything}", f"you may use {everything}"
    agentnb.keep_runs(tmp / "runs.sqlite")  # every run below is kept in the store too
    with ScriptedServer() as server:
        agent = Agent(_provider(server, s), tools=[echo], system=system, stream=stream)
        _script(server, s, places, everything)
        with agentnb.cassette(tmp / "calls.jsonl", mode="record"):
            live = agent.run(prompt)
        sent = server.requests[0]
        assert sent.headers.get("x-team-auth") == f"Bearer {s['header']}"  # the header was really sent
        assert live.stop_reason == "answer" and live.tool_calls == 4, live.error
        assert any(e.kind == "request_retried" for e in live.events)
        live.save(tmp / "run.json")

        chat = agent.session()
        server.script(text(f"noted {everything}"))
        chat.run(prompt)
        chat.save(tmp / "chat.json")

        server.script(text(f"answer {everything}"), error(400, f"refused {everything}"))
        cases = [f"case one {everything}", f"case two {everything}"]
        ev = agentnb.evaluate(agent, cases, log=str(tmp / "eval.jsonl"), concurrency=1, progress=False)
        assert sorted(r["stop_reason"] for r in ev.rows) == ["answer", "error"]
        failed = next(r for r in ev.rows if r["stop_reason"] == "error")
        assert "refused" in failed["error"]
    agentnb.keep_runs(None)  # written and closed
    assert len(agentnb.runs(tmp / "runs.sqlite")) >= 4  # the run, the session's turn, the two cases

    found = _grep(tmp, s)
    assert found == {"calls.jsonl": [], "chat.json": [], "eval.jsonl": [], "run.json": [], "runs.sqlite": []}

    # The redacted cassette still replays: the server is gone, every answer comes from the file.
    with agentnb.cassette(tmp / "calls.jsonl", mode="replay"):
        again = agent.run(prompt)
    assert (again.stop_reason, again.tool_calls) == ("answer", 4), again.error
    assert again.output == Redactor().redact(live.output) != live.output


def test_an_error_s_chain_holds_none_of_the_provider_s_secrets() -> None:
    s = {"key": "K9-key-0123456789", "header": "H7-header-0123456789", "password": "P5-password-0123456789"}
    with ScriptedServer() as server:
        server.script(error(400, f"refused {' '.join(s.values())}"))
        result = Agent(_provider(server, {**s, "shaped": ""})).run("hi")
    assert result.stop_reason == "error"
    chain = "".join(traceback.format_exception(result.exception)) + (result.error or "")
    assert "refused" in chain and not [v for v in s.values() if v in chain]


def test_a_provider_copied_to_a_worker_process_has_its_secrets_known_there() -> None:
    import os
    import pickle
    import subprocess
    import sys

    provider = OpenAIProvider(
        "m", api_key="K9-worker-key-0123", base_url="http://ann:P5-worker-pw-0123@127.0.0.1:9/v1",
        default_headers={"X-Team-Auth": "Bearer H7-worker-header-0123"},
    )  # fmt: skip
    code = (
        "import pickle, sys; from agentnb.tracing.redact import Redactor;"
        "p = pickle.loads(sys.stdin.buffer.read());"
        "print(Redactor(environ=False).redact('K9-worker-key-0123 P5-worker-pw-0123 H7-worker-header-0123'), repr(p._key))"
    )
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    out = subprocess.run(
        [sys.executable, "-c", code], input=pickle.dumps(provider), capture_output=True, timeout=120, env=env
    )
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().split() == ["***", "***", "***", "<secret>"]


def test_the_anthropic_provider_holds_its_headers_and_url_credentials_as_secrets() -> None:
    pytest.importorskip("anthropic")
    from agentnb.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider(
        "m", api_key="K9-anthropic-key-0123", base_url="https://ann:P5-anthropic-pw-0123@gw.internal",
        default_headers={"X-Gateway-Token": "H7-anthropic-header-0123"}, auth_token="T1-anthropic-token-0123",
    )  # fmt: skip
    shown = Redactor(environ=False).redact(
        "K9-anthropic-key-0123 P5-anthropic-pw-0123 H7-anthropic-header-0123 T1-anthropic-token-0123"
    )
    assert shown == "*** *** *** ***" and repr(provider._key) == "<secret>"


def test_a_saved_transcript_that_held_a_secret_still_replays(tmp_path) -> None:
    from agentnb.testing import ScriptedProvider, call

    prompt = "look up sk-abcdefghijklmnop123456 for me"
    first = Agent(ScriptedProvider([call("echo", text=prompt), "found sk-abcdefghijklmnop123456"]), tools=[echo])
    result = first.run(prompt)
    result.save(tmp_path / "run.json")
    assert b"sk-abcdefghijklmnop123456" not in (tmp_path / "run.json").read_bytes()
    again = Agent(agentnb.replay(tmp_path / "run.json"), tools=[echo]).run(prompt)
    assert (again.stop_reason, again.output, again.tool_calls) == ("answer", "found ***", 1)
