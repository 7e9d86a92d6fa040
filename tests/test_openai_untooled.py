"""The untooled route of OpenAIProvider against agentnb.testing's scripted server, over HTTP.

The server is scripted; the SDK, the HTTP, the route switch, the envelope and its fallbacks
are real.
"""

from __future__ import annotations

import io
import json

import pytest

from agentnb import Agent, UserError, get_provider, tool
from agentnb.events import ConstraintDropped, RouteSwitched, ToolFinished
from agentnb.notebook.trace.render import depth_html
from agentnb.notebook.trace.state import TraceState
from agentnb.printer import TextPrinter
from agentnb.providers import OpenAIProvider
from agentnb.testing import ScriptedServer
from agentnb.testing.server import error, text

OLLAMA = "registry.ollama.ai/library/gemma:2b does not support tools"
VLLM = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
LLAMA_CPP = "tools param requires --jinja flag"
CALL = '{"name": "add", "arguments": {"a": 2, "b": 3}}'


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


def provider(server: ScriptedServer, **options) -> OpenAIProvider:
    return OpenAIProvider("m", base_url=server.url, max_retries=2, timeout=20, **options)


@pytest.mark.parametrize("stream", [False, True])
def test_auto_switches_once_on_ollamas_refusal_and_stays_untooled(stream):
    with ScriptedServer(rejects_tools=OLLAMA) as server:
        p = provider(server)
        server.script(text(CALL), text('{"answer": "It is 5."}'), text(CALL), text('{"answer": "5 again."}'))
        out = io.StringIO()
        first = Agent(p, [add], stream=stream).run("2 + 3?", on_event=TextPrinter(out))
        second = Agent(p, [add], stream=stream).run("2 + 3 again?")
    assert first.output == "It is 5." and second.output == "5 again."
    assert [e.name for e in first.events if isinstance(e, ToolFinished)] == ["add"]
    sent_tools = [b.get("tools") is not None for b in server.bodies]
    assert sent_tools == [True, False, False, False, False]  # one refused request in the provider's life
    switches = [e for e in first.events + second.events if isinstance(e, RouteSwitched)]
    assert len(switches) == 1 and switches[0].route == "untooled" and "does not support tools" in switches[0].reason
    assert switches[0].depth == 0 and p.route == "untooled" and p.tool_calling == "auto"
    assert "switched to untooled tool calling" in out.getvalue()
    # the untooled requests carry the catalogue in the prompt and the envelope schema
    body = server.bodies[1]
    assert "tool_choice" not in body and "Function: add" in body["messages"][0]["content"]
    alternatives = body["response_format"]["json_schema"]["schema"]["anyOf"]
    assert alternatives[0]["properties"]["name"] == {"const": "add"} and alternatives[-1]["required"] == ["answer"]
    # after the result, the tool just called is left out: only an answer is possible
    after = server.bodies[2]["response_format"]["json_schema"]["schema"]
    assert after["required"] == ["answer"]
    assert "Result of add: 5" in server.bodies[2]["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, VLLM),
        (500, LLAMA_CPP),
        (400, OLLAMA),
        # the generic wordings a server of one's own may use
        (400, "Unsupported param: tools"),
        (400, "Unrecognized request argument supplied: tools"),
        (422, "unknown field `tools`, expected one of `model`, `messages`, `max_tokens`"),
        (400, "model 'tiny' doesn't support tool calling"),
        (400, "Tool use is not supported for this model."),
    ],
)
def test_auto_switch_costs_one_request_whatever_the_server(server, status, message):
    p = provider(server)
    server.script(error(status, message, retry_after_ms=1), text(CALL), text('{"answer": "5"}'))
    r = Agent(p, [add]).run("2 + 3?")
    assert r.error is None and r.output == "5"
    assert len(server.bodies) == 3  # the SDK did not retry the refusal (even a 500)
    assert sum(isinstance(e, RouteSwitched) for e in r.events) == 1


def test_a_real_server_error_is_not_a_switch(server):
    p = provider(server)
    server.script(error(400, "maximum context length is 2048 tokens"))
    r = Agent(p, [add]).run("2 + 3?")
    assert r.stop_reason == "error" and "maximum context length" in r.error
    assert p.route == "native" and len(server.bodies) == 1


