"""run_python in the notebook's kernel (``%%agent --kernel code``), approved in JupyterLab.

The notebook (tests/browser/notebooks/kernel_code.ipynb, written by make_notebooks.py) runs a
scripted model that asks for three run_python calls. The test does what a person would: reads
the highlighted code in the approval panel, edits it and runs its own version, then clicks
"Approve all" (the third call runs unasked); then reads the trace (the code, the edit as a
diff, the value, the names changed; printed HTML shown as text) and what the kernel holds.
"""

from __future__ import annotations

from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

NOTEBOOK = "kernel_code.ipynb"

_PENDING_JS = """(id) => { const p = document.querySelector('.anb-trace .anb-approval-panel');
  return !!p && p.offsetParent !== null && p.textContent.includes('Approve this tool call?')
         && p.textContent.includes(id); }"""


def _pending(page: Any, call_id: str) -> Any:
    page.wait_for_function(_PENDING_JS, arg=call_id, timeout=60_000)
    panel = page.locator(".anb-trace .anb-approval-panel").first
    panel.scroll_into_view_if_needed()
    return panel


def test_approve_edited_code_then_all_and_read_the_trace(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, NOTEBOOK)

    # --- 1. the code is shown highlighted, as text; Edit runs the person's version ------------
    panel = _pending(page, "k1")
    code = panel.locator("pre.anb-code")
    expect(code).to_contain_text("doubled = [p * 2 for p in prices]", timeout=30_000)
    assert code.locator("b").count() == 0  # '<b>not bold</b>' in the code is text
    assert code.locator("span.anb-k").count() >= 2  # highlighted: 'for', 'in'
    assert panel.locator("textarea").input_value().startswith("doubled = [p * 2 for p in prices]")
    screenshot(panel, "kernel_code_pending.png")
    panel.locator("textarea").fill("doubled = [p * 3 for p in prices]\nprint('<b>not bold</b>')\nsum(doubled)")
    panel.locator(".widget-button", has_text="Run this code").click()

    # --- 2. Approve all: this call and the next run without asking -----------------------------
    panel = _pending(page, "k2")
    panel.locator(".widget-button", has_text="Approve all").click()

    # --- the run ends; the trace shows the code, the edit, the value and the names ------------
    page.wait_for_function(
        "() => { const t = document.querySelector('.anb-trace'); const b = t && t.querySelector('.anb-badge');"
        " return !!b && b.textContent === 'finished' && t.classList.contains('anb-static'); }",
        timeout=60_000,
    )
    trace = page.locator(".anb-trace").first
    trace.scroll_into_view_if_needed()
    body = trace.inner_text()
    assert "code edited by widget" in body
    assert "-doubled = [p * 2 for p in prices]" in body and "+doubled = [p * 3 for p in prices]" in body
    assert "value:\n29.25" in body and "stdout:\n<b>not bold</b>" in body
    assert "names changed: doubled (new, list)" in body and "third (new, str)" in body
    assert trace.locator("b", has_text="not bold").count() == 0  # printed HTML stays text
    assert trace.locator("pre.anb-code").count() >= 3
    screenshot(trace, "kernel_code_finished.png")

    out = page.locator(".jp-OutputArea-output", has_text="ns:").first
    out.wait_for(timeout=30_000)
    lines = out.inner_text().strip().splitlines()
    assert lines == [
        "ns: [10.5, 12.0, 6.75] approved by me approved with the rest",
        "decisions: [('k1', 'edit'), ('k2', 'approve'), ('k3', 'approve')]",
    ], lines
