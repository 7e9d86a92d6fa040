"""improve's Stop, clicked in JupyterLab in headless Chromium, at three moments (issue 45, item 12).

The notebook (tests/browser/notebooks/improve_stop.ipynb, written by make_notebooks.py) runs
``improve(...)`` in a cell three times; each time the student or the reflector never answers at
one moment (the original's validation runs, the reflection, the test comparison), so only the
Stop can end the cell. The test waits until the live widget shows that moment (its "now:" line
and the runs finished), clicks Stop with the mouse and reads what the cell printed. Before the
fix the click reached the search only once it had ended on its own ("ended: budget").
"""

from __future__ import annotations

from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

NOTEBOOK = "improve_stop.ipynb"

#: A live improvement widget whose Stop is enabled and whose text matches ``pattern``.
_AT_JS = """(pattern) => {
  const b = [...document.querySelectorAll('.widget-button')].find(
      e => e.textContent.includes('Stop') && !e.disabled && e.offsetParent !== null);
  if (!b) return false;
  const box = b.closest('.widget-vbox');
  return !!box && new RegExp(pattern).test(box.textContent);
}"""

#: moment -> what the widget shows when it came (the phase under way and the runs finished)
MOMENTS = {
    "original": r"runs 1/40[\s\S]*now: scoring the original",
    "reflection": r"now: step 1: the reflector reads the failures of candidate",
    "test": r"runs 13/40[\s\S]*now: the test comparison",
}


def _output(page: Any, starts: str, timeout_ms: int) -> str:
    out = page.locator(".jp-OutputArea-output", has_text=starts).first
    try:
        out.wait_for(timeout=timeout_ms)
    except Exception:
        shown = page.locator(".jp-OutputArea-output").all_inner_texts()
        raise AssertionError(f"no output {starts!r}; the outputs read: {shown}") from None
    return str(out.inner_text()).strip()


def test_stop_ends_improve_in_a_cell_at_each_moment(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, NOTEBOOK)
    printed = {}
    for moment, shows in MOMENTS.items():
        page.wait_for_function(_AT_JS, arg=shows, timeout=60_000)
        stop = page.locator(".widget-button:not([disabled])", has_text="Stop").first
        if moment == "reflection":
            screenshot(stop.locator("xpath=ancestor::*[contains(@class,'widget-vbox')][1]"), "improve_stopping.png")
        stop.click()
        printed[moment] = _output(page, f"{moment} stopped:", 30_000)
    assert printed["original"] == (
        "original stopped: True | stopped before the original was scored: 1 of 2 runs finished on the validation set"
    )
    assert printed["reflection"].startswith("reflection stopped: True | stopped during step 1 (the reflection")
    assert printed["reflection"].endswith("was cancelled): the original is kept")
    assert printed["test"].startswith(
        "test stopped: True | 3 | The test comparison was stopped (the original finished 2 of 2 test cases, "
        "the best finished 1 of 2 test cases); on the 1 that both finished, the original passes 0, the best 1"
    )
    # compare() without finishing pairs the one case both finished; then it runs only the rest.
    assert _output(page, "compare:", 30_000) == "compare: 1 then 2 | runs 14"
    # Each live widget became a static view that says where it stopped (a display update: waited for).
    ended = page.locator(".jp-OutputArea-output", has_text="ended: stopped")
    expect(ended).to_have_count(3, timeout=15_000)
    expect(page.locator(".jp-OutputArea-output", has_text="ended: budget")).to_have_count(0)
    screenshot(ended.nth(2), "improve_stopped_test.png")
