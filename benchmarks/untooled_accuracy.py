"""Tool-call accuracy of SmolLM2-135M-Instruct through three prompt-simulated tool-calling set-ups.

Variants, each one model call per request (greedy decoding):

* ``naive``        AnythingLLM's picker prompt, parser and validation (benchmarks/naive_baseline.py);
* ``ours``         agentnb's UnTooled prompt and parser, unconstrained decoding;
* ``constrained``  the same prompt with llguidance-constrained decoding (what ``Agent("local")`` does).

Task sets (benchmarks/data/): ``tasks`` (agent requests over a dozen tools, some needing no tool) and
``fc`` (leaderboard-style cases: one request, 1-4 candidate functions, one expected call) and ``more``
(more such cases, with a ``no_tool`` category of requests no offered function fits) and ``sibling``
(issue 26's siblings of "What is 37*91?", written after the rules were fitted; not in the
default sets, and its halves are only labels). Requests
are asked with ``tool_choice="auto"``: the model itself decides between calling and answering.
``--required`` asks the fc cases with ``tool_choice="required"`` as well (the leaderboard setting);
``--fc-choices required`` asks only that. ``--split even`` / ``odd`` takes every other case of each
set: tune on the even ones, report the odd ones as held out (``all`` prints both halves).

Printed per variant and set: parse rate, schema-valid rate, correct-call rate (right function and
every argument right), no-tool accuracy, seconds per request. Replies are capped at
``--max-new-tokens`` (default 96: any call fits; a longer prose answer only costs time).

    .venv/bin/python benchmarks/untooled_accuracy.py --limit 10
    .venv/bin/python benchmarks/untooled_accuracy.py --sets fc --variants constrained
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import naive_baseline
import scoring

from agentnb.messages import AssistantMessage, SystemMessage, UserMessage
from agentnb.providers.base import Request
from agentnb.providers.untooled import UnTooled
from agentnb.tools import Tool

VARIANTS = ("naive", "ours", "constrained")


_TOOLS: dict[str, Tool] = {}


def make_tool(spec: dict[str, Any]) -> Tool:
    """The tool for a function spec; one object per spec, so its grammar is compiled once."""
    key = json.dumps(spec, sort_keys=True)
    if key not in _TOOLS:
        _TOOLS[key] = _new_tool(spec)
    return _TOOLS[key]


def _new_tool(spec: dict[str, Any]) -> Tool:
    examples = [(e["query"], e["arguments"]) for e in spec.get("examples", ())]
    return Tool(spec["name"], spec.get("description", ""), spec["parameters"], examples=examples)


#: Which fc cases a run uses: tune on ``even`` (cases 0, 2, 4, ...), report ``odd`` as held out.
SPLITS = {"all": slice(None), "even": slice(0, None, 2), "odd": slice(1, None, 2)}


def requests(sets: list[str], limit: int | None, choices: list[str], split: str = "all") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if "tasks" in sets:
        data = scoring.load_tasks()
        out += [
            {"set": "tasks", "id": t["id"], "query": t["query"], "expected": t["expected"], "functions": data["tools"]}
            for t in data["tasks"][SPLITS[split]][:limit]
        ]
        _halves(out, split)
    loaders = (
        ("fc", scoring.load_fc_cases),
        ("more", scoring.load_more_cases),
        ("sibling", scoring.load_sibling_cases),
    )
    for name, loader in loaders:
        if name not in sets:
            continue
        cases = loader()[SPLITS[split]][:limit]
        halves = _halves([dict(c) for c in cases], split)
        if "auto" in choices:
            out += [{"set": name, "choice": "auto", **c} for c in halves]
        if "required" in choices:  # a call is expected: cases no tool fits are left out
            out += [{"set": f"{name}-required", "choice": "required", **c} for c in halves if c["expected"]]
    return out


def _halves(items: list[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """Label each item with its half: even-numbered (tuning) or odd-numbered (held out)."""
    for i, item in enumerate(items):
        item.setdefault("half", split if split != "all" else ("even" if i % 2 == 0 else "odd"))
    return items


def run_naive(provider: Any, item: dict[str, Any]) -> dict[str, Any]:
    history = [{"role": "user", "content": item["query"]}]
    chat = naive_baseline.build_messages(history, item["functions"])
    roles = {"system": SystemMessage, "user": UserMessage}
    messages = [
        roles[m["role"]](m["content"]) if m["role"] != "assistant" else AssistantMessage(m["content"]) for m in chat
    ]
    completion = asyncio.run(provider.complete(Request(messages)))
    detail = naive_baseline.parse_reply_detailed(completion.text or "", item["functions"])
    return {"predicted": detail["call"], "attempt": detail["attempt"], "text": completion.text}


def scored_call(completion: Any, tools: list[Tool]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The reply's first call as written (``attempt``), and as the loop would run it (``predicted``).

    ``predicted`` is None unless the call names a known tool with arguments that validate: the
    loop runs nothing else.
    """
    if not completion.tool_calls or completion.tool_calls[0].arguments is None:
        return None, None
    call = completion.tool_calls[0]
    attempt = {"name": call.name, "arguments": call.arguments}
    tool = next((t for t in tools if t.name == call.name), None)
    return attempt, (attempt if tool is not None and not tool.validate(call.arguments) else None)


