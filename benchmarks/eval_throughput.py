"""Client CPU per model call when many runs go through one server: ``evaluate`` against baselines.

Run: ``python benchmarks/eval_throughput.py`` (``--quick`` or ``AGENTNB_BENCH_QUICK=1``: a smoke run
in seconds, concurrency 1 and 10 with a few runs each;
``--levels 100``: one level; ``--ray``: add ``executor="ray"`` with 2 workers at C=100;
``--memory 10000``: resident memory over 10,000 cases with a log, nothing else; ``--repeat K``:
every level and driver K times, interleaved, and the medians). The table ends with each driver's
CPU per call and wall time against the floor's (``raw-aiohttp``) at the same level, and every row
carries the load average when it ended.

The server (a separate process, standard library asyncio, HTTP/1.1 keep-alive) speaks
``POST /v1/chat/completions``: while the conversation holds fewer than 2 tool results it asks
for ``add(a=1, b=2)``, then answers "done"; every reply waits ``--delay`` (100 ms) and carries
usage. One run is therefore 3 model calls; the ideal wall time is N / C × 3 × delay.
Each driver runs in its own fresh process, which reports its CPU seconds (user + system) and
wall time for the N runs and checks that every run ended "done"; the server counts requests.

Drivers, in the same run against the same server:
- ``evaluate``: ``agentnb.evaluate(agent, N cases, concurrency=C)`` (OpenAIProvider, one tool).
  With aiohttp installed (the ``openai`` extra) the SDK's requests go over aiohttp connections
  (``agentnb.providers.aiohttp_transport``); the non-streamed body is read as JSON by agentnb.
- ``evaluate-processes``: ``executor="processes"``, 2 forked workers; its CPU is the driver's plus
  the workers'.
- ``NAME+uvloop`` (e.g. ``evaluate+uvloop``): driver NAME on uvloop's event loop.
- ``evaluate+httpx``: the same on the SDK's default HTTP pool (``http_client=openai.DefaultAsyncHttpxClient()``).
- ``arun+gather``: ``Agent.arun`` for each case, ``asyncio.gather`` under a semaphore.
- ``openai-sdk``: the plain ``openai.AsyncOpenAI`` client in a hand-written 3-call loop.
- ``raw-aiohttp``: the same loop on bare aiohttp (one session, json by hand), the issue's floor.
- ``raw-asyncio``: the same loop on bare asyncio streams (json + HTTP/1.1 by hand, a connection
  per worker): the floor under any client.
- ``evaluate-ray`` (``--ray``): ``executor="ray"``, 2 workers (a local Ray on 127.0.0.1); its client
  CPU is the driver's plus that of every process Ray started (raylet, GCS, the workers).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DELAY = 0.1

# -- the server ---------------------------------------------------------------------------


def _reply(body: dict[str, Any], n: int) -> dict[str, Any]:
    tools_seen = sum(1 for m in body.get("messages", []) if m.get("role") == "tool")
    if tools_seen < 2:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{n}", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
            ],
        }
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": "done"}, "stop"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "m"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }


async def _serve(port_file: str, delay: float) -> None:
    count = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = 0
                for line in lines[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                body = json.loads(await reader.readexactly(length)) if length else {}
                if path.endswith("/stats"):
                    usage = resource.getrusage(resource.RUSAGE_SELF)
                    payload = {"requests": count, "cpu": usage.ru_utime + usage.ru_stime}
                else:
                    count += 1
                    await asyncio.sleep(delay)
                    payload = _reply(body, count)
                data = json.dumps(payload).encode()
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                    + str(len(data)).encode()
                    + b"\r\n\r\n"
                    + data
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
    port = server.sockets[0].getsockname()[1]
    with open(port_file + ".tmp", "w") as f:
        f.write(str(port))
    os.replace(port_file + ".tmp", port_file)
    async with server:
        await server.serve_forever()


# -- the drivers (each runs in its own process) -----------------------------------------------


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _agent(url: str, http: str = "default") -> Any:
    from agentnb import Agent, tool
    from agentnb.providers import OpenAIProvider

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    options: dict[str, Any] = {}
    if http == "httpx":  # the SDK's default pool, not agentnb's aiohttp transport; one loop only
        import openai

        options["http_client"] = openai.DefaultAsyncHttpxClient()
    return Agent(OpenAIProvider("m", base_url=url, api_key="x", **options), tools=[add])


_AGENTS: dict[str, Any] = {}


async def drive_evaluate(url: str, n: int, c: int, executor: str = "local", http: str = "default") -> list[str]:
    from agentnb import aevaluate

    extra = {"ray_workers": 2} if executor == "ray" else {"workers": 2} if executor == "processes" else {}
    if http not in _AGENTS:  # one agent (one HTTP client) for the warm-up and the measured runs
        _AGENTS[http] = _agent(url, http)
    ev = await aevaluate(
        _AGENTS[http],
        [f"add 1 and 2 (case {i})" for i in range(n)],
        concurrency=c,
        progress=False,
        executor=executor,
        **extra,
    )
    return [r["output"] for r in ev.rows]


async def drive_arun(url: str, n: int, c: int) -> list[str]:
    agent = _agent(url)
    sem = asyncio.Semaphore(c)

    async def one(i: int) -> str:
        async with sem:
            return (await agent.arun(f"add 1 and 2 (case {i})")).output

    return list(await asyncio.gather(*(one(i) for i in range(n))))


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        },
    }
]


async def drive_sdk(url: str, n: int, c: int) -> list[str]:
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0)
    sem = asyncio.Semaphore(c)

    async def one(i: int) -> str:
        async with sem:
            messages: list[Any] = [{"role": "user", "content": f"add 1 and 2 (case {i})"}]
            while True:
                r = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
                msg = r.choices[0].message
                if not msg.tool_calls:
                    return msg.content or ""
                messages.append(msg.model_dump(exclude_none=True))
                for call in msg.tool_calls:
                    args = json.loads(call.function.arguments)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": str(args["a"] + args["b"])})

    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def drive_raw(url: str, n: int, c: int) -> list[str]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    queue = list(range(n))
    out: list[str] = []

    async def post(reader: Any, writer: Any, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(data)).encode()
            + b"\r\n\r\n"
            + data
        )
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
        return json.loads(await reader.readexactly(length))  # type: ignore[no-any-return]

    async def worker() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        while queue:
            i = queue.pop()
            messages: list[Any] = [{"role": "user", "content": f"add 1 and 2 (case {i})"}]
            while True:
                msg = (await post(reader, writer, {"model": "m", "messages": messages, "tools": TOOLS}))["choices"][0][
                    "message"
                ]
                if not msg.get("tool_calls"):
                    out.append(msg["content"])
                    break
                messages.append(msg)
                for call in msg["tool_calls"]:
                    args = json.loads(call["function"]["arguments"])
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(args["a"] + args["b"])})
        writer.close()

    await asyncio.gather(*(worker() for _ in range(min(c, n))))
    return out


async def drive_aiohttp(url: str, n: int, c: int) -> list[str]:
    """The same loop on bare aiohttp (one session, ``limit=C``, json by hand): the issue's floor."""
    import aiohttp

    sem = asyncio.Semaphore(c)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c)) as session:

        async def one(i: int) -> str:
            async with sem:
                messages: list[Any] = [{"role": "user", "content": f"add 1 and 2 (case {i})"}]
                while True:
                    body = json.dumps({"model": "m", "messages": messages, "tools": TOOLS})
                    async with session.post(
                        url + "/chat/completions", data=body, headers={"content-type": "application/json"}
                    ) as r:
                        msg = json.loads(await r.read())["choices"][0]["message"]
                    if not msg.get("tool_calls"):
                        return str(msg["content"])
                    messages.append(msg)
                    for call in msg["tool_calls"]:
                        args = json.loads(call["function"]["arguments"])
                        messages.append(
                            {"role": "tool", "tool_call_id": call["id"], "content": str(args["a"] + args["b"])}
                        )

        return list(await asyncio.gather(*(one(i) for i in range(n))))


