"""The trace widget and the debugger in JupyterLab, in headless Chromium (Playwright).

Screenshots go to artifacts/screenshots/ (the README's images are copied from there).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser

NOTEBOOK = "trace_and_debugger.ipynb"


def _badge(widget: Any) -> Any:
    return widget.locator(".anb-badge").first


def test_trace_widget_and_debugger(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, NOTEBOOK)

    # --- the live trace of the first run ------------------------------------------------
    trace = page.locator(".anb-trace").first
    trace.wait_for(timeout=30_000)
    # While the (slow, scripted) model works the header says running.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.anb-trace .anb-badge')].some(b => b.textContent === 'finished')",
        timeout=30_000,
    )
    header = trace.locator(".anb-head")
    assert "tool calls 4/10" in header.inner_text()
    titles = trace.locator(".anb-depth > summary")
    texts = [t for t in titles.all_inner_texts() if t.strip()]
    assert [re.match(r"Depth \d", t).group(0) for t in texts] == ["Depth 0", "Depth 1", "Depth 2", "Depth 3"], texts
    body = trace.inner_text()
    assert "Tool call weather" in body and "Tool call add" in body
    assert "repeat" in body and "not executed again" in body  # the dedup decision
    assert "show all" in body  # a long result is truncated with a toggle
    assert trace.locator("img[alt='attached image']").count() == 1
    answer = trace.locator(".jupyter-widget-Output, .widget-output").last
    answer.locator("strong", has_text="17").wait_for(timeout=30_000)  # Markdown rendered
    assert answer.locator("strong", has_text="17").count() == 1
    screenshot(trace, "trace_widget.png")
    assert _badge(trace).inner_text() == "finished"

    # --- the step-through debugger --------------------------------------------------------
    dbg = page.locator(".anb-debugger").first
    dbg.wait_for(timeout=30_000)
    step = dbg.locator(".widget-button", has_text="Step")
    message = dbg.locator(".anb-debugger-bar .widget-html")
    seen: list[str] = []
    while True:
        # Wait for a new pause (a message we have not seen yet, Step enabled) or the end.
        page.wait_for_function(
            """(seen) => { const d = document.querySelector('.anb-debugger');
                       const b = d && d.querySelector('.anb-badge');
                       if (b && b.textContent === 'finished') return true;
                       const m = d && d.querySelector('.anb-debugger-bar .widget-html');
                       const s = d && [...d.querySelectorAll('.widget-button')].find(x => x.textContent.includes('Step'));
                       return !!m && m.textContent.includes('paused') && !seen.includes(m.textContent) && !!s && !s.disabled; }""",
            arg=seen,
            timeout=30_000,
        )
        if _badge(dbg).inner_text() == "finished":
            break
        seen.append(message.inner_text())
        if "tool call add" in seen[-1]:
            screenshot(dbg, "debugger.png")
        step.click()
        assert len(seen) < 10, "the run did not finish"
    assert [s.strip() for s in seen] == [
        "paused before the model call at depth 0",
        "paused before tool call add(a=2, b=3) at depth 0",
        "paused before the model call at depth 1",
    ]
    # The kernel ran the next cell while the debugger was paused.
    free = page.locator(".jp-OutputArea-output", has_text="kernel is free while")
    assert free.inner_text().strip() == "kernel is free while paused before the model call at depth 0"
    # The final display update re-renders the view: wait until it is there again.
    page.wait_for_timeout(500)
    dbg = page.locator(".anb-debugger").first
    assert dbg.locator(".jupyter-widget-Output strong, .widget-output strong", has_text="5").count() == 1
    assert "tool calls 1/10" in dbg.locator(".anb-head").inner_text()
    screenshot(dbg, "debugger_finished.png")


def test_stop_button_ends_a_running_cell(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, "stop_button.ipynb")
    trace = page.locator(".anb-trace").first
    trace.wait_for(timeout=30_000)
    # Let it get going (depth 1 has started), then click Stop while the cell is still busy.
    page.wait_for_function(
        "() => [...document.querySelectorAll('.anb-trace .anb-depth > summary')].some(s => s.textContent.startsWith('Depth 1'))",
        timeout=30_000,
    )
    assert _badge(trace).inner_text() == "running"
    screenshot(trace, "trace_running.png")
    trace.locator(".widget-button", has_text="Stop").click()
    page.wait_for_function(
        "() => { const b = document.querySelector('.anb-trace .anb-badge'); return !!b && b.textContent === 'stopped'; }",
        timeout=30_000,
    )
    # The cell returned with a cancelled result and the next cell ran.
    out = page.locator(".jp-OutputArea-output", has_text="after stop:")
    out.wait_for(timeout=30_000)
    assert out.inner_text().strip() == "after stop: cancelled True"
