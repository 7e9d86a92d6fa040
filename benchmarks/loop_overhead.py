"""Loop overhead: microseconds per tool-call step with an instant model and a trivial tool.

Run: ``python benchmarks/loop_overhead.py`` (add ``--quick`` for fewer repetitions).

Each step is one model call answered instantly by a scripted model with one tool call, plus
the loop's work around it: seven typed events, full schema validation (a compiled
fastjsonschema check, jsonschema for the error messages), the sha256 dedup fingerprint, tool
execution, messages. The floor is a bare hand-written async loop doing the same model/tool calls with
none of that. Also prints ``import agentnb`` time (fresh interpreter, best of 5), and the cost of
OpenTelemetry spans at N=100: plain, to a no-op tracer (agentnb's own part), through the SDK with a
BatchSpanProcessor, and the same spans made bare with the SDK (its own cost, the floor).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

from agentnb import Agent, tool
from agentnb.testing import ScriptedProvider, call


@tool
def inc(i: int) -> int:
    """Return i + 1."""
    return i + 1


@tool
async def ainc(i: int) -> int:
    """Return i + 1 (async)."""
    return i + 1


def script(name: str, n: int) -> list[object]:
    # Distinct arguments, so the deduplicator lets every call run.
    return [call(name, i=k) for k in range(n)] + ["done"]


#: CPU seconds of the last timed run (on a shared machine wall time also counts waiting).
last_cpu = 0.0


#: ``Agent(instrument=...)`` for the traced cases (an OpenTelemetry SDK SpanWatcher).
traced: object = None


async def agent_run(name: str, n: int) -> float:
    global last_cpu
    agent = Agent(ScriptedProvider(script(name, n)), tools=[inc, ainc], max_tool_calls=n, instrument=traced)
    cpu = time.process_time()
    start = time.perf_counter()
    result = await agent.arun("go")
    elapsed = time.perf_counter() - start
    last_cpu = time.process_time() - cpu
    if result.tool_calls != n or result.stop_reason not in ("limit", "answer"):
        raise SystemExit(f"unexpected result: {result!r}")
    return elapsed


async def bare_run(n: int) -> float:
    """The floor: the same instant model and tool, no events, validation or bookkeeping."""
    replies = [("inc", {"i": k}) for k in range(n)] + [("", None)]

    async def model(messages: list[dict[str, object]]) -> tuple[str, dict[str, int] | None]:
        return replies[len(messages) // 2]

    global last_cpu
    cpu = time.process_time()
    start = time.perf_counter()
    messages: list[dict[str, object]] = [{"role": "user", "content": "go"}]
    while True:
        name, args = await model(messages)
        if args is None:
            break
        messages.append({"role": "assistant", "call": (name, args)})
        messages.append({"role": "tool", "content": str(inc.fn(**args))})
    elapsed = time.perf_counter() - start
    last_cpu = time.process_time() - cpu
    return elapsed


def measure(fn, n: int, reps: int) -> float:  # type: ignore[no-untyped-def]
    """Median microseconds per step over ``reps`` runs (wall clock)."""
    return measure_both(fn, n, reps)[0]


def measure_both(fn, n: int, reps: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median microseconds per step over ``reps`` runs: wall clock, and CPU time of this process."""
    times, cpus = [], []
    for _ in range(reps):
        times.append(asyncio.run(fn(n)))
        cpus.append(last_cpu)
    return statistics.median(times) / n * 1e6, statistics.median(cpus) / n * 1e6