async def drive_pydantic_evals(url: str, n: int, c: int) -> list[str]:
    """pydantic-ai's agent under pydantic_evals' ``Dataset.evaluate`` (a peer; its own venv)."""
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider as PydanticOpenAI
    from pydantic_evals import Case, Dataset

    agent = PydanticAgent(OpenAIChatModel("m", provider=PydanticOpenAI(base_url=url, api_key="x")))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def task(prompt: str) -> str:
        return (await agent.run(prompt)).output

    dataset = Dataset(name="bench", cases=[Case(name=f"c{i}", inputs=f"add 1 and 2 (case {i})") for i in range(n)])
    report = await dataset.evaluate(task, max_concurrency=c, progress=False)
    return [case.output for case in report.cases]


async def drive_langgraph(url: str, n: int, c: int) -> list[str]:
    """LangGraph's prebuilt ReAct agent, ``abatch(max_concurrency=C)`` (a peer; its own venv)."""
    import warnings

    from langchain_core.tools import tool as lc_tool
    from langchain_openai import ChatOpenAI

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    @lc_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    graph = create_react_agent(ChatOpenAI(model="m", base_url=url, api_key="x", max_retries=0), [add])
    inputs = [{"messages": [("user", f"add 1 and 2 (case {i})")]} for i in range(n)]
    results = await graph.abatch(inputs, config={"max_concurrency": c})
    return [r["messages"][-1].content for r in results]


