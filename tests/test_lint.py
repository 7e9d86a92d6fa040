"""Lint gates: ruff over the whole project, mypy over the core."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

CORE = [
    "agentnb/__init__.py",
    "agentnb/run/agent.py",
    "agentnb/run/streaming.py",
    "agentnb/run/steer.py",
    "agentnb/control/inbox.py",
    "agentnb/run/runinfo.py",
    "agentnb/cli.py",
    "agentnb/messages/codec.py",
    "agentnb/tools/dedupe.py",
    "agentnb/demo_tools.py",
    "agentnb/run/endings.py",
    "agentnb/errors.py",
    "agentnb/events/__init__.py",
    "agentnb/events/base.py",
    "agentnb/events/control.py",
    "agentnb/events/guidance.py",
    "agentnb/events/run.py",
    "agentnb/messages/fastinit.py",
    "agentnb/run/history.py",
    "agentnb/messages/jsonsafe.py",
    "agentnb/messages/jsonfile.py",
    "agentnb/run/loop.py",
    "agentnb/run/delivery.py",
    "agentnb/run/phases/__init__.py",
    "agentnb/run/phases/ask.py",
    "agentnb/run/phases/end.py",
    "agentnb/run/phases/calls.py",
    "agentnb/run/phases/execute.py",
    "agentnb/run/phases/append.py",
    "agentnb/run/state.py",
    "agentnb/tools/execution.py",
    "agentnb/messages/__init__.py",
    "agentnb/messages/types.py",
    "agentnb/output/__init__.py",
    "agentnb/output/structured.py",
    "agentnb/printer.py",
    "agentnb/tools/rendering.py",
    "agentnb/run/result.py",
    "agentnb/tools/schema.py",
    "agentnb/tools/schema_values.py",
    "agentnb/run/stopped.py",
    "agentnb/testing/__init__.py",
    "agentnb/tools/kinds.py",
    "agentnb/tools/running.py",
    "agentnb/tools/__init__.py",
    "agentnb/tools/definition.py",
    "agentnb/control/__init__.py",
    "agentnb/run/__init__.py",
    "agentnb/cost.py",
    "agentnb/dedupe.py",
    "agentnb/tools/context.py",
    "agentnb/tools/signature.py",
    "agentnb/tools/toolset.py",
    "agentnb/run/transcript.py",
    "agentnb/tools/validate.py",
    "agentnb/providers/__init__.py",
    "agentnb/providers/base.py",
    "agentnb/providers/sdk_client.py",
]


def tool(name: str) -> str:
    found = BIN / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def test_ruff_is_clean() -> None:
    out = subprocess.run(
        [tool("ruff"), "check", "agentnb", "tests", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_is_clean_on_the_core() -> None:
    out = subprocess.run([tool("mypy"), "--follow-imports=silent", *CORE], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
