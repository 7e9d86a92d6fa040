"""Every notebook runs from a copy in any folder (issue 26, item 7): no helper file beside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
ROOT = NOTEBOOKS.parent


def test_no_notebook_needs_a_file_next_to_it() -> None:
    siblings = {p.name for p in NOTEBOOKS.iterdir() if p.suffix != ".ipynb"}
    assert not [s for s in siblings if s.endswith(".py")], "helpers belong in the package (python -m agentnb...)"
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                used = [s for s in siblings if s in source]
                assert not used, f"{path.name} reads {used} from its own folder"


@pytest.mark.slow
def test_the_mcp_demo_server_ships_with_agentnb(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    code = (
        "from agentnb.mcp import MCPServer, demo_server\n"
        "with MCPServer.stdio('python', demo_server.__file__, name='demo', timeout=30) as s:\n"
        "    print(sorted(t.name for t in s.tools()))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "['bar_chart', 'weather']"
