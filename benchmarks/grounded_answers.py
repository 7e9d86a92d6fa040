"""Do final answers carry the tool's result? The embedded model on 50 agent tasks.

Each task (benchmarks/data/agent_tasks.json) needs one call to a tool of benchmarks/agent_tools.py
and then an answer in text. Every task runs through ``Agent("local", tools=AGENT_TOOLS)`` at
its defaults (``tool_choice="auto"``: the model decides whether to call). Printed per half
(``even`` = tuning, ``odd`` = held out):

* called: the agent called a tool;
* grounded: of the tasks where a tool returned a result, the share whose final answer contains
  that result's value (the part after "=" for a conversion, else the whole result);
* right: the share of all tasks whose answer contains the right value (the expected call's result);
* seconds per task, with the load average.

    .venv/bin/python benchmarks/grounded_answers.py
    .venv/bin/python benchmarks/grounded_answers.py --split even --option result_bias=0
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from agent_tools import AGENT_TOOLS

from agentnb import Agent

DATA = Path(__file__).resolve().parent / "data" / "agent_tasks.json"


def result_value(result: str) -> str:
    """The part of a tool result an answer must carry.

    >>> result_value("42 km = 26.0976 mi"), result_value("Saturday"), result_value("189.84 USD")
    ('26.0976', 'Saturday', '189.84')
    """
    text = result.split("=")[-1].strip()
    head = text.split()[0] if text.split() else text
    return head if any(ch.isdigit() for ch in head) else text


def contains(answer: str, value: str) -> bool:
    """Whether ``answer`` holds ``value`` (case-insensitive; "3,367" holds "3367")."""
    flat = answer.casefold()
    return value.casefold() in flat or value.casefold() in flat.replace(",", "")


def run(split: str, options: dict[str, Any], verbose: bool, limit: int | None = None) -> list[dict[str, Any]]:
    tasks = json.loads(DATA.read_text(encoding="utf-8"))["tasks"]
    tasks = tasks[{"all": slice(None), "even": slice(0, None, 2), "odd": slice(1, None, 2)}[split]][:limit]
    from agentnb.providers.hf import local_provider

    provider = local_provider(**options) if options else local_provider()
    agent = Agent(provider, tools=AGENT_TOOLS)
    by_name = {t.name: t for t in AGENT_TOOLS}
    rows = []
    for i, task in enumerate(tasks):
        right = str(by_name[task["call"]["name"]].fn(**task["call"]["arguments"]))
        start = time.perf_counter()
        result = agent.run(task["query"])
        seconds = time.perf_counter() - start
        answer = result.output or ""
        got = [m.content for m in result.messages if m.role == "tool" and not m.is_error]
        row = {
            "id": task["id"],
            "half": split if split != "all" else ("even" if i % 2 == 0 else "odd"),
            "called": result.tool_calls > 0,
            "result": got[-1] if got else None,
            "grounded": bool(got) and contains(answer, result_value(got[-1])),
            "right": contains(answer, result_value(right)),
            "answer": answer,
            "seconds": seconds,
        }
        rows.append(row)
        if verbose:
            print(f"  {task['id']:9s} {seconds:5.1f}s {row['result']!r:28.28} -> {answer!r:.70}")
    return rows


def report(rows: list[dict[str, Any]], label: str) -> None:
    with_result = [r for r in rows if r["result"] is not None]
    n = len(rows)

    def pct(k: int, d: int) -> str:
        return f"{100 * k / d:3.0f}% ({k}/{d})" if d else "   -"

    print(
        f"{label:9s} n={n:2d}  called {pct(sum(r['called'] for r in rows), n)}  "
        f"grounded {pct(sum(r['grounded'] for r in with_result), len(with_result))}  "
        f"right {pct(sum(r['right'] for r in rows), n)}  "
        f"{sum(r['seconds'] for r in rows) / max(n, 1):.2f} s/task"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("all", "even", "odd"), default="all")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", help="generation option")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None, help="first N tasks")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("AGENTNB_BENCH_QUICK") == "1",
        help="a smoke run in seconds (also AGENTNB_BENCH_QUICK=1): one task",
    )
    args = parser.parse_args()
    if args.quick:
        args.split, args.limit = "odd", 1
    options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.option)}
    rows = run(args.split, options, args.verbose, args.limit)
    for half in ("even", "odd"):
        part = [r for r in rows if r["half"] == half]
        if part:
            report(part, half)
    if args.split == "all":
        report(rows, "all")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
