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
    "agentnb/agent.py",
    "agentnb/runinfo.py",
    "agentnb/cli.py",
    "agentnb/codec.py",
    "agentnb/dedupe.py",
    "agentnb/demo_tools.py",
    "agentnb/endings.py",
    "agentnb/errors.py",
    "agentnb/events/__init__.py",
    "agentnb/events/base.py",
    "agentnb/events/control.py",
    "agentnb/events/guidance.py",
    "agentnb/events/run.py",
    "agentnb/fastinit.py",
    "agentnb/history.py",
    "agentnb/jsonsafe.py",
    "agentnb/loop.py",
    "agentnb/loop_types.py",
    "agentnb/toolexec.py",
    "agentnb/messages.py",
    "agentnb/output.py",
    "agentnb/printer.py",
    "agentnb/rendering.py",
    "agentnb/result.py",
    "agentnb/schema.py",
    "agentnb/schema_values.py",
    "agentnb/stopped.py",
    "agentnb/testing/__init__.py",
    "agentnb/toolkinds.py",
    "agentnb/toolrun.py",
    "agentnb/tools.py",
    "agentnb/toolcontext.py",
    "agentnb/toolsig.py",
    "agentnb/toolset.py",
    "agentnb/transcript.py",
    "agentnb/validate.py",
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
