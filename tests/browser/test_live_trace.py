"""``agent.run(..., on_event=trace); trace`` in JupyterLab: the widget shows itself when its run
starts, live, and the cell's own display of it at the end adds no second view."""

from __future__ import annotations

from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser

NOTEBOOK = "live_on_event.ipynb"


def test_a_trace_named_at_the_end_of_its_cell_is_live_while_the_run_goes_on(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, NOTEBOOK)
    run_cell = page.locator(".jp-CodeCell").nth(1)
    trace = run_cell.locator(".anb-trace")
    # The run waits in its tool until the gate opens: the trace is already shown, live.
    trace.first.wait_for(timeout=60_000)
    trace.locator(".anb-badge").first.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => /wait_for_gate/.test(document.querySelectorAll('.jp-CodeCell')[1].innerText)", timeout=30_000
    )
    assert "[*]" in run_cell.locator(".jp-InputArea-prompt").inner_text()  # the cell is still running
    assert run_cell.locator(".anb-static").count() == 0  # a widget, not the finished static view
    screenshot(trace.first, "trace_live_on_event.png")
    (lab.root / "work" / "open.flag").write_text("open")
    # The run ends: the same display turns static, and the cell's last line adds nothing.
    page.wait_for_function(
        "() => /after: answer The gate is open\\./.test(document.querySelectorAll('.jp-CodeCell')[2].innerText)",
        timeout=60_000,
    )
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-CodeCell')[1].querySelector('.anb-trace.anb-static') !== null",
        timeout=30_000,
    )
    assert trace.count() == 1
    assert "finished" in trace.locator(".anb-badge").first.inner_text()
    assert "The gate is open." in trace.inner_text()
