"""improve's own work, besides the case runs and the reflector's calls, as a share of its wall time.

Run: ``python benchmarks/improve_overhead.py`` (``--quick`` or ``AGENTNB_BENCH_QUICK=1``: a smoke
run in seconds; ``--delay 0.01``: the scripted student's seconds per model request).

The student is a scripted model (``FunctionProvider`` with a fixed ``delay`` per request, like a
fast model server): told "use add" in its system prompt it calls the ``add`` tool, then answers
with the result (2 requests per run); else it answers "0" (1 request). The reflector is scripted
too: it proposes texts in turn, every third one helpful. One case in four expects an answer that
no text can get, so the search spends its whole budget.

1. ``improve``: ``agentnb.improve(agent, 40 cases, test=20 cases, budget=B, concurrency=8)``,
   wall time measured; every ``evaluate`` it makes and every reflection is recorded.
2. The baseline, in the same process right after: the same case runs, batch by batch, each
   batch as ``Agent.arun`` calls under an ``asyncio.Semaphore(8)`` with ``asyncio.gather``, and
   the same reflector requests (``Agent.arun`` with the same prompts), one after another.

Two figures. *Own work* (the issue's target, at most 5%): improve's wall time outside its
``evaluate`` calls and its reflector calls (splitting, Pareto selection, building candidate agents
and the reflector's prompts from traces, the events), timed inside the same run. *Against the
baseline*, stricter: (1) − (2) over (1), which also counts what ``evaluate`` adds to each case
run (its rows, scoring, tasks).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from typing import Any

from agentnb import Agent, improve, tool
from agentnb.improvement import search as search_module
from agentnb.testing import FunctionProvider, call

CONCURRENCY = 8


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def student_fn(messages: Any, tools: Any) -> Any:
    system = messages[0].content if messages[0].role == "system" else ""
    last = messages[-1]
    if last.role == "tool":
        return f"The answer is {last.content}."
    if "use add" in (system or "").lower():
        left, right = last.content.split("What is ")[1].split("?")[0].split("+")
        return call("add", a=int(left), b=int(right))
    return "0"


def reflector(delay: float) -> FunctionProvider:
    texts = ["Be careful", "Think step by step", "Always use add for sums"]
    state = {"n": 0}

    def answer(messages: Any, tools: Any) -> str:
        state["n"] += 1
        return f"```\n{texts[(state['n'] - 1) % len(texts)]} ({state['n']}).\n```"

    return FunctionProvider(answer, name="reflector", delay=delay)


def cases(start: int, n: int) -> list[dict[str, str]]:
    """Sums; one case in four expects an answer no text can get, so the search goes on to its budget."""
    return [
        {"input": f"What is {i}+{i + 1}?", "expected": str(2 * i + 1) if i % 4 != 3 else "never"}
        for i in range(start, start + n)
    ]


def measure(delay: float, budget: int, n_train: int, n_test: int) -> dict[str, float]:
    batches: list[tuple[dict[str, Any], list[Any]]] = []
    inside = {"evaluate": 0.0, "reflect": 0.0}
    evaluate, propose = search_module.Search._evaluate, search_module.propose

    async def timed_evaluate(self: Any, agents: dict[str, Any], todo: list[Any], *rest: Any) -> Any:
        batches.append((dict(agents), list(todo)))
        start = time.perf_counter()
        try:
            return await evaluate(self, agents, todo, *rest)
        finally:
            inside["evaluate"] += time.perf_counter() - start

    async def timed_propose(*args: Any) -> Any:
        start = time.perf_counter()
        try:
            return await propose(*args)
        finally:
            inside["reflect"] += time.perf_counter() - start

    search_module.Search._evaluate = timed_evaluate  # type: ignore[method-assign]
    search_module.propose = timed_propose  # type: ignore[assignment]
    try:
        agent = Agent(FunctionProvider(student_fn, delay=delay), tools=[add], system="Answer.")
        start = time.perf_counter()
        imp = improve(
            agent, cases(0, n_train), ["contains"], reflector=reflector(delay), test=cases(1000, n_test),
            budget=budget, concurrency=CONCURRENCY, progress=False,
        )  # fmt: skip
        wall = time.perf_counter() - start
    finally:
        search_module.Search._evaluate = evaluate  # type: ignore[method-assign]
        search_module.propose = propose  # type: ignore[assignment]
    prompts = [r["prompt"] for r in imp.reflections]
    base = asyncio.run(_baseline(batches, prompts, delay))
    return {
        "wall": wall,
        "base": base,
        "own": wall - inside["evaluate"] - inside["reflect"],
        "runs": imp.spent,
        "reflections": len(prompts),
    }


async def _baseline(batches: list[tuple[dict[str, Any], list[Any]]], prompts: list[str], delay: float) -> float:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(agent: Any, prompt: Any) -> Any:
        async with sem:
            return await agent.arun(prompt)

    ask = Agent(reflector(delay))
    start = time.perf_counter()
    for agents, todo in batches:
        await asyncio.gather(*[one(a, c.input) for a in agents.values() for c in todo])
    for prompt in prompts:
        await ask.arun(prompt)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--delay", type=float, default=None, help="seconds per student request")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    quick = args.quick or os.environ.get("AGENTNB_BENCH_QUICK") == "1"
    delays = [args.delay] if args.delay is not None else ([0.005] if quick else [0.0, 0.005, 0.02])
    budget, n_train, n_test, repeats = (60, 12, 6, 1) if quick else (300, 40, 20, args.repeats)
    measure(0.0, 30, 8, 2)  # warm up: first imports and caches are not what is measured
    print(f"improve over a scripted student: {n_train} cases (half validation), test {n_test}, budget {budget}")
    print(
        f"{'delay/request':>14} {'runs':>5} {'refl':>5} {'improve s':>10} {'own work':>9} {'baseline s':>11} {'vs baseline':>12}"
    )
    for delay in delays:
        own, strict = [], []
        for _ in range(repeats):
            m = measure(delay, budget, n_train, n_test)
            own.append(m["own"] / m["wall"])
            strict.append((m["wall"] - m["base"]) / m["wall"])
            print(
                f"{delay * 1000:>11.0f} ms {m['runs']:>5} {m['reflections']:>5} {m['wall']:>10.3f} {own[-1]:>9.1%} "
                f"{m['base']:>11.3f} {strict[-1]:>12.1%}"
            )
        print(
            f"{delay * 1000:>11.0f} ms medians over {repeats} runs: own work {statistics.median(own):.1%} "
            f"(target <= 5%), against the hand-made baseline {statistics.median(strict):.1%}"
        )
    print("own work: improve's wall time outside its evaluate calls and reflector calls, over its wall time")
    print("vs baseline: (improve - the same runs and reflections by hand) / improve: evaluate's own rows count too")
    print(f"load average at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