def bare_spans(provider: object, n: int) -> float:
    """The SDK's own cost: the spans an instrumented run of ``n`` steps makes (same names, kinds,
    attributes, parents), made by hand with no run around them. Returns CPU seconds."""
    from time import time_ns

    from opentelemetry import trace
    from opentelemetry.trace import SpanKind

    tracer = trace.get_tracer("bare", tracer_provider=provider)  # type: ignore[arg-type]
    base = {"gen_ai.provider.name": "scripted", "gen_ai.request.model": "scripted"}
    cpu = time.process_time()
    run = tracer.start_span(
        "invoke_agent", kind=SpanKind.INTERNAL, attributes={"gen_ai.operation.name": "invoke_agent", **base}
    )
    ctx = trace.set_span_in_context(run)
    for k in range(n + 1):
        chat = {"gen_ai.operation.name": "chat", **base, "gen_ai.response.model": "scripted"}
        chat["gen_ai.response.finish_reasons"] = ("tool_calls" if k < n else "stop",)
        chat["gen_ai.usage.input_tokens"] = chat["gen_ai.usage.output_tokens"] = 0
        tracer.start_span("chat scripted", ctx, SpanKind.CLIENT, chat, start_time=time_ns()).end()
        if k < n:
            attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "inc"}
            attrs.update({"gen_ai.tool.call.id": f"call_{k}", "gen_ai.tool.type": "function"})
            tracer.start_span("execute_tool inc", ctx, SpanKind.INTERNAL, attrs, start_time=time_ns()).end()
    run.set_attributes(
        {"gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0, "agentnb.stop_reason": "limit"}
    )
    run.end()
    return time.process_time() - cpu


def one_loop(n: int, reps: int) -> tuple[float, float]:
    """Like :func:`measure_both`, but every run on one event loop (the others start a fresh loop
    per run, as ``Agent.run`` does; a fresh loop's cold caches add ~25 us to a run here, with
    the same Python calls made)."""

    async def runs() -> list[tuple[float, float]]:
        out = []
        for _ in range(reps):
            out.append((await agent_run("inc", n), last_cpu))
        return out

    got = asyncio.run(runs())
    return statistics.median(w for w, _ in got) / n * 1e6, statistics.median(c for _, c in got) / n * 1e6


def tracing_rows(reps: int) -> list[tuple[str, float, float]]:
    """Plain vs OpenTelemetry-instrumented runs at N=100 (SDK, BatchSpanProcessor, an exporter
    that drops the spans), measured in alternation so load on the machine hits both alike; and
    the same spans made bare (no run), which is what the SDK alone costs."""
    global traced
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
    except ImportError:
        return []

    class Drop(SpanExporter):
        def export(self, spans):  # type: ignore[no-untyped-def]
            return SpanExportResult.SUCCESS

    from opentelemetry.trace import NoOpTracerProvider

    from agentnb.tracing.otel import SpanWatcher

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    cases = {"plain": None, "api": SpanWatcher(NoOpTracerProvider()), "sdk": SpanWatcher(provider)}
    n = 100
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in [*cases, "bare"]}
    for _ in range(reps):
        for key, watcher in cases.items():
            traced = watcher
            got[key].append(measure_both(lambda k: agent_run("inc", k), n, 1))
        bare = bare_spans(provider, n) / n * 1e6
        got["bare"].append((bare, bare))
    traced = None
    provider.shutdown()
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in got.items()}
    p_cpu, t_cpu, b_cpu = med["plain"][1], med["sdk"][1], med["bare"][1]
    spans = 2 * n + 2  # a chat and a tool span per step, + the last chat + the run
    per_span = (t_cpu - p_cpu) * n / spans
    return [
        (f"agentnb, sync tool, N={n}, plain", *med["plain"]),
        (f"agentnb, sync tool, N={n}, spans to a no-op tracer (agentnb's own cost)", *med["api"]),
        (f"agentnb, sync tool, N={n}, spans via the SDK + BatchSpanProcessor", *med["sdk"]),
        (f"  the same {spans} spans made bare with the SDK, no run (cpu us per step)", b_cpu, b_cpu),
        (f"  ratio SDK-instrumented/plain (target <= 2.0): {t_cpu / p_cpu:.2f}; cpu us per span", per_span, per_span),
        (
            f"  floor (plain + bare SDK spans)/plain: {(p_cpu + b_cpu) / p_cpu:.2f}; bare cpu us per span",
            *(b_cpu * n / spans,) * 2,
        ),
    ]


def import_time() -> float:
    code = "import time; t = time.perf_counter(); import agentnb; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout) for _ in range(5)
    ]
    return min(runs) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", default=os.environ.get("AGENTNB_BENCH_QUICK") == "1", help="fewer repetitions"
    )
    reps = 5 if parser.parse_args().quick else 21
    rows = []
    for name in ("inc", "ainc"):  # warm up: first imports, the compiled validators, caches
        asyncio.run(agent_run(name, 10))
    for n in (10, 100, 1000):
        r = reps if n < 1000 else max(3, reps // 4)
        rows.append((f"agentnb, sync tool, N={n}", *measure_both(lambda k: agent_run("inc", k), n, r)))
        rows.append((f"agentnb, async tool, N={n}", *measure_both(lambda k: agent_run("ainc", k), n, r)))
        rows.append((f"bare Python loop (floor), N={n}", *measure_both(bare_run, n, r)))
        if n == 10:
            rows.append((f"agentnb, sync tool, N={n}, all runs on one event loop", *one_loop(n, r)))
    rows += tracing_rows(reps)
    width = max(len(r[0]) for r in rows)
    print(f"{'case':<{width}}  us/step  cpu us/step")
    for label, us, cpu in rows:
        print(f"{label:<{width}}  {us:7.1f}  {cpu:11.1f}")
    print(f"{'import agentnb (ms, best of 5)':<{width}}  {import_time():7.1f}")
    print("target: <= 20 us/step at N=10 and N=100, flat to N=1000; import < 150 ms; spans <= 2x plain")


if __name__ == "__main__":
    main()
