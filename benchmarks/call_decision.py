"""How ``tool_choice="auto"`` decides on the embedded model: call or answer, per half of the data.

For every request of benchmarks/data (tasks.json, fc_cases.json, more_cases.json,
decision_cases.json), the measurements the provider makes before it writes anything (the first
token's call share, each tool's fit to the request against no tool, whether the best tool needs a
number the request lacks, and the model's yes/no to "is there a function above that does exactly
what I asked?"; see agentnb/providers/guidance/decide.py), then the decision by the rule in use, by the
previous rule (share and fit only, weights 0.5/5/1) and by the call share alone at 0.0015 (the
first rule). Printed per half (even = tuning, odd = held out), over all sets and per set: the share
of requests that need a tool that get a call, and of requests no offered tool fits that get text.
``--split sibling`` measures benchmarks/data/sibling_cases.json instead: siblings of issue 26's
"What is 37*91?", written after the rule was fitted and in neither half.
benchmarks/call_decision_fit.py refits the rule from the rows ``--jsonl`` writes.

    .venv/bin/python benchmarks/call_decision.py [--split odd] [--jsonl rows.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import scoring
from untooled_accuracy import make_tool

from agentnb.messages import UserMessage
from agentnb.providers.base import Request
from agentnb.providers.guidance.decide import PROBE, decide, lacks_numbers
from agentnb.providers.untooled import UnTooled


def items(split: str, limit: int | None = None) -> list[tuple[str, str, str, list, bool, str]]:
    data = scoring.load_tasks()
    sets = {
        "tasks": [(t["id"], t["query"], data["tools"], t["expected"]) for t in data["tasks"]],
        "fc": [(c["id"], c["query"], c["functions"], c["expected"]) for c in scoring.load_fc_cases()],
        "more": [(c["id"], c["query"], c["functions"], c["expected"]) for c in scoring.load_more_cases()],
        "decision": [(c["id"], c["query"], c["functions"], c["expected"]) for c in scoring.load_decision_cases()],
    }
    if split == "sibling":  # a set apart: neither half
        sets = {"sibling": [(c["id"], c["query"], c["functions"], c["expected"]) for c in scoring.load_sibling_cases()]}
    out = []
    for name, rows in sets.items():
        for i, (ident, query, functions, expected) in enumerate(rows[:limit]):
            half = "sibling" if split == "sibling" else "even" if i % 2 == 0 else "odd"
            if split in ("all", half):
                out.append((name, ident, query, functions, expected is not None, half))
    return out


def measure(provider, layer: UnTooled, query: str, functions: list) -> tuple[float, dict[str, float], bool, float]:  # type: ignore[no-untyped-def]
    """The call share, the tools' fits, whether the best needs a number the request lacks, the yes/no:
    the guidance's own measurements (agentnb/providers/guidance/), on the in-process model."""
    from agentnb.providers.guidance.rank import best, tool_fits
    from agentnb.providers.guidance.source import drive
    from agentnb.providers.hf.choose import _compiler
    from agentnb.providers.hf.source import InProcessSource

    tools = [make_tool(f) for f in functions]
    inner = layer.inner_request(Request([UserMessage(query)], tools, "auto"))
    prompt = provider.encode(inner.messages)
    logits = provider.cache.prefill(prompt)
    compiler = _compiler(provider.tokenizer, provider.vocab_size, provider.eos_ids)

    def masks():  # type: ignore[no-untyped-def]
        return compiler.guide(tools, "call").allowed(), compiler.guide(tools, "text").allowed()

    def probe(question: str) -> list[int]:
        return provider.encode([*inner.messages, UserMessage(question)])

    source = InProcessSource(provider, prompt, logits, probe, masks)
    share = drive(source.next_token()).call_share()
    fits = drive(tool_fits(source, tools, inner.settings["untooled_pick"]))
    top = best(tools, fits)[0]
    agree = drive(source.next_token(PROBE)).yes_no()
    return share, fits, lacks_numbers(top.parameters, query), agree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=("all", "even", "odd", "sibling"), default="all")
    parser.add_argument("--limit", type=int, default=None, help="first N requests of each set")
    parser.add_argument("--jsonl", type=Path, default=None, help="append each request's measurements here")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("AGENTNB_BENCH_QUICK") == "1",
        help="a smoke run in seconds (also AGENTNB_BENCH_QUICK=1): one request per set",
    )
    parser.add_argument("--refit", type=Path, nargs="+", default=None, help="refit the rule from these rows (no model)")
    parser.add_argument("--coverage", action="store_true", help="with --refit: add argument coverage (call_fit.py)")
    parser.add_argument("--l2", type=float, default=0.1, help="with --refit: the weights' L2 penalty")
    args = parser.parse_args()
    if args.refit:
        return refit(args.refit, args.coverage, args.l2)
    if args.quick:
        args.split, args.limit = "odd", 2  # the limit comes first: requests 0-1, of which 1 is odd
    from agentnb.providers.hf import local_provider

    provider = local_provider()
    layer = UnTooled(provider)
    rows = []
    for name, ident, query, functions, need, half in items(args.split, args.limit):
        share, fits, missing, agree = measure(provider, layer, query, functions)
        row = {"set": name, "id": ident, "half": half, "need": need, "share": share, "fits": fits}
        row.update(missing=missing, agree=agree)
        row["new"] = decide(share, fits, missing_numbers=missing, agree=agree).action == "call"
        previous = decide(share, fits, share_weight=0.5, fit_weight=5.0, bias=1.0)
        row["previous"] = previous.action == "call"
        row["old"] = share >= 0.0015
        rows.append(row)
        if args.jsonl:
            with args.jsonl.open("a") as f:
                f.write(json.dumps(row) + "\n")
    report(rows, ("new", "previous", "old"))


