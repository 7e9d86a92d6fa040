"""Fork from here on a step of a FINISHED trace, in JupyterLab in headless Chromium (issue 38).

The notebook (tests/browser/notebooks/fork_bar.ipynb, written by make_notebooks.py) runs an agent
with a scripted model through ``%%agent``: [0] weather(Paris), [1] weather(Oslo), [2] the answer.
When the run has ended its trace is static HTML, and the fork bar under it has a control per
step. The test does what a person would: clicks step [1], finds the fork editor prefilled with
that step's tool result, types another, clicks "Fork from here", and reads the fork's trace below
(the recorded steps folded, the live step's new answer) and its diff with the parent. Then it
labels the run (issue 48): 👎, a hostile note, an expected answer, Save; the label shows as text
under the editor and, once the next cell has run, in the static copy the bar leaves.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
NOTE = "<img src=x onerror=\"document.title='PWN'\"> costs $5 and $6"
expect = pytest.importorskip("playwright.sync_api").expect


def shot(locator: Any, name: str) -> None:
    """A screenshot in the artifacts, and a copy under /tmp (forkbar-*.png) to look at."""
    shutil.copy(screenshot(locator, name), f"/tmp/forkbar-{name}")


def test_fork_from_a_step_of_a_finished_trace(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, "fork_bar.ipynb")
    cell = page.locator(".jp-CodeCell").nth(1)
    trace = cell.locator(".anb-static.anb-trace")  # the finished trace: static HTML, no widget
    expect(trace).to_contain_text("Sunny in Paris, snow in Oslo.", timeout=60_000)
    bar = cell.locator(".anb-fork-bar")
    expect(bar).to_contain_text("Fork from here:", timeout=30_000)
    steps = bar.locator(".anb-fork-steps .widget-toggle-button")
    expect(steps).to_have_text(["[0] weather", "[1] weather", "[2] answer"], timeout=30_000)
    assert steps.nth(1).get_attribute("title") == "Fork from step [1]: it called weather"
    assert cell.locator(".anb-fork").count() == 0  # no editor until a step is clicked
    shot(cell.locator(".jp-OutputArea"), "finished.png")

    steps.nth(1).click()
    panel = cell.locator(".anb-fork")
    editor = panel.locator("textarea").first
    expect(editor).to_have_value("snow", timeout=30_000)  # step 1's tool result, as recorded
    expect(steps.nth(1)).to_have_class(re.compile("mod-active"))
    editor.fill("heavy snow")
    editor.blur()  # the widget syncs the text on change
    shot(cell.locator(".jp-OutputArea"), "editor.png")
    panel.get_by_role("button", name="Fork from here").click()

    forked = panel.locator(".anb-trace").first
    expect(forked).to_contain_text("Heavy snow in Oslo: stay in.", timeout=60_000)
    expect(forked).to_contain_text("heavy snow", timeout=30_000)
    depths = forked.locator("details.anb-depth")
    expect(depths).to_have_count(3, timeout=30_000)
    assert depths.nth(0).get_attribute("open") is None and depths.nth(1).get_attribute("open") is None
    assert depths.nth(2).get_attribute("open") is not None  # the recorded prefix folded, the live step open
    expect(panel).to_contain_text("fork of step [1]: tool result edited", timeout=30_000)
    panel.get_by_text("diff with the parent run").click()
    expect(panel).to_contain_text("differ first at step 1", timeout=30_000)
    shot(cell.locator(".jp-OutputArea"), "forked.png")
    # Label the run: the expected answer is prefilled with the run's answer, to edit.
    labeller = bar.locator(".anb-labeller")
    expected = labeller.locator("textarea")
    expect(expected).to_have_value("Sunny in Paris, snow in Oslo.", timeout=30_000)
    labeller.locator(".widget-toggle-button", has_text="bad").click()
    labeller.locator("input[type=text]").fill(NOTE)
    expected.fill("Sunny in Paris, heavy snow in Oslo.")
    expected.blur()
    labeller.get_by_role("button", name="Save label").click()
    expect(labeller).to_contain_text("note: " + NOTE, timeout=30_000)  # shown as text, under the editor
    expect(labeller).to_contain_text("Sunny in Paris, heavy snow in Oslo.")
    # A later cell: the recorded prefix's tool did not run again (only the first run's two
    # calls), one model request more; and the bar froze into the fork's static trace.
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:insert-cell-below')")
    later = page.locator(".jp-CodeCell").nth(2)
    later.locator(".cm-content").click()
    page.keyboard.type("print(ran, len(model.requests))")
    page.keyboard.press("Shift+Enter")
    expect(later.locator(".jp-OutputArea")).to_contain_text("['Paris', 'Oslo'] 4", timeout=30_000)
    expect(cell.locator(".anb-fork-bar")).to_have_count(0, timeout=30_000)
    frozen = cell.locator(".anb-static.anb-trace").nth(1)
    expect(frozen).to_contain_text("Heavy snow in Oslo: stay in.", timeout=30_000)
    expect(cell).to_contain_text("fork of step [1]: tool result edited")
    label = cell.locator(".anb-label")  # in the trace's static view (updated in place), once
    expect(label).to_have_count(1, timeout=30_000)
    expect(label).to_contain_text("👎 bad")
    expect(label).to_contain_text("note: " + NOTE)  # as text: no image, no math
    expect(label).to_contain_text("Sunny in Paris, heavy snow in Oslo.")
    assert cell.locator(".anb-static.anb-trace").first.locator(".anb-label").count() == 1
    assert cell.locator(".anb-label img, .anb-label mjx-container").count() == 0 and "PWN" not in page.title()
    shot(cell.locator(".jp-OutputArea"), "labelled.png")
    assert "model not found" not in cell.inner_text()
    shot(cell.locator(".jp-OutputArea"), "frozen.png")
