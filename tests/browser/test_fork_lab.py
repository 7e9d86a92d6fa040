"""Fork from here in JupyterLab, in headless Chromium (issue 38).

The notebook (tests/browser/notebooks/fork.ipynb, written by make_notebooks.py) runs an agent
with a scripted model through ``%%agent``, then ``%agent --fork 0``. The test does what a person
would: reads the fork editor prefilled with step 0's tool result, types another one, clicks
"Fork from here", and reads the fork's trace below: the new answer, the recorded step folded,
the diff with the parent. (A finished trace is static HTML, so its forks start from the magic.)
"""

from __future__ import annotations

from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect


def test_fork_from_here_in_the_browser(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, "fork.ipynb")
    expect(page.locator(".jp-OutputArea-output", has_text="Sunny in Paris.").first).to_be_visible(timeout=60_000)
    panel = page.locator(".anb-fork").first
    editor = panel.locator("textarea").first
    expect(editor).to_have_value("sunny", timeout=30_000)
    editor.fill("heavy rain")
    editor.blur()  # the widget syncs the text on change
    panel.get_by_role("button", name="Fork from here").click()
    forked = panel.locator(".anb-trace").first
    expect(forked).to_contain_text("Rain in Paris: take a coat.", timeout=60_000)
    expect(forked).to_contain_text("heavy rain", timeout=30_000)
    # the recorded step is folded, the live one open
    assert forked.locator("details.anb-depth").first.get_attribute("open") is None
    assert forked.locator("details.anb-depth").last.get_attribute("open") is not None
    expect(panel).to_contain_text("diff with the parent run", timeout=30_000)
    # what the fork sent, and what of it is the recording's (issue 45)
    expect(panel).to_contain_text("model calls 1 (+1 recorded)", timeout=30_000)
    expect(panel).to_contain_text("step [0] is the recording's, step [0]'s result edited (folded)")
    screenshot(panel, "fork_from_here.png")
