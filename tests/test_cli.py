"""The `agentnb` command, run as a real subprocess against the scripted OpenAI-wire server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from openai_wire_server import WireServer, text, tool_calls

SECRET = "sk-cli-secret-123456"


def agentnb(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    return subprocess.run(
        [sys.executable, "-m", "agentnb", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_run_prints_the_live_trace_and_answer() -> None:
    with WireServer() as server:
        server.script(tool_calls(("calculator", {"expression": "37 * 91"})), text("37 * 91 = 3367."))
        out = agentnb(
            "run",
            "What is 37 * 91?",
            "--provider",
            "openai:wire-model",
            "--base-url",
            server.url,
            "--tools",
            "agentnb.demo_tools:calculator,weekday",
        )
        second = server.requests[1].body
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "run started: model wire-model, tools calculator, weekday, max 10 tool calls"
    assert '  [0] run calculator(expression="37 * 91")' in lines
    assert any(line.startswith("  [0] calculator -> 3367 (") for line in lines)
    assert "answer: 37 * 91 = 3367." in lines
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_w1", "content": "3367"}
    assert SECRET not in out.stdout + out.stderr


def test_run_json_transcript_has_no_key_and_quiet_prints_only_the_answer() -> None:
    with WireServer() as server:
        server.script(text("hello"), text("hello again"))
        out = agentnb("run", "hi", "--provider", "openai:wire-model", "--base-url", server.url, "--json")
        quiet = agentnb("run", "hi", "--provider", "openai:wire-model", "--base-url", server.url, "--quiet")
    data = json.loads(out.stdout)
    assert data["output"] == "hello" and data["stop_reason"] == "answer"
    assert SECRET not in out.stdout
    assert quiet.stdout == "hello again\n"


def test_unreachable_server_exits_nonzero_and_says_so() -> None:
    out = agentnb("run", "hi", "--provider", "openai:wire-model", "--base-url", "http://127.0.0.1:9/v1")
    assert out.returncode == 1
    assert "run finished: error" in out.stdout


def test_usage_errors_are_one_line() -> None:
    out = agentnb("run", "hi", "--provider", "gpt4")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "agentnb: error: unknown provider spec 'gpt4'; use one of 'openai:MODEL', 'openai-responses:MODEL', "
        "'anthropic:MODEL', 'hf:MODEL', 'transformers:MODEL', 'local', or a server: ollama, lmstudio, llamacpp, koboldcpp, vllm, sglang"
    ]
    out = agentnb("run", "hi", "--tools", "agentnb.demo_tools:nope")
    assert out.returncode == 2 and "agentnb.demo_tools:nope is not an agentnb tool" in out.stderr