PEERS = {"pydantic-evals": drive_pydantic_evals, "langgraph": drive_langgraph}


async def drive_evaluate_httpx(url: str, n: int, c: int) -> list[str]:
    return await drive_evaluate(url, n, c, http="httpx")


async def drive_evaluate_processes(url: str, n: int, c: int) -> list[str]:
    return await drive_evaluate(url, n, c, executor="processes")


DRIVERS = {
    "evaluate": drive_evaluate,
    "evaluate+httpx": drive_evaluate_httpx,
    "evaluate-processes": drive_evaluate_processes,
    "arun+gather": drive_arun,
    "openai-sdk": drive_sdk,
    "raw-aiohttp": drive_aiohttp,
    "raw-asyncio": drive_raw,
}


def child(driver: str, url: str, n: int, c: int) -> None:
    """In a fresh process: import, warm up with one run, then time N runs; print JSON.
    A driver named ``NAME+uvloop`` runs NAME on uvloop's event loop."""
    uv = driver.endswith("+uvloop")
    driver = driver.removesuffix("+uvloop")
    if driver == "evaluate-ray":
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")

        def fn(u: str, k: int, cc: int) -> Any:
            return drive_evaluate(u, k, cc, executor="ray")
    else:
        fn = DRIVERS.get(driver) or PEERS[driver]

    async def measured() -> tuple[list[str], float, float, float]:
        await fn(url, 1, 1)  # imports and first connections outside the measurement
        cpu0, t0, tree0, ended0 = _cpu(), time.perf_counter(), _descendants_cpu(), _ended_children_cpu()
        outputs = await fn(url, n, c)
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        return outputs, wall, cpu, _descendants_cpu(tree0) + _ended_children_cpu() - ended0

    if uv:
        import uvloop

        outputs, wall, cpu, others = uvloop.run(measured())
    else:
        outputs, wall, cpu, others = asyncio.run(measured())
    if driver == "evaluate-ray":
        import ray

        ray.shutdown()
    ok = sum(1 for o in outputs if o == "done")
    print(json.dumps({"wall": wall, "cpu": cpu, "others": others, "ok": ok, "n": n}))


