"""Forks survive a save (issue 45, item 11), in JupyterLab and Notebook 7, in headless Chromium.

The notebook (tests/browser/notebooks/fork_saves.ipynb, written by make_notebooks.py) runs an
agent through ``%%agent`` (its trace and, under it, the fork bar), then ``%agent --fork 1`` (the
fork editor). The forks' model waits for ``open.flag``, so the test can save while one runs.
A person forks from the bar, forks that fork from its own "Fork…", forks in the editor, and
runs a later cell. At each moment the notebook is saved twice, without and with the widgets'
state, and each saved copy is reopened in a fresh page with a new kernel: every fork made so far
must be shown, and never "Error displaying widget: model not found", nor controls that nothing
answers.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_harness import Lab, open_and_run_all, open_notebook, output_data, save, screenshot, shutdown_kernel

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

NAME = "fork_saves.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"
BAR_FORK = "Heavy snow in Oslo: stay in."
NESTED_FORK = "Nested fork: hail in Oslo."
EDITOR_FORK = "Editor fork: fog in Oslo."
#: What each saved copy must show: in the trace's cell (1) and in the editor's (2, once run).
EXPECTED = {
    "during": (["fork of step [1]", "still running"], None),
    "forked": (["fork of step [1]", BAR_FORK, NESTED_FORK], None),
    "editor": (["fork of step [1]", BAR_FORK, NESTED_FORK], [EDITOR_FORK]),
    "later": (["fork of step [1]", BAR_FORK, NESTED_FORK], [EDITOR_FORK]),
}
#: The moments when each display is still live (its output holds the widget view and the copy).
LIVE = {"bar": ("during", "forked"), "editor": ("editor",)}


@pytest.fixture(scope="module", params=["lab", "notebook"])
def server(request: Any) -> Iterator[Lab]:
    if request.param == "notebook" and importlib.util.find_spec("notebook") is None:
        pytest.skip("Notebook 7 is not installed (pip install notebook)")
    lab = Lab(app=request.param).start()
    try:
        yield lab
    finally:
        lab.stop()


def new_page(browser: Any) -> tuple[Any, Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 2600}, device_scale_factor=1)
    return context, context.new_page()


def wait_for_copy(page: Any, cell: int, output: int, text: str) -> None:
    """Wait until the front end holds ``text`` in that output's static copy (what a save keeps)."""
    page.wait_for_function(
        """([c, o, text]) => { const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
             const outs = cells.get(c).outputs;
             return !!outs && outs.length > o && String(outs.get(o).data['text/html'] || '').includes(text); }""",
        arg=[cell, output, text],
        timeout=60_000,
    )


def keep(page: Any, lab: Lab, moment: str) -> list[str]:
    """Save now, without and then with the widgets' state; keep a copy of each file."""
    names = []
    for state in (False, True):
        save(page, widget_state=state)
        name = f"saved-{moment}-{'state' if state else 'nostate'}.ipynb"
        shutil.copy(lab.work / NAME, lab.work / name)
        names.append(name)
    save(page, widget_state=False)
    return names


