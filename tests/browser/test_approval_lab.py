"""Approving tool calls with the trace widget's buttons, in JupyterLab in headless Chromium.

The notebook (tests/browser/notebooks/approval.ipynb, written by make_notebooks.py) runs an
agent whose tool requires approval, with a scripted model, in a live kernel. The test clicks
what a person would: Approve, Deny with a reason, Edit arguments; then reads what the tool did
and what the model was told, as the kernel printed them in the next cell.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from lab_harness import open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

NOTEBOOK = "approval.ipynb"

#: The approval panel of the n-th trace widget on the page, once it shows a pending call.
_PENDING_JS = """([n, id]) => { const t = document.querySelectorAll('.anb-trace')[n];
  const p = t && t.querySelector('.anb-approval-panel');
  return !!p && p.offsetParent !== null && p.textContent.includes('Approve this tool call?')
         && (!id || p.textContent.includes(id)); }"""


def _pending(page: Any, n: int, call_id: str = "", *, clicked: Any = None) -> Any:
    """The n-th trace's approval panel once it shows ``call_id`` pending.

    ``clicked``: the button just clicked to settle the call before. A click can land while
    JupyterLab lays the page out again (Run All is still queueing cells), and so reach no
    button: when the panel has not moved on after 10 s, the button is clicked once more, in the
    DOM, and the test prints so. (Seen in 2 of about 8 full runs on a fresh clone, never alone
    in 18 runs; the cause is not known: a first click the kernel dropped would pass here too.)
    """
    try:
        page.wait_for_function(_PENDING_JS, arg=[n, call_id], timeout=10_000 if clicked is not None else 30_000)
    except Exception:
        if clicked is None:
            raise _stuck(page, n, call_id) from None
        print(f"the click before {call_id} had no effect after 10 s: clicked again (in the DOM)")
        clicked.dispatch_event("click")
        try:
            page.wait_for_function(_PENDING_JS, arg=[n, call_id], timeout=30_000)
        except Exception:
            raise _stuck(page, n, call_id) from None
    panel = page.locator(".anb-trace").nth(n).locator(".anb-approval-panel")
    panel.scroll_into_view_if_needed()
    return panel


def _stuck(page: Any, n: int, call_id: str) -> AssertionError:
    trace = page.locator(".anb-trace").nth(n)
    return AssertionError(
        f"no approval panel for {call_id or 'a call'}; the trace reads:\n{trace.inner_text()[-1500:]}"
    )


def _output(page: Any, starts: str) -> str:
    out = page.locator(".jp-OutputArea-output", has_text=starts).first
    out.wait_for(timeout=30_000)
    out.scroll_into_view_if_needed()
    return str(out.inner_text()).strip()


def test_approve_deny_edit_and_a_blocking_run_in_the_browser(lab: Any, page: Any) -> None:
    open_and_run_all(page, lab, NOTEBOOK)
    trace = page.locator(".anb-trace").first

    # --- 1. the first call waits: the widget says so, nothing has run -------------------------
    panel = _pending(page, 0, "c1")
    expect(trace.locator(".anb-badge").first).to_have_text("paused", timeout=30_000)
    assert json.loads(panel.locator("pre").inner_text()) == {"path": "/tmp/old.log"}
    depth = trace.locator(".anb-depth").last
    expect(depth).to_contain_text("waiting for approval (widget)", timeout=30_000)
    expect(depth).to_contain_text("paused before this tool call", timeout=30_000)
    expect(trace).not_to_contain_text("running…", timeout=30_000)
    expect(trace).not_to_contain_text("waiting for the model", timeout=30_000)
    screenshot(trace, "approval_pending.png")
    # no horizontal scrollbar: nothing in the panel is wider than the panel
    wide = panel.evaluate(
        "p => [p, ...p.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1 && "
        "getComputedStyle(e).overflowX !== 'visible').map(e => e.className)"
    )
    assert wide == [], wide
    approve = panel.locator(".widget-button[title=\"Approve\"]")
    approve.click()

    # --- 2. deny with a reason the model reads ----------------------------------------------
    panel = _pending(page, 0, "c2", clicked=approve)
    assert json.loads(panel.locator("pre").inner_text()) == {"path": "/etc/passwd"}
    panel.locator("input[type=text]").fill("never touch /etc")
    deny = panel.locator(".widget-button", has_text="Deny")
    deny.click()

    # --- 3. edit the arguments: a wrong edit first (shown, the call still waits) -------------
    panel = _pending(page, 0, "c3", clicked=deny)
    panel.locator("textarea").fill('{"path": 3}')
    panel.locator(".widget-button", has_text="Run with these arguments").click()
    panel.locator(".anb-bad", has_text="invalid arguments").wait_for(timeout=10_000)
    expect(panel).to_contain_text("not of type 'string'", timeout=30_000)
    expect(trace.locator(".anb-badge").first).to_have_text("paused", timeout=30_000)
    panel.locator("textarea").fill('{"path": "/tmp/notes.txt"}')
    panel.locator(".widget-button", has_text="Run with these arguments").click()

    # --- the run ends; the trace shows every decision, the panel is gone ---------------------
    # The run has ended: its display is replaced by static HTML (what a saved notebook keeps).
    page.wait_for_function(
        "() => { const t = document.querySelector('.anb-trace'); const b = t && t.querySelector('.anb-badge');"
        " return !!b && b.textContent === 'finished' && t.classList.contains('anb-static'); }",
        timeout=30_000,
    )
    page.wait_for_timeout(300)
    trace = page.locator(".anb-trace").first
    trace.scroll_into_view_if_needed()
    body = trace.inner_text()
    assert "approved by widget" in body
    assert "denied by widget" in body and "never touch /etc" in body
    assert "approved with edited arguments by widget" in body
    assert "waiting for approval" not in body
    titles = [t.split(" · ")[1] for t in trace.locator(".anb-depth > summary").all_inner_texts()]
    assert titles == ["delete_file ✓", "delete_file ✗", "delete_file ✓", "answer"], titles  # denied: not "…"
    assert "tool calls 3/10" in trace.locator(".anb-head").inner_text()
    screenshot(trace, "approval_finished.png")

    # What really happened, printed by the kernel in the next cell.
    lines = _output(page, "ran:").splitlines()
    assert lines == [
        "ran: ['/tmp/old.log', '/tmp/notes.txt']",
        "model read: ['deleted /tmp/old.log', 'The call was denied and not run: never touch /etc']",
        "decisions: [('c1', 'approve', 'widget'), ('c2', 'deny', 'widget'), ('c3', 'edit', 'widget')]",
    ], lines

    # --- agent.run() holds its cell: the cell's thread serves the widget's messages while a call
    # waits, so Approve and Stop reach the run; later cells (queued by Run All) wait their turn.
    # --- agent.run(): the cell is busy ([*]) and the panel still answers clicks ---------------
    panel = _pending(page, 1)
    sync = page.locator(".anb-trace").nth(1)
    expect(sync.locator(".anb-badge").first).to_have_text("paused", timeout=30_000)
    assert json.loads(panel.locator("pre").inner_text()) == {"path": "/tmp/sync.txt"}
    prompts = page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()
    assert prompts[3].strip() == "[*]:" and prompts[4].strip() == "[*]:", prompts  # held, and queued
    screenshot(sync, "approval_pending_run.png")
    panel.locator(".widget-button[title=\"Approve\"]").click()
    line = _output(page, "run() returned:")
    assert line == "run() returned: answer | Deleted /tmp/sync.txt. | /tmp/sync.txt", line

    # --- Stop while agent.run() waits for approval: the run ends, the call never runs --------
    _pending(page, 2)
    stopper = page.locator(".anb-trace").nth(2)
    stopper.locator(".widget-button", has_text="Stop").click()
    line = _output(page, "stopped run() returned:")
    assert line == "stopped run() returned: cancelled | ran never.txt: False", line
    page.wait_for_function(
        "() => { const b = document.querySelectorAll('.anb-trace')[2].querySelector('.anb-badge');"
        " return !!b && b.textContent === 'stopped'; }",
        timeout=10_000,
    )
    expect(page.locator(".anb-trace").nth(2)).not_to_contain_text("waiting for approval", timeout=30_000)