def test_a_probe_that_fails_for_another_reason_gets_the_usual_retries(server):
    p = provider(server)
    server.script(error(503, "overloaded", retry_after_ms=1), text("fine"))
    r = Agent(p, [add]).run("hi")
    assert r.output == "fine" and p.route == "native" and len(server.bodies) == 2


def test_native_does_not_switch_and_says_what_to_do():
    with ScriptedServer(rejects_tools=OLLAMA) as server:
        r = Agent(provider(server, tool_calling="native"), [add]).run("2 + 3?")
    assert r.stop_reason == "error" and "tool_calling='untooled'" in r.error
    assert len(server.bodies) == 1


@pytest.mark.parametrize("stream", [False, True])
def test_untooled_never_sends_tools_and_unwraps_answers(server, stream):
    p = provider(server, tool_calling="untooled")
    server.script(text('{"answer": "Hello \\"there\\" \\u00e9\\ud83d\\ude00."}'))
    r = Agent(p, [add, shout], stream=stream).run("hi")
    assert r.output == 'Hello "there" é😀.'
    body = server.bodies[0]
    assert "tools" not in body and "tool_choice" not in body
    names = [a["properties"]["name"]["const"] for a in body["response_format"]["json_schema"]["schema"]["anyOf"][:2]]
    assert names == ["add", "shout"]
    assert body["messages"][0]["content"].endswith('reply with only {"answer": "<your answer>"}.')


def test_required_and_named_choices_leave_no_answer_alternative(server):
    p = provider(server, tool_calling="untooled")
    server.script(text('{"name": "shout", "arguments": {"text": "a"}}'), text('{"answer": "A"}'))
    Agent(p, [add, shout], tool_choice="shout").run("shout a")
    schema = server.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["name"] == {"const": "shout"} and "anyOf" not in schema
    assert schema["properties"]["arguments"]["additionalProperties"] is False


def test_refused_json_schema_falls_back_to_json_object_then_to_nothing(server):
    p = provider(server, tool_calling="untooled")
    refusal = "Input should be 'text' or 'json_object' ('body', 'response_format', 'type')"
    server.script(error(500, refusal, retry_after_ms=1), text(CALL), text('{"answer": "5"}'))
    r = Agent(p, [add]).run("2 + 3?")
    assert r.output == "5" and p.constraint_format == "json_object"
    shapes = [b.get("response_format", {}).get("type") for b in server.bodies]
    assert shapes == ["json_schema", "json_object", "json_object"]
    dropped = [e for e in r.events if isinstance(e, ConstraintDropped)]
    assert len(dropped) == 1 and "json_object" in dropped[0].reason and "response_format" in dropped[0].reason
    server.reset()
    server.script(error(400, "response_format is not supported"), text("Just text."))
    r = Agent(p, [add]).run("hello")
    assert r.output == "Just text." and p.constraint_format is None
    assert [("response_format" in b) for b in server.bodies] == [True, False]
    assert '{"answer"' in server.bodies[0]["messages"][0]["content"]  # the envelope was explained...
    assert '{"answer"' not in server.bodies[1]["messages"][0]["content"]  # ... and is no longer


def test_a_server_that_ignores_the_constraint_is_read_freely_and_no_longer_asked(server):
    p = provider(server, tool_calling="untooled")
    server.script(text("Sure! " + CALL), text("It is 5."), text("Bye."))
    r = Agent(p, [add]).run("2 + 3?")
    assert r.tool_calls == 1 and r.messages[2].content == "5"  # the call after a preamble was found
    assert [("response_format" in b) for b in server.bodies] == [True, False]
    assert any(isinstance(e, ConstraintDropped) and "ignored" in e.reason for e in r.events)


def test_constrain_false_sends_no_response_format(server):
    p = provider(server, tool_calling="untooled", constrain=False)
    server.script(text("```json\n" + CALL + "\n```"), text("5."))
    r = Agent(p, [add]).run("2 + 3?")
    assert r.output == "5." and all("response_format" not in b for b in server.bodies)


def test_reaching_the_limit_on_the_untooled_route_renders_history_as_text(server):
    p = provider(server, tool_calling="untooled")
    server.script(text(CALL), text("5"))
    r = Agent(p, [add], max_tool_calls=1).run("2 + 3?")
    assert r.stop_reason == "limit" and r.output == "5"
    last = server.bodies[-1]
    assert "response_format" not in last  # no tools offered: nothing to constrain
    assert all(m["role"] in ("system", "user", "assistant") and "tool_calls" not in m for m in last["messages"])


