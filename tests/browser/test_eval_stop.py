"""The evaluation widget's Stop, clicked in JupyterLab in headless Chromium (issue 39, item 2).

The notebook (tests/browser/notebooks/eval_stop.ipynb, written by make_notebooks.py) evaluates a
slow agent on 400 cases three ways, one cell each: ``evaluate(...)`` (the cell's thread waits
for the runs), ``await aevaluate(...)`` and ``%agent_eval``. Each would take 50 s; the test
clicks Stop once a few rows are done and reads what the cell printed when it returned.
"""

from __future__ import annotations

from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

NOTEBOOK = "eval_stop.ipynb"

#: A live progress widget whose Stop is enabled and which has finished at least one row.
_RUNNING_JS = """() => {
  const b = [...document.querySelectorAll('.widget-button')].find(
      e => e.textContent.includes('Stop') && !e.disabled && e.offsetParent !== null);
  if (!b) return false;
  const box = b.closest('.widget-vbox');
  return !!box && /agent: [1-9]\\d*\\/400 done/.test(box.textContent);
}"""


def _output(page: Any, starts: str, timeout_ms: int) -> str:
    out = page.locator(".jp-OutputArea-output", has_text=starts).first
    try:
        out.wait_for(timeout=timeout_ms)
    except Exception:
        shown = page.locator(".jp-OutputArea-output").all_inner_texts()
        raise AssertionError(f"no output {starts!r}; the outputs read: {shown}") from None
    return str(out.inner_text()).strip()


def test_stop_ends_evaluate_aevaluate_and_the_magic(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, NOTEBOOK)
    for n, label in enumerate(["evaluate", "aevaluate", "agent_eval"]):
        page.wait_for_function(_RUNNING_JS, timeout=60_000)
        stop = page.locator(".widget-button:not([disabled])", has_text="Stop").first
        if n == 0:
            screenshot(stop.locator("xpath=ancestor::*[contains(@class,'widget-vbox')][1]"), "eval_progress.png")
        stop.click()
        # The cell returns well before the 50 s the whole run would take, with what finished.
        printed = _output(page, f"{label} stopped:", 25_000)
        assert printed == f"{label} stopped: True True", printed
    # Each widget became a static line that says so (a display update: waited for, not assumed).
    expect(page.locator(".jp-OutputArea-output", has_text="evaluation stopped")).to_have_count(3, timeout=15_000)


def test_the_summary_fits_and_the_view_opens_a_trace_next_to_its_controls(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, NOTEBOOK)
    for label in ["evaluate", "aevaluate", "agent_eval"]:  # the three slow evaluations before: stop each
        page.wait_for_function(_RUNNING_JS, timeout=60_000)
        page.locator(".widget-button:not([disabled])", has_text="Stop").first.click()
        _output(page, f"{label} stopped:", 25_000)
    table = page.locator("table.agentnb-summary")
    table.wait_for(timeout=60_000)
    table.scroll_into_view_if_needed()
    # Two agents, four scorers: it fits its output area (the viewport is 1100 px, under 1280),
    # text left-aligned, numbers right-aligned, rates rounded.
    fits = table.evaluate(
        """(t) => { const area = t.closest('.jp-OutputArea-output');
                    return [t.getBoundingClientRect().width <= area.clientWidth,
                            getComputedStyle(t.rows[1].cells[0]).textAlign,
                            getComputedStyle(t.rows[1].cells[3]).textAlign]; }"""
    )
    assert fits == [True, "left", "right"], fits
    expect(table).to_contain_text("100.0%", timeout=10_000)
    screenshot(table, "eval_summary.png")
    view = page.locator(".widget-vbox", has=page.locator("table.agentnb-eval")).last
    view.locator(".widget-button", has_text="open trace").click()
    trace = view.locator(".anb-trace")
    trace.wait_for(timeout=30_000)
    rows = view.locator("table.agentnb-eval")
    assert trace.bounding_box()["y"] < rows.bounding_box()["y"]  # next to the controls, above the table
    screenshot(view, "eval_view_trace.png")