def _ended_children_cpu() -> float:
    """CPU seconds of this process's children that have ended (evaluate's worker processes)."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def _descendants_cpu(before: dict[int, float] | None = None) -> Any:
    """CPU seconds of this process's descendants (Ray's raylet, GCS and workers): a snapshot
    by pid, or, given an earlier snapshot, the seconds spent since (new processes from zero)."""
    try:
        import psutil
    except ImportError:  # a peer's venv: its drivers start no processes
        return {} if before is None else 0.0
    now: dict[int, float] = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            t = proc.cpu_times()
            now[proc.pid] = t.user + t.system
        except psutil.Error:
            pass
    if before is None:
        return now
    return sum(v - before.get(pid, 0.0) for pid, v in now.items())


def memory(n: int) -> None:
    """Resident memory of ``evaluate`` over ``n`` cases with a log (instant scripted model, one tool call each)."""
    import tempfile

    import psutil

    from agentnb import Agent, evaluate, tool
    from agentnb.testing import FunctionProvider, call

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def model(messages: Any, tools: Any) -> Any:
        if messages[-1].role == "user":
            return call("add", a=1, b=2)
        return "The sum is 3. " + "Some words of explanation. " * 8

    agent = Agent(FunctionProvider(model), tools=[add])
    cases = [{"input": f"case {i}: add 1 and 2", "expected": "3", "group": i % 7} for i in range(n)]
    evaluate(agent, cases[:50], concurrency=50, progress=False)  # warm up: imports, caches
    proc = psutil.Process()
    before = proc.memory_info().rss
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "runs.jsonl")
        t0 = time.perf_counter()
        ev = evaluate(agent, cases, scorers=["contains"], concurrency=100, log=log, progress=False)
        wall = time.perf_counter() - t0
        after = proc.memory_info().rss
        size = os.path.getsize(log)
    print(
        f"{n} cases with a log ({size / 1e6:.1f} MB on disk): resident memory {before / 1e6:.0f} -> {after / 1e6:.0f} MB "
        f"(+{(after - before) / 1e6:.0f} MB; target <= 200 MB), {len(ev.rows)} rows, {wall:.1f} s"
    )


# -- the harness -----------------------------------------------------------------------------


def _stats(url: str) -> dict[str, Any]:
    import urllib.request

    req = urllib.request.Request(url.removesuffix("/v1") + "/stats", data=b"{}", method="POST")
    return json.load(urllib.request.urlopen(req))  # type: ignore[no-any-return]


def _measure(args: Any, url: str, d: str, n: int, c: int) -> tuple[float, float] | None:
    """One driver at one level, in its own process: prints its row; (CPU ms per call, wall s)."""
    before = _stats(url)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.environ.get("PYTHONPATH", "")]
        ),
    }
    python = args.peers_python if d in PEERS else sys.executable
    out = subprocess.run([python, __file__, "--child", d, url, str(n), str(c)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        why = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode
        print(f"{c:>5} {n:>5} {d:<18} failed: {why}")
        return None
    r = json.loads(out.stdout.strip().splitlines()[-1])
    after = _stats(url)
    calls = after["requests"] - before["requests"] - 3  # minus the warm-up run
    ideal = n / c * 3 * args.delay if n >= c else 3 * args.delay
    ok = r["ok"] == n and calls == 3 * n
    flag = "" if ok else f"  (!) {r['ok']}/{n} done, {calls} calls"
    cpu = r["cpu"] + r.get("others", 0.0)  # the driver and every process it started (Ray's, workers)
    if r.get("others"):
        flag += f"  (driver {r['cpu']:.2f} s + its other processes {r['others']:.2f} s)"
    per_call = cpu / (3 * n) * 1000
    print(
        f"{c:>5} {n:>5} {d:<18} {r['wall']:>7.2f} {ideal:>7.2f} {r['wall'] / ideal:>7.2f} {cpu:>12.2f}"
        f" {per_call:>11.3f} {after['cpu'] - before['cpu']:>12.2f} {os.getloadavg()[0]:>5.1f}{flag}",
        flush=True,
    )
    return (per_call, r["wall"]) if ok else None


def _ratios(results: dict[tuple[int, str], list[tuple[float, float]]], levels: list[int]) -> None:
    """Each driver's median CPU per call and wall against the floor's (raw-aiohttp) at its level."""
    import statistics

    print("\nagainst the floor (raw-aiohttp) at the same level, medians of the repetitions:")
    print(f"{'C':>5} {'driver':<18} {'CPU/call ms':>11} {'x floor CPU':>11} {'wall s':>7} {'x floor wall':>12}")
    for c in levels:
        floor = results.get((c, "raw-aiohttp"))
        if not floor:
            continue
        f_cpu, f_wall = statistics.median(x[0] for x in floor), statistics.median(x[1] for x in floor)
        for (level, d), got in results.items():
            if level != c:
                continue
            cpu, wall = statistics.median(x[0] for x in got), statistics.median(x[1] for x in got)
            print(f"{c:>5} {d:<18} {cpu:>11.3f} {cpu / f_cpu:>11.2f} {wall:>7.2f} {wall / f_wall:>12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", default=os.environ.get("AGENTNB_BENCH_QUICK") == "1")
    parser.add_argument("--levels", default=None, help="comma-separated concurrency levels")
    parser.add_argument("--drivers", default=",".join(DRIVERS))
    parser.add_argument("--ray", action="store_true", help="add executor='ray' (2 workers) at C=100")
    parser.add_argument(
        "--peers-python",
        metavar="PYTHON",
        help="a Python with pydantic-ai-slim[openai]==2.62.0, pydantic-evals==2.62.0, langgraph==1.2.24 and "
        "langchain-openai==1.8.1 installed (its own venv): adds those peers at every level",
    )
    parser.add_argument("--delay", type=float, default=DELAY)
    parser.add_argument("--repeat", type=int, default=1, help="run every level and driver this many times (medians)")
    parser.add_argument("--memory", type=int, metavar="N", help="only measure resident memory over N cases with a log")
    parser.add_argument("--child", nargs=4, metavar=("DRIVER", "URL", "N", "C"), help=argparse.SUPPRESS)
    parser.add_argument("--serve", metavar="PORT_FILE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve, args.delay))
        return
    if args.memory:
        memory(args.memory)
        return
    if args.child:
        d, url, n, c = args.child
        child(d, url, int(n), int(c))
        return
    levels = (
        [int(x) for x in args.levels.split(",")] if args.levels else ([1, 10] if args.quick else [1, 10, 100, 1000])
    )
    runs = {1: 3 if args.quick else 20, 10: 20 if args.quick else 200, 100: 1000, 1000: 3000}
    port_file = f"/tmp/agentnb-bench-{os.getpid()}.port"
    server = subprocess.Popen([sys.executable, __file__, "--serve", port_file, "--delay", str(args.delay)])
    try:
        while not os.path.exists(port_file):
            time.sleep(0.05)
        url = f"http://127.0.0.1:{Path(port_file).read_text()}/v1"
        print(
            f"server {url}, every reply after {args.delay * 1000:.0f} ms; 3 model calls per run; {os.cpu_count()} CPUs"
        )
        print(f"load average at start: {os.getloadavg()[0]:.1f}\n")
        head = f"{'C':>5} {'N':>5} {'driver':<18} {'wall s':>7} {'ideal s':>7} {'x ideal':>7} {'client CPU s':>12} {'CPU/call ms':>11} {'server CPU s':>12} {'load':>5}"
        print(head)
        print("-" * len(head))
        drivers = args.drivers.split(",") + (list(PEERS) if args.peers_python else [])
        plan = [(c, d) for _ in range(args.repeat) for c in levels for d in drivers]
        if args.ray:
            plan.append((100, "evaluate-ray"))
        results: dict[tuple[int, str], list[tuple[float, float]]] = {}
        for c, d in plan:
            n = runs.get(c, 10 * c)
            got = _measure(args, url, d, n, c)
            if got is not None:
                results.setdefault((c, d), []).append(got)
        _ratios(results, levels)
        print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    finally:
        server.kill()
        server.wait()
        if os.path.exists(port_file):
            os.remove(port_file)


if __name__ == "__main__":
    main()