def report(rows: list[dict], rules: tuple[str, ...]) -> None:
    for half in ("even", "odd", "sibling"):
        for name in ("all", "tasks", "fc", "more", "decision"):
            part = [r for r in rows if r["half"] == half and name in ("all", r["set"])]
            if not part:
                continue
            need = [r for r in part if r["need"]]
            none = [r for r in part if not r["need"]]
            for rule in rules:
                called = sum(r[rule] for r in need)
                text = sum(not r[rule] for r in none)
                print(
                    f"{half:4s} {name:8s} {rule:8s}: need a tool -> call {called}/{len(need)} "
                    f"({100 * called / max(1, len(need)):.0f}%)  no tool fits -> text {text}/{len(none)} "
                    f"({100 * text / max(1, len(none)):.0f}%)"
                )
    print(f"(load average {os.getloadavg()[0]:.1f})")


def refit(paths: list[Path], coverage: bool, l2: float) -> None:
    """Refit the rule on the even rows of ``paths`` (call_fit.py) and print every half by it
    (``refit``) beside the rule in use (``new``)."""
    import call_fit

    known = {(r[0], r[1]): r for split in ("all", "sibling") for r in items(split)}
    rows = [json.loads(line) for path in paths for line in path.read_text().splitlines() if line.strip()]
    x = []
    for row in rows:
        _, _, query, functions, _, _ = known[(row["set"], row["id"])]
        top = max(row["fits"], key=row["fits"].__getitem__)
        tool = next(f for f in functions if f["name"] == top)
        x.append(call_fit.features(row, tool["parameters"], query, coverage))
    tune = [i for i, r in enumerate(rows) if r["half"] == "even"]
    if not tune:
        raise SystemExit("--refit needs the tuning half's rows: measure with --split all (or even) first")
    weights, _ = call_fit.fit([x[i] for i in tune], [rows[i]["need"] for i in tune], l2)
    sums = [sum(w * v for w, v in zip(weights, xs, strict=True)) for xs in x]
    bias = call_fit.bias_for([sums[i] for i in tune if rows[i]["need"]])
    names = [*call_fit.FEATURES, *(["coverage"] if coverage else [])]
    print("refit:", ", ".join(f"{n} {w:+.2f}" for n, w in zip(names, weights, strict=True)), f"bias {bias:+.2f}")
    for row, total in zip(rows, sums, strict=True):
        row["refit"] = total + bias >= 0
    report(rows, ("new", "refit"))


if __name__ == "__main__":
    main()
