"""A notebook opened from elsewhere (untrusted: a clone, a download, the shipped docs) shows its
stored traces styled in JupyterLab, in headless Chromium.

JupyterLab drops ``<style>`` from an untrusted notebook's outputs: the trace showed as plain
text (no badge, no boxes, the header run together as "agentnb finishedmodel calls 4"). The
static trace carries its styles inline too, which JupyterLab's sanitizer keeps.
"""

from __future__ import annotations

from typing import Any

import nbformat
import pytest
from lab_harness import screenshot

from agentnb import Agent, tool
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call

pytestmark = pytest.mark.browser

NOTEBOOK = "from_elsewhere.ipynb"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_stored_trace_is_styled_in_an_untrusted_notebook(lab: Any, page: Any) -> None:
    trace = TraceWidget()
    Agent(ScriptedProvider([call("add", a=2, b=3), "2 + 3 = **5**"]), tools=[add]).run("2 + 3?", on_event=trace)
    data, meta = trace.static_bundle()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("trace")
    cell.outputs = [nbformat.v4.new_output("display_data", data=data, metadata=meta)]
    nb.cells = [cell]
    nbformat.write(nb, lab.root / "work" / NOTEBOOK)  # written here, never signed: untrusted

    page.goto(lab.notebook_url(NOTEBOOK))
    static = page.locator(".anb-static").first
    static.wait_for(timeout=60_000)
    page.wait_for_timeout(1000)
    assert page.locator(".jp-OutputArea style").count() == 0  # JupyterLab did drop the stylesheet
    badge = static.locator(".anb-badge")
    assert badge.inner_text() == "finished"
    assert badge.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(26, 127, 55)"
    depth = static.locator(".anb-depth").first
    assert depth.evaluate("e => getComputedStyle(e).borderTopStyle") == "solid"
    assert static.locator(".anb-tool").first.evaluate("e => getComputedStyle(e).borderLeftColor") == "rgb(9, 105, 218)"
    screenshot(static, "untrusted_stored_trace.png")
