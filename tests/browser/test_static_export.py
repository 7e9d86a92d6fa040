"""An executed notebook exported to HTML (nbconvert) shows its traces offline, in Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lab_harness import NOTEBOOKS, screenshot

pytestmark = pytest.mark.browser


def _jupyter(*args: str, cwd: Path) -> None:
    jupyter = str(Path(sys.executable).parent / "jupyter")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(cwd / "config"), "JUPYTER_RUNTIME_DIR": str(cwd / "runtime")}
    subprocess.run([jupyter, *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=180)


def test_exported_html_shows_the_trace_offline(tmp_path: Path, page: Any) -> None:
    shutil.copy(NOTEBOOKS / "voila.ipynb", tmp_path / "run.ipynb")
    _jupyter("nbconvert", "--to", "notebook", "--execute", "--inplace", "run.ipynb", cwd=tmp_path)
    _jupyter(
        "nbconvert",
        "--to",
        "html",
        "--HTMLExporter.preprocessors=agentnb.notebook.export.StaticTraces",
        "run.ipynb",
        cwd=tmp_path,
    )
    html = tmp_path / "run.html"
    requests: list[str] = []

    def block(route: Any) -> None:  # offline: only the file itself loads
        if not route.request.url.startswith("file://"):
            requests.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.route("**/*", block)
    page.goto(html.as_uri())
    trace = page.locator(".anb-static").first
    trace.wait_for(timeout=10_000)
    text = trace.inner_text()
    assert "finished" in text and "tool calls 4/10" in text
    titles = trace.locator("details.anb-depth > summary").all_inner_texts()
    assert [t.split(" · ")[0] for t in titles] == ["Depth 0", "Depth 1", "Depth 2", "Depth 3"], titles
    assert trace.locator("img[alt='attached image']").count() == 1
    answer = page.locator(".anb", has_text="Final answer").last
    assert answer.locator("strong", has_text="17").count() == 1  # Markdown rendered offline
    # The paused debugger had not finished when the notebook was saved: its widget view stays.
    screenshot(trace, "static_export.png")
    assert requests, "the export still tries its CDN scripts for other widgets (blocked here)"
