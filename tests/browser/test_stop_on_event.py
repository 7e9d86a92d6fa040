"""Stop under ``agent.run(..., on_event=trace)`` in JupyterLab (issue 45, item 13).

The run holds its cell (its tool waits ten minutes). Stop was greyed out for the whole run,
with no reason given, and only Kernel > Interrupt ended it. Now the cell serves the widget's
messages while the run goes on: a click on the trace reaches it, the kernel still reads busy
after it (the "idle" that acknowledges a widget message once left JupyterLab saying "Idle"
while the cell ran), and Stop ends the run.
"""

from __future__ import annotations

from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

_WATCH_STATUS = """() => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  window.__anbStatuses = [];
  kernel.statusChanged.connect((_, status) => window.__anbStatuses.push(status));
}"""
_STATUS = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"


def test_stop_ends_a_run_that_holds_its_cell(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, "stop_on_event.ipynb")
    run_cell = page.locator(".jp-CodeCell").nth(1)
    trace = run_cell.locator(".anb-trace").first
    expect(trace).to_contain_text("wait_long", timeout=60_000)
    stop = trace.get_by_role("button", name="Stop")
    expect(stop).to_be_enabled(timeout=30_000)
    assert "[*]" in run_cell.locator(".jp-InputArea-prompt").inner_text()  # the run holds the cell

    # A click that does not stop the run: served by the cell, and the kernel still reads busy.
    page.evaluate(_WATCH_STATUS)
    trace.get_by_role("button", name="Collapse all").click()
    page.wait_for_function("() => window.__anbStatuses.includes('idle')", timeout=30_000)  # acknowledged
    page.wait_for_function(f"() => ({_STATUS})() === 'busy'", timeout=30_000)
    assert "[*]" in run_cell.locator(".jp-InputArea-prompt").inner_text()
    screenshot(trace, "stop_on_event_running.png")

    stop.click()
    after = page.locator(".jp-CodeCell").nth(2)
    expect(after.locator(".jp-OutputArea")).to_contain_text("after: cancelled", timeout=30_000)
    expect(run_cell.locator(".anb-trace.anb-static")).to_contain_text("cancelled", timeout=30_000)
    page.wait_for_function(f"() => ({_STATUS})() === 'idle'", timeout=30_000)
    screenshot(run_cell.locator(".jp-OutputArea"), "stop_on_event_stopped.png")