def test_unknown_options_fail_at_construction_with_one_clear_error():
    with pytest.raises(UserError, match=r"supports_native_tools.*tool_calling='untooled'"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", supports_native_tools=False)
    with pytest.raises(UserError, match="did you mean timeout"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", timout=3)
    with pytest.raises(UserError, match="tool_calling must be"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", tool_calling="yes")
    with pytest.raises(UserError, match="constrain must be"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", constrain="grammar")
    assert OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", organization="org").name == "m"


def test_get_provider_passes_tool_calling(server):
    p = get_provider("openai:m", base_url=server.url, tool_calling="untooled")
    assert isinstance(p, OpenAIProvider) and p.route == "untooled"
    assert repr(p) == f"OpenAIProvider('m', base_url='{server.url}', tool_calling='untooled')"


def test_the_trace_shows_the_switch_and_the_dropped_constraint():
    state = TraceState()
    for e in (RouteSwitched(0, "m", "untooled", OLLAMA), ConstraintDropped(0, "m", "response_format json_schema", "x")):
        state.add(e)
    html = depth_html(state.depths[0])
    assert "switched to untooled tool calling" in html and "response_format json_schema dropped" in html
    from agentnb.events import event_from_dict

    e = RouteSwitched(2, "m", "untooled", OLLAMA)
    assert event_from_dict(json.loads(json.dumps(e.to_dict()))) == e


def test_cli_takes_tool_calling():
    import os
    import subprocess
    import sys

    with ScriptedServer(rejects_tools=OLLAMA) as server:
        server.script(text('{"name": "calculator", "arguments": {"expression": "37 * 91"}}'), text("3367."))
        base = ["run", "37 * 91?", "--provider", "openai:m", "--base-url", server.url]
        base += ["--tools", "agentnb.demo_tools:calculator", "--quiet"]
        env = {**os.environ, "OPENAI_API_KEY": "sk-x"}
        run = [sys.executable, "-m", "agentnb"]
        out = subprocess.run([*run, *base, "--tool-calling", "untooled"], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "3367." and all("tools" not in b for b in server.bodies)
        native = subprocess.run([*run, *base, "--tool-calling", "native"], capture_output=True, text=True, env=env)
        assert native.returncode == 1 and "tools" in server.bodies[-1]
        local = subprocess.run(
            [*run, "run", "hi", "--provider", "local", "--tool-calling", "untooled"],
            capture_output=True,
            text=True,
            env=env,
        )
        assert (
            local.returncode == 2
            and "--tool-calling applies to 'openai:MODEL' (or a server's) providers" in local.stderr
        )


def test_magics_take_tool_calling():
    from IPython.core.error import UsageError
    from IPython.testing import globalipapp

    from agentnb.notebook.magics.options import MagicOptions

    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    m = shell.magics_manager.registry["AgentMagics"]
    m.defaults, m.history = MagicOptions(), None
    try:
        with ScriptedServer(rejects_tools=OLLAMA) as server:
            shell.run_line_magic("agent_config", f"-p openai:m --base-url {server.url} --tool-calling untooled")
            p = m._provider(m.defaults)
            assert isinstance(p, OpenAIProvider) and p.route == "untooled"
            with pytest.raises(UsageError, match="auto, native or untooled"):
                shell.run_line_magic("agent_config", "--tool-calling sometimes")
            with pytest.raises(UsageError, match=r"applies to 'openai:MODEL' \(or a server's\) providers"):
                shell.run_line_magic("agent_config", "-p local --tool-calling native")
    finally:
        m.defaults, m._providers = MagicOptions(), {}


def test_a_callers_own_response_format_wins_over_the_envelope(server):
    mine = {"type": "json_schema", "json_schema": {"name": "mine", "schema": {"type": "object"}}}
    p = provider(server, tool_calling="untooled", settings={"response_format": mine})
    server.script(text('{"x": 1}'))
    r = Agent(p, [add]).run("hi")
    assert server.bodies[0]["response_format"] == mine and p.constraint_format == "json_schema"
    assert not any(isinstance(e, ConstraintDropped) for e in r.events)


@pytest.mark.parametrize("stream", [False, True])
def test_untooled_route_constrains_a_structured_answer_to_the_output_schema(server, stream):
    from dataclasses import dataclass

    @dataclass
    class Sum:
        total: int
        words: str

    p = provider(server, tool_calling="untooled")
    server.script(text(CALL), text('{"total": 5, "words": "five"}'))
    result = Agent(p, [add], stream=stream, output_type=Sum).run("2 + 3, as a number and in words?")
    assert result.stop_reason == "answer" and result.value == Sum(5, "five")
    first, after = (b["response_format"]["json_schema"]["schema"] for b in server.bodies)
    # with tools on offer the answer alternative is the output schema, not {"answer": ...}
    answer = first["anyOf"][-1]
    assert set(answer["properties"]) == {"total", "words"} and "answer" not in json.dumps(first)
    # after the result only the value is possible
    assert set(after["properties"]) == {"total", "words"}
    assert not any(isinstance(e, ConstraintDropped) for e in result.events)


def test_a_schema_that_forbids_the_tools_field_is_a_switch():
    # A FastAPI/pydantic server whose request model has no `tools` and forbids extra fields
    # answers 422 with a `detail` list, not OpenAI's error shape.
    import json

    from fake_http import JsonHandler, Served

    sent: list[dict] = []

    class Handler(JsonHandler):
        def do_POST(self):
            body = self.read_json()
            if not self.path.endswith("/chat/completions"):  # no plain completions here
                self.send_error(404)
                return
            sent.append(body)
            if "tools" in body:
                detail = [
                    {"type": "extra_forbidden", "loc": ["body", "tools"], "msg": "Extra inputs are not permitted"}
                ]
                data = json.dumps({"detail": detail}).encode()
                self.send_response(422)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            reply = CALL if len(sent) == 2 else '{"answer": "5"}'
            head = {"id": "x", "created": 0, "model": "m"}
            if body.get("stream"):
                chunk = {**head, "object": "chat.completion.chunk"}
                delta = {"index": 0, "delta": {"content": reply}, "finish_reason": None}
                end = {"index": 0, "delta": {}, "finish_reason": "stop"}
                self.send_sse([{**chunk, "choices": [delta]}, {**chunk, "choices": [end]}])
                return
            choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
            self.send_json({**head, "object": "chat.completion", "choices": [choice]})

    served = Served()
    served.serve(Handler)
    with served:
        p = OpenAIProvider("m", base_url=served.url, max_retries=2, timeout=20)
        r = Agent(p, [add]).run("2 + 3?")
    assert r.error is None and r.output == "5" and p.route == "untooled"
    assert ["tools" in b for b in sent] == [True, False, False]
    switch = next(e for e in r.events if isinstance(e, RouteSwitched))
    assert "body.tools: Extra inputs are not permitted" in switch.reason


def test_a_local_server_by_name_and_local_with_a_name() -> None:
    # "ollama:MODEL" and its siblings are the OpenAI-compatible provider at the server's default
    # address; base_url= moves it (here: a real scripted server on 127.0.0.1)
    assert get_provider("vllm:qwen").base_url == "http://localhost:8000/v1"  # type: ignore[attr-defined]
    assert get_provider("LMStudio:m").base_url == "http://localhost:1234/v1"  # type: ignore[attr-defined]
    with ScriptedServer(rejects_tools=OLLAMA) as server:
        server.script(text('{"name": "add", "arguments": {"a": 2, "b": 3}}'), text('{"answer": "5"}'))
        result = Agent(get_provider("ollama:gemma:2b", base_url=server.url), [add]).run("2 + 3?")
    assert result.output == "5" and server.requests[0].body["model"] == "gemma:2b"
    with pytest.raises(UserError, match="'local' is the embedded model and takes no name"):
        get_provider("local:smollm2")  # was: TypeError "local_provider() takes 0 positional arguments"
    with pytest.raises(UserError, match="or a server: ollama, lmstudio"):
        get_provider("kobold:m")
    with pytest.raises(UserError, match="there is no file or folder at '/no/such/model'"):
        get_provider("hf:/no/such/model")  # was: "Repo id must be in the form 'repo_name' ..."
