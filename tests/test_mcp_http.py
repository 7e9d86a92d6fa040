"""MCP tool sources over streamable HTTP, against a real server process on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("mcp")

from test_mcp import DEMO, no_orphans, run  # noqa: F401 - no server process outlives a test

from agentnb import Agent
from agentnb.events import ToolStarted
from agentnb.mcp import MCPServer
from agentnb.testing import ScriptedProvider, call

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, DEMO, "http", str(port), "--name", "web"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def test_streamable_http_text_image_and_error(http_server):
    url, proc = http_server
    server = MCPServer.http(url, headers={"X-Test": "1"}, timeout=2)
    try:
        model = ScriptedProvider(
            [call("echo", text="over http"), call("picture"), call("fail", reason="x"), call("slow", seconds=20), "ok"]
        )
        result = run(Agent(model, tools=[server]))
        msgs = [m for m in result.messages if m.role == "tool"]
        assert msgs[0].content == "echo: over http"
        assert msgs[1].content.startswith("[image")
        assert msgs[2].is_error and "refused: x" in msgs[2].content
        assert msgs[3].is_error and "did not answer within 2 s" in msgs[3].content
        assert {e.source for e in result.events if isinstance(e, ToolStarted)} == {"mcp:127.0.0.1"}
        assert int(asyncio.run(server.call("pid", {}))) == proc.pid
        assert asyncio.run(server.call("header", {"name": "x-test"})) == "1"  # headers= reach the server
    finally:
        server.close()


def test_http_server_that_goes_away_is_a_tool_error(http_server):
    url, proc = http_server
    server = MCPServer.http(url, name="web", timeout=3)
    try:
        server.start()
        proc.kill()
        proc.wait()
        model = ScriptedProvider([call("echo", text="anyone?"), "ok"])
        result = run(Agent(model, tools=[server]))
        (msg,) = [m for m in result.messages if m.role == "tool"]
        assert msg.is_error and "web" in msg.content
    finally:
        server.close()