def run_untooled(layer: UnTooled, item: dict[str, Any], tools: list[Tool]) -> dict[str, Any]:
    request = Request([UserMessage(item["query"])], tools, item.get("choice", "auto"))
    layer.inner.last_decision = None  # type: ignore[attr-defined]
    completion = asyncio.run(layer.complete(request))
    attempt, predicted = scored_call(completion, tools)
    decision = getattr(layer.inner, "last_decision", None)
    share = decision.call_share if decision is not None else None
    return {"predicted": predicted, "attempt": attempt, "text": completion.text, "call_share": share}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="first N requests of each set")
    parser.add_argument("--sets", default="tasks,fc,more", help="comma-separated: tasks, fc, more, sibling")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ", ".join(VARIANTS))
    parser.add_argument("--required", action="store_true", help="also ask the fc cases with tool_choice=required")
    parser.add_argument(
        "--fc-choices", default=None, help="comma-separated tool choices for the fc cases (auto, required)"
    )
    parser.add_argument(
        "--split", choices=sorted(SPLITS), default="all", help="every set: even (tuning), odd (held out)"
    )
    parser.add_argument(
        "--max-new-tokens", type=int, default=96, help="reply cap; 0: the provider's default (what Agent('local') uses)"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a generation option for the constrained variant, e.g. copy_bias=0 (repeatable)",
    )
    parser.add_argument("--json", type=Path, default=None, help="write every reply and score here")
    parser.add_argument("--verbose", action="store_true", help="print each request's outcome")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("AGENTNB_BENCH_QUICK") == "1",
        help="a smoke run in seconds (also AGENTNB_BENCH_QUICK=1): one request per set",
    )
    args = parser.parse_args()
    if args.quick:
        args.split, args.limit, args.max_new_tokens, args.sets = "odd", 1, 48, "fc"

    from agentnb.providers.hf import local_provider

    start = time.perf_counter()
    local_provider()
    print(f"SmolLM2-135M-Instruct loaded in {time.perf_counter() - start:.1f} s")
    options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.option)}
    choices = (args.fc_choices or ("auto,required" if args.required else "auto")).split(",")
    items = requests(args.sets.split(","), args.limit, choices, args.split)
    report: dict[str, Any] = {}
    for variant in args.variants.split(","):
        constrained = variant == "constrained"
        extra = options if constrained else {}
        cap = {"max_new_tokens": args.max_new_tokens} if args.max_new_tokens else {}
        if constrained and not extra and not cap:
            provider = local_provider()  # exactly what Agent("local") uses
        else:
            provider = local_provider(constrained=constrained, **cap, **extra)
        layer = UnTooled(provider)
        results: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            tools = [make_tool(f) for f in item["functions"]]
            t0 = time.perf_counter()
            outcome = run_naive(provider, item) if variant == "naive" else run_untooled(layer, item, tools)
            seconds = time.perf_counter() - t0
            row = {
                "id": item["id"],
                "half": item.get("half"),
                "expected": item["expected"],
                "functions": item["functions"],
                "seconds": seconds,
                "category": item.get("category", "tasks"),
                **outcome,
            }
            results.setdefault(item["set"], []).append(row)
            if args.verbose:
                ok = scoring.score_call(item["expected"], outcome["predicted"])
                share = outcome.get("call_share")
                share_text = f"{share:.3f}" if share is not None else "  -  "
                print(
                    f"  {variant:11s} {item['id']:12s} {seconds:5.2f}s {share_text} {ok['correct']!s:5} {outcome['attempt']} | {outcome['text']!r:.60}"
                )
        for name, rows in results.items():
            summary = scoring.summarise(rows)
            report[f"{variant}/{name}"] = {"summary": summary, "rows": rows}
            print_summary(f"{variant:11s} {name:11s}", summary)
            for half in ("even", "odd"):
                part = [r for r in rows if r["half"] == half]
                if args.split == "all" and part and not name.startswith("sibling"):  # its halves are labels only
                    print_summary(f"{'':11s} {name + ' ' + half:15s}"[:23], scoring.summarise(part))
    print(f"(threads: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{100 * value:3.0f}%"


def print_summary(label: str, s: dict[str, Any]) -> None:
    print(
        f"{label} n={s['n']:3d}  parse {_pct(s['parse_rate'])}  schema-valid {_pct(s['schema_valid_rate'])}  "
        f"correct {_pct(s['correct_rate'])}  no-tool {_pct(s['no_tool_accuracy'])}  "
        f"{s['mean_seconds']:.2f} s/request"
    )
    for cat, c in (s.get("by_category") or {}).items():
        if len(s["by_category"]) > 1:
            print(
                f"{'':24s}{cat:9s} n={c['n']:3d}  correct {_pct(c['correct_rate'])}  no-tool {_pct(c['no_tool_accuracy'])}"
            )


if __name__ == "__main__":
    main()
