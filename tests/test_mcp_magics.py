"""``%agent --mcp`` and ``%agent_config --mcp``: MCP servers from the magics, in-process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("IPython")

from test_magics import ip, magics, offered, scripted  # noqa: F401 - the shell fixture
from test_mcp import no_orphans  # noqa: F401 - no server process outlives a test

from agentnb.events import ToolStarted
from agentnb.notebook.magics.options import MagicOptions, parse_line
from agentnb.testing import call

DEMO = str(Path(__file__).parent / "mcp" / "demo_server.py")
pytestmark = pytest.mark.timeout(120)


def test_parse_mcp_is_repeatable() -> None:
    opts, prompt = parse_line('--mcp "python a.py --x 1" --mcp http://127.0.0.1:8000/mcp hi')
    assert opts.mcp == ("python a.py --x 1", "http://127.0.0.1:8000/mcp") and prompt == "hi"


def test_agent_mcp_runs_the_servers_tools_and_reuses_the_server(ip: Any, capsys: Any) -> None:  # noqa: F811 - ip is the imported fixture
    model = scripted(ip, call("echo", text="hey"), "Echoed.", "Again.")
    cmd = f'"{sys.executable} {DEMO}"'
    ip.run_line_magic("agent", f"-p model --mcp {cmd} -t none say hey")
    result = ip.user_ns["_agent_result"]
    assert [m.content for m in result.messages if m.role == "tool"] == ["echo: hey"]
    assert "echo" in offered(model, 0)
    (started,) = [e for e in result.events if isinstance(e, ToolStarted)]
    assert started.source == "mcp:demo_server"
    assert "[mcp:demo_server]" in capsys.readouterr().out  # the text trace names the server
    (server,) = magics(ip)._mcp_servers.values()
    ip.run_line_magic("agent", f"-p model --mcp {cmd} -t none --new again")
    assert list(magics(ip)._mcp_servers.values()) == [server] and server.started
    server.close()


def test_agent_config_mcp_sets_a_default(ip: Any) -> None:  # noqa: F811 - ip is the imported fixture
    model = scripted(ip, "ok")
    ip.run_line_magic("agent_config", f'--mcp "{sys.executable} {DEMO}"')
    assert magics(ip).defaults.mcp == (f"{sys.executable} {DEMO}",)
    ip.run_line_magic("agent", "-p model -q -t none hi")
    assert {"echo", "add", "pid"} <= set(offered(model, 0))
    magics(ip).defaults = MagicOptions()
    for server in magics(ip)._mcp_servers.values():
        server.close()
    magics(ip)._mcp_servers.clear()


def test_a_server_that_cannot_start_is_one_usage_line(ip: Any) -> None:  # noqa: F811 - ip is the imported fixture
    from IPython.core.error import UsageError

    scripted(ip, "ok")
    with pytest.raises(UsageError, match="failed to start"):
        ip.run_line_magic("agent", '-p model -q --mcp "/nonexistent/server --x" hi')
    magics(ip)._mcp_servers.clear()
