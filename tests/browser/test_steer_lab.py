"""Steering a running agent from the trace's "Tell the agent…" box, in JupyterLab in headless Chromium.

The notebook (tests/browser/notebooks/steer.ipynb, written by make_notebooks.py) runs
``agent.run(..., on_event=trace)``: the cell is busy while the run's tool waits for the person
to say something. The test types what a person would, with hostile markup in it, clicks Send,
and reads what the model's next request carried (printed by the kernel in the next cell), the
trace's note where it went in (text, not markup), and that the box is gone once the run ended.
"""

from __future__ import annotations

from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

SAID = "<b>also</b> check the 2024 column $x$"


def test_typing_in_the_box_while_the_run_waits_reaches_the_next_request(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, "steer.ipynb")
    trace = page.locator(".anb-trace").first
    box = trace.locator(".anb-steer")
    field = box.locator("input[type=text]")
    field.wait_for(state="visible", timeout=60_000)  # shown while the run goes on
    expect(field).to_have_attribute("placeholder", "Tell the agent…")
    prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
    assert prompts[1].strip() == "[*]:", prompts  # the cell is busy: agent.run() holds it
    field.fill(SAID)
    box.locator(".widget-button", has_text="Send").click()

    out = page.locator(".jp-OutputArea-output", has_text="model read:").first
    out.wait_for(timeout=60_000)
    lines = out.inner_text().strip().splitlines()
    assert lines == [f"model read: {SAID}", f"said: [(1, '{SAID}')]"], lines

    page.wait_for_function(  # the run ended: its live display becomes the static trace
        "() => { const t = document.querySelector('.anb-trace'); return !!t && t.classList.contains('anb-static'); }",
        timeout=30_000,
    )
    trace = page.locator(".anb-trace").first
    note = trace.locator(".anb-said").first
    note.scroll_into_view_if_needed()
    assert SAID in note.inner_text()  # shown as text
    assert note.locator("b").count() == 0  # never as markup
    assert page.locator(".anb-steer input:visible").count() == 0  # the box went with the run
    screenshot(trace, "steer_said.png")
