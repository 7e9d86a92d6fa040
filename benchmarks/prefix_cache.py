"""Seconds per agent step at depths 1..10, with and without prefix KV-cache reuse (SmolLM2-135M).

Each step re-sends the growing conversation (system prompt with the tool catalogue, then every
earlier call and result), as the agent loop does. With reuse only the new tokens are computed;
without it the whole prompt is. Both runs must produce identical replies (checked).

    .venv/bin/python benchmarks/prefix_cache.py [--depths 10] [--max-new-tokens 24]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agentnb.messages import AssistantMessage, Message, ToolCall, ToolMessage, UserMessage
from agentnb.providers.base import Completion, Request
from agentnb.providers.untooled import UnTooled
from agentnb.tools import tool


@tool(examples=[("How warm is it in Madrid?", {"city": "Madrid"})])
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Current weather for a city.

    Args:
        city: the city name
        unit: temperature unit
    """
    return f"Sunny, 21 degrees {unit} in {city}"


@tool
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Tokyo", "Quito", "Perth", "Dakar", "Hanoi", "Bern"]


def conversation(depth: int) -> list[Message]:
    """The transcript the model sees at ``depth`` (1 = the first step): d-1 calls and results."""
    messages: list[Message] = [UserMessage("Give me the weather in each of these cities: " + ", ".join(CITIES))]
    for i in range(depth - 1):
        call = ToolCall(f"call_{i}", "get_weather", {"city": CITIES[i]})
        messages += [AssistantMessage(None, (call,)), ToolMessage(call.id, call.name, str(get_weather(CITIES[i])))]
    return messages


def step(layer: UnTooled, depth: int) -> tuple[float, float, str, int]:
    """One step: (seconds, seconds to the first token, reply, prompt tokens)."""
    request = Request(conversation(depth), [get_weather, add], "required")
    inner = layer.inner_request(request)

    async def go() -> tuple[float, float, Completion]:
        start = time.perf_counter()
        first = None
        async for item in layer.inner.stream(inner):
            first = first or time.perf_counter()
            if isinstance(item, Completion):
                return time.perf_counter() - start, first - start, item
        raise RuntimeError("no completion")

    seconds, ttft, completion = asyncio.run(go())
    return seconds, ttft, completion.text or "", completion.usage.input_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depths", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("AGENTNB_BENCH_QUICK") == "1",
        help="a smoke run in seconds (also AGENTNB_BENCH_QUICK=1): depths 1-2, 4 new tokens",
    )
    args = parser.parse_args()
    if args.quick:
        args.depths, args.max_new_tokens = 2, 4

    from agentnb.providers.hf import local_provider

    local_provider()
    reuse = UnTooled(local_provider(prefix_cache=True, max_new_tokens=args.max_new_tokens))
    fresh = UnTooled(local_provider(prefix_cache=False, max_new_tokens=args.max_new_tokens))
    step(fresh, 1)  # warm-up: grammar compilation, first-call allocations
    step(reuse, 10)  # ... and a cache that holds another conversation
    print("median of 3; step = whole reply (prefill + ~20 decoded tokens), first = time to the first token")
    print(
        "depth  prompt tokens  step: no reuse (s)  reuse (s)  speed-up   first: no reuse (s)  reuse (s)  speed-up  same reply"
    )
    same_all = True
    for d in range(1, args.depths + 1):
        runs0, runs1 = [], []
        for _ in range(3):
            # interleaved, so both see the same machine load (other processes share the CPUs);
            # the cache is first brought to where a run would have it: the previous step
            runs0.append(step(fresh, d))
            if d > 1:
                step(reuse, d - 1)
            runs1.append(step(reuse, d))
        t0, f0 = statistics.median(r[0] for r in runs0), statistics.median(r[1] for r in runs0)
        t1, f1 = statistics.median(r[0] for r in runs1), statistics.median(r[1] for r in runs1)
        same = {r[2] for r in runs0} == {r[2] for r in runs1} and len({r[2] for r in runs0}) == 1
        same_all &= same
        n = runs0[0][3]
        print(
            f"{d:5d}  {n:13d}  {t0:18.2f}  {t1:9.2f}  {t0 / t1:7.1f}x  {f0:19.2f}  {f1:9.2f}  {f0 / f1:7.1f}x  {same}"
        )
    print(
        f"identical replies at every depth: {same_all}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


if __name__ == "__main__":
    main()
