"""MCP servers: named after what they run, and followed when their tools change (issue 26 item 9).

The change tests run a real server process (tests/mcp/changing_server.py, on the SDK's own
server class) whose ``unlock`` tool adds a tool and ``lock`` removes it, each announced with
``notifications/tools/list_changed``: on a ``subscriptions/listen`` stream (2026-07-28
protocol) and on the session (the earlier protocol, as most published servers speak it).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from agentnb import Agent
from agentnb.events import ModelRequest, ToolFinished
from agentnb.mcp import MCPServer
from agentnb.mcp import runtime as mcp_runtime
from agentnb.testing import ScriptedProvider, call

HERE = Path(__file__).parent / "mcp"
CHANGING = str(HERE / "changing_server.py")
DEMO = str(HERE / "demo_server.py")
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (("npx", "-y", "@modelcontextprotocol/server-everything", "stdio"), "server-everything"),
        (("npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"), "server-filesystem"),
        (("npx @modelcontextprotocol/server-memory",), "server-memory"),
        (("uvx", "mcp-server-fetch"), "mcp-server-fetch"),
        (("uvx", "--from", "git+https://example.org/x.git", "mcp-server-git", "--repository", "."), "mcp-server-git"),
        (("python", "-m", "mcp_server_time", "--local-timezone", "UTC"), "mcp_server_time"),
        (("python", DEMO, "stdio"), "demo_server"),
        (("node", "/opt/servers/github/dist/index.js"), "github"),
        (("docker", "run", "-i", "--rm", "-e", "TOKEN", "mcp/github:latest"), "github"),
        (("mcp-server-sqlite", "--db-path", "/tmp/x.db"), "mcp-server-sqlite"),
        (("sh", "-c", "exec env A=1 python -u /srv/weather.py stdio"), "weather"),
        (("bash", "/opt/start-notes.sh"), "start-notes"),
        (("C:\\Python312\\python.exe", "C:\\servers\\files.py"), "files"),
        (("npx", "@playwright/mcp@latest"), "playwright"),  # a generic package name: its scope
        (("uv", "run", "--with", "mcp", "mcp", "run", "/srv/notes.py"), "notes"),  # a runner run by a runner
        (("cmd", "/c", "npx", "-y", "@modelcontextprotocol/server-memory"), "server-memory"),
        (("python", "-m", "billing.server"), "billing"),  # the module's last part that says something
        (("python", "-m", "tools.mcp.weather_server"), "weather_server"),
        (("java", "-Xmx1g", "-jar", "build/libs/weather-mcp.jar"), "weather-mcp"),
    ],
)
def test_a_stdio_server_is_named_after_its_package_or_command(argv: tuple[str, ...], name: str) -> None:
    server = MCPServer.stdio(*argv)  # nothing starts until the tools are needed
    assert server.name == name and not server.started
    assert repr(server) == f"MCPServer.stdio({name!r})"


def test_an_explicit_name_wins() -> None:
    assert (
        MCPServer.stdio("npx", "-y", "@modelcontextprotocol/server-everything", "stdio", name="every").name == "every"
    )


def test_the_mcp_runtime_does_not_import_the_server_module() -> None:
    tree = ast.parse((ROOT / "agentnb" / "mcp" / "runtime.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("agentnb")}, imported


@pytest.fixture
def changing(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    server = MCPServer.stdio(sys.executable, CHANGING, timeout=20)
    server._mode = request.param  # "auto": 2026-07-28, listen stream; "legacy": on the session
    try:
        yield server
    finally:
        server.close()
        mcp_runtime.close_all()


def offered(result) -> list[tuple[str, ...]]:  # type: ignore[no-untyped-def]
    return [e.tools for e in result.events if isinstance(e, ModelRequest)]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("changing", ["auto", "legacy"], indirect=True)
def test_an_agent_follows_a_server_whose_tools_change(changing: MCPServer) -> None:
    agent = Agent(ScriptedProvider([call("unlock"), call("secret", word="x"), "done"]), tools=[changing])
    assert sorted(agent.tools) == ["lock", "unlock"] and changing.name == "changing_server"
    result = agent.run("go")
    assert result.stop_reason == "answer", result.error
    # The step after unlock offered the new tool, and the model's call to it ran.
    assert offered(result)[0] == ("unlock", "lock") and "secret" in offered(result)[1]
    finished = [e for e in result.events if isinstance(e, ToolFinished)]
    assert [(e.name, e.error) for e in finished] == [("unlock", None), ("secret", None)]
    assert finished[1].result == "the secret of x is 42"
    assert changing.tools_version >= 1 and "secret" in agent.tools

    # lock removes it again: the next step (and the next run) no longer offers it.
    agent.provider = ScriptedProvider([call("lock"), "locked", "hello"])
    locked = agent.run("lock it")
    assert "secret" in offered(locked)[0] and "secret" not in offered(locked)[1]
    later = agent.run("hi")
    assert "secret" not in offered(later)[0] and sorted(agent.tools) == ["lock", "unlock"]


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("changing", ["auto"], indirect=True)
def test_the_listing_follows_without_an_agent(changing: MCPServer) -> None:
    import asyncio

    assert [t.name for t in changing.tools()] == ["unlock", "lock"]
    assert asyncio.run(changing.call("unlock", {})) == "unlocked"
    assert [t.name for t in changing.tools()] == ["unlock", "lock", "secret"]
