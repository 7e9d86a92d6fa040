"""MCP call overhead: a trivial tool over stdio, against the agent's own per-step overhead.

Run: ``python benchmarks/mcp_overhead.py`` (``--quick`` for fewer calls).

Starts a one-tool MCP server (the SDK's own server class) as a subprocess and measures:

* a bare ``tools/call`` round trip with the SDK's client, on one event loop (the floor);
* ``MCPServer.call`` from agentnb (the same call bridged onto agentnb's MCP thread);
* one agent step (instant scripted model) whose tool is the MCP tool, and the same step with
  a trivial Python tool: the difference is what MCP adds per step, the Python step is the
  agent's own overhead.

Also the server's start-up time (process start, handshake, ``tools/list``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agentnb import Agent, tool
from agentnb.mcp import MCPServer
from agentnb.testing import ScriptedProvider, call

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench")


@server.tool()
def inc(i: int) -> int:
    """Return i + 1."""
    return i + 1


server.run()
'''


@tool
def inc(i: int) -> int:
    """Return i + 1."""
    return i + 1


async def sdk_floor(script: str, n: int) -> float:
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=sys.executable, args=[script]), cache=None) as client:
        await client.call_tool("inc", {"i": 0})  # warm
        start = time.perf_counter()
        for k in range(n):
            await client.call_tool("inc", {"i": k})
        return (time.perf_counter() - start) / n


async def bridged(server: MCPServer, n: int) -> float:
    await server.call("inc", {"i": 0})
    start = time.perf_counter()
    for k in range(n):
        await server.call("inc", {"i": k})
    return (time.perf_counter() - start) / n


def agent_step(tools: list[object], n: int) -> float:
    model = ScriptedProvider([call("inc", i=k) for k in range(n)] + ["done"])
    agent = Agent(model, tools=tools, max_tool_calls=n)
    start = time.perf_counter()
    result = agent.run("go")
    elapsed = time.perf_counter() - start
    if result.tool_calls != n or any(m.role == "tool" and m.is_error for m in result.messages):
        raise SystemExit(f"unexpected result: {result.stop_reason}, {result.error}")
    return elapsed / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", default=os.environ.get("AGENTNB_BENCH_QUICK") == "1", help="fewer calls"
    )
    args = parser.parse_args()
    n, reps = (50, 2) if args.quick else (200, 3)
    with tempfile.TemporaryDirectory() as tmp:
        script = str(Path(tmp) / "bench_server.py")
        Path(script).write_text(SERVER)
        server = MCPServer.stdio(sys.executable, script, name="bench")
        start = time.perf_counter()
        server.start()
        startup = time.perf_counter() - start
        try:
            rows = {
                "SDK client, tools/call round trip (floor)": [asyncio.run(sdk_floor(script, n)) for _ in range(reps)],
                "MCPServer.call (bridged to the MCP thread)": [asyncio.run(bridged(server, n)) for _ in range(reps)],
                "agent step, MCP tool": [agent_step([server], n) for _ in range(reps)],
                "agent step, Python tool": [agent_step([inc], n) for _ in range(reps)],
            }
        finally:
            server.close()
    print(f"MCP server start-up (process, handshake, tools/list): {startup * 1000:.0f} ms")
    print(f"{'per call / step, ' + str(n) + ' calls, median of ' + str(reps):<48} {'us':>10}")
    med = {k: statistics.median(v) * 1e6 for k, v in rows.items()}
    for name, us in med.items():
        print(f"{name:<48} {us:>10.0f}")
    added = med["agent step, MCP tool"] - med["agent step, Python tool"]
    print(
        f"MCP adds {added:.0f} us per step; the agent's own step is {med['agent step, Python tool']:.0f} us "
        f"({med['agent step, Python tool'] / med['agent step, MCP tool']:.0%} of an MCP step)"
    )


if __name__ == "__main__":
    main()