def run_cell_below(page: Any, index: int, code: str) -> Any:
    """Type ``code`` into a new cell after cell ``index - 1`` and run it; the new cell."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:insert-cell-below')")
    cell = page.locator(".jp-CodeCell").nth(index)
    cell.locator(".cm-content").click()
    page.keyboard.type(code)
    page.keyboard.press("Shift+Enter")
    return cell


def fork_in(panel: Any, text: str) -> None:
    editor = panel.locator("textarea").first
    editor.fill(text)
    editor.blur()  # the widget syncs the text on change
    panel.get_by_role("button", name="Fork from here").first.click()


def test_forks_survive_a_save_at_any_moment(server: Lab, browser: Any) -> None:
    flag = server.work / "open.flag"
    flag.unlink(missing_ok=True)
    context, page = new_page(browser)
    kept: dict[str, list[str]] = {}
    try:
        open_and_run_all(page, server, NAME)
        cell = page.locator(".jp-CodeCell").nth(1)
        steps = cell.locator(".anb-fork-bar .anb-fork-steps .widget-toggle-button")
        expect(steps).to_have_text(["[0] weather", "[1] weather", "[2] answer"], timeout=60_000)

        # Fork step [1] from the bar; save while the fork runs (its model waits for the flag).
        steps.nth(1).click()
        panel = cell.locator(".anb-fork").first
        expect(panel.locator("textarea").first).to_have_value("snow", timeout=30_000)
        fork_in(panel, "heavy snow")
        wait_for_copy(page, 1, 1, "still running")
        kept["during"] = keep(page, server, "during")

        # The fork ends; fork the fork from its own "Fork…"; save.
        flag.touch()
        forked = panel.locator(".anb-trace").first
        expect(forked).to_contain_text(BAR_FORK, timeout=60_000)
        forked.get_by_role("button", name="Fork…").click()
        nested = forked.locator(".anb-fork").first
        expect(nested.locator("textarea").first).to_have_value("sunny", timeout=30_000)
        fork_in(nested, "hail")
        expect(nested.locator(".anb-trace").first).to_contain_text(NESTED_FORK, timeout=60_000)
        wait_for_copy(page, 1, 1, NESTED_FORK)
        assert "still running" not in output_data(page, 1, 1)
        screenshot(page.locator(".jp-Notebook"), f"fork_saves_{server.app}_live.png")
        kept["forked"] = keep(page, server, "forked")

        # A later cell opens the fork editor (%agent --fork 1): the bar freezes; fork there; save.
        editor_cell = run_cell_below(page, 2, "%agent --fork 1")
        expect(cell.locator(".anb-fork-bar")).to_have_count(0, timeout=30_000)
        in_editor = editor_cell.locator(".anb-fork").first
        expect(in_editor.locator("textarea").first).to_have_value("snow", timeout=30_000)
        fork_in(in_editor, "fog")
        expect(in_editor.locator(".anb-trace").first).to_contain_text(EDITOR_FORK, timeout=60_000)
        wait_for_copy(page, 2, 0, EDITOR_FORK)
        kept["editor"] = keep(page, server, "editor")

        # Another cell freezes the editor too; save.
        later = run_cell_below(page, 3, "print('later')")
        expect(later.locator(".jp-OutputArea")).to_contain_text("later", timeout=30_000)
        expect(editor_cell.locator(".anb-fork")).to_have_count(0, timeout=30_000)
        kept["later"] = keep(page, server, "later")
        shutdown_kernel(page)
    finally:
        context.close()

    for moment, names in kept.items():
        for name in names:
            check_file(server.work / name, moment)
            check_reopened(server, browser, name, moment)


def check_file(path: Path, moment: str) -> None:
    """The saved file itself holds every fork (what nbviewer, GitHub or an export would show)."""
    in_trace, in_editor = EXPECTED[moment]
    cells = json.loads(path.read_text())["cells"]
    shown = [("bar", cells[1]["outputs"][1], in_trace)]
    if in_editor is not None:
        shown.append(("editor", cells[2]["outputs"][0], in_editor))
    for what, output, texts in shown:
        html = output["data"]["text/html"]
        html = "".join(html) if isinstance(html, list) else html  # nbformat stores lines
        for text in texts:
            assert text in html, (path.name, what, text)
        if moment in LIVE[what]:  # the widget view, and the mark that its text/html is a copy
            assert WIDGET in output["data"] and output["metadata"].get("agentnb_static"), (path.name, what)
        else:  # frozen: nothing in it needs a kernel
            assert WIDGET not in output["data"], (path.name, what)


def check_reopened(lab: Lab, browser: Any, name: str, moment: str) -> None:
    in_trace, in_editor = EXPECTED[moment]
    context, page = new_page(browser)
    try:
        open_notebook(page, lab, name)  # a new kernel: the widgets' models are gone
        notebook = page.locator(".jp-Notebook")
        cell, editor_cell = page.locator(".jp-CodeCell").nth(1), page.locator(".jp-CodeCell").nth(2)
        expect(cell.locator(".anb-static.anb-trace").first).to_contain_text("Sunny in Paris", timeout=60_000)
        for text in in_trace:
            expect(cell.locator(".jp-OutputArea")).to_contain_text(text, timeout=60_000)
        for text in in_editor or ():
            expect(editor_cell.locator(".jp-OutputArea")).to_contain_text(text, timeout=60_000)
        # the widget manager has given up on the saved views by now (or shown them from the state)
        page.wait_for_function(
            "() => !document.querySelector('.jp-Notebook').innerText.includes('Loading widget')", timeout=60_000
        )
        assert "model not found" not in notebook.inner_text(), name
        assert "Error displaying widget" not in notebook.inner_text(), name
        assert cell.locator(".widget-toggle-button").count() == 0, name  # no control that nothing answers
        assert page.locator(".anb-fork textarea").count() == 0, name
        shot = screenshot(notebook, f"fork_saves_{lab.app}_{Path(name).stem}.png")
        shutil.copy(shot, f"/tmp/{shot.name}")
        shutdown_kernel(page)
    finally:
        context.close()
