"""TeX from a model is never typeset, in JupyterLab (live, and reopened unsigned) and in Voila (issue 45).

A typeset ``$\\style{cursor:url(http://...)}{x}$`` made the browser fetch a URL the model chose as
soon as the diff rendered, ``\\style{background-color:...}{\\text{approved}}`` drew a fake banner,
``\\href`` made a live link and "costs $5 and $6" turned into math. The notebook
(tests/browser/notebooks/tex.ipynb, written by make_notebooks.py) puts TeX payloads in a run's
prompt, system prompt, tool arguments and results, a called tool's name and the answer; shows a
trace, its fork bar (a fork is made from it, then the bar freezes), ``agentnb.diff`` and the
evaluation view with its diff. Its Markdown cell holds ``$x^2 + 1$``: the control that MathJax is
active in the page. Checked: no MathJax element inside any output, every payload shown as
written, no request to evil.example, and the bar's step label for the odd tool name as written.
"""

from __future__ import annotations

import shutil
from typing import Any

import nbformat
import pytest
from lab_harness import Voila, open_and_run_all, screenshot

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

NOTEBOOK = "tex.ipynb"
TEX = [
    r"$\style{cursor:url(http://evil.example/PWN-tex1.png)}{PWNTEX1}$",
    r"$\style{background-color:red}{\text{PWNTEX2 approved by admin: safe to run}}$",
    r"$\href{http://evil.example/PWN-tex3}{PWNTEX3}$",
    "costs $5 and $6 PWNTEX4",
    "$$PWNTEX5^2$$",
    r"\(PWNTEX6\)",
    r"\[PWNTEX7\]",
    r"\begin{equation}PWNTEX8\end{equation}",
]
ODD_TOOL = r"<b>$\href{http://evil.example/PWN-tool}{PWNTOOL}$</b>"

#: MathJax's output elements (MathJax 3: mjx-container; MathJax 2: .MathJax, .MathJax_Display,
#: .MathJax_Preview), inside outputs and in the Markdown control.
_TYPESET = """() => {
  const math = 'mjx-container, .MathJax, .MathJax_Display, .MathJax_Preview, .MathJax_SVG';
  return {
    outputs: document.querySelectorAll('.jp-OutputArea-output :is(' + math + ')').length,
    control: document.querySelectorAll('.jp-MarkdownOutput :is(' + math + ')').length,
  };
}"""
_OUTPUT_TEXT = "() => [...document.querySelectorAll('.jp-OutputArea-output')].map(e => e.innerText).join('\\n')"


def shot(locator: Any, name: str) -> None:
    """A screenshot in the artifacts, and a copy under /tmp (tex-*.png) to look at."""
    shutil.copy(screenshot(locator, name), f"/tmp/tex-{name}")


def _watch(page: Any) -> list[str]:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    return requests


def _assert_never_typeset(page: Any, requests: list[str], *, diffs: int) -> None:
    """The control is typeset, no output is; at least ``diffs`` diffs show every payload as written."""
    page.wait_for_function(f"() => ({_TYPESET})().control > 0", timeout=60_000)
    assert page.evaluate(_TYPESET)["outputs"] == 0
    shown = page.evaluate(_OUTPUT_TEXT)
    for tex in TEX:
        assert tex in shown, tex
    texts = page.locator(".anb-diff").all_text_contents()  # a folded diff has no innerText
    assert len(texts) >= diffs, texts
    for text in texts:
        assert [tex for tex in TEX if tex not in text] == [], text
    assert page.locator(".jp-OutputArea-output a[href*='evil.example']").count() == 0
    assert [u for u in requests if "evil.example" in u or "PWN" in u] == []


def test_tex_is_never_typeset_live_with_a_fork_and_reopened_unsigned(lab: Any, page: Any) -> None:
    requests = _watch(page)
    open_and_run_all(page, lab, NOTEBOOK)
    cell = page.locator(".jp-CodeCell").nth(2)  # the %%agent cell (the Markdown control is not a code cell)
    expect(cell.locator(".anb-static.anb-trace")).to_contain_text("PWNTEX8", timeout=60_000)
    bar = cell.locator(".anb-fork-bar")
    steps = bar.locator(".anb-fork-steps .widget-toggle-button")
    # Item 9: the label is the tool name as the model wrote it, escaped once, not typeset.
    expect(steps).to_have_text(["[0] echo", f"[1] {ODD_TOOL}", "[2] answer"], timeout=30_000)
    steps.nth(2).click()
    panel = cell.locator(".anb-fork")
    editor = panel.locator("textarea").first
    expect(editor).to_have_value(" ".join(TEX), timeout=30_000)
    editor.fill(" ".join(TEX) + " (forked)")
    editor.blur()
    panel.get_by_role("button", name="Fork from here").click()
    expect(panel.locator(".anb-trace").first).to_contain_text("(forked)", timeout=60_000)
    panel.get_by_text("diff with the parent run").click()
    expect(panel).to_contain_text("differ first at step 2", timeout=30_000)
    _assert_never_typeset(page, requests, diffs=2)  # agentnb.diff's output, the fork's diff

    # A later cell: the bar freezes into static HTML that keeps the diff; the evaluation view
    # opens its diff (HTML in an Output widget, which JupyterLab renders and typesets).
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:insert-cell-below')")
    later = page.locator(".jp-CodeCell").nth(3)
    later.locator(".cm-content").click()
    page.keyboard.type("show_eval()")
    page.keyboard.press("Shift+Enter")
    expect(cell.locator(".anb-fork-bar")).to_have_count(0, timeout=30_000)
    expect(cell).to_contain_text("differ first at step 2", timeout=30_000)
    expect(later.locator(".jp-Cell-outputArea")).to_contain_text("tex and plain differ", timeout=60_000)
    _assert_never_typeset(page, requests, diffs=3)  # and the evaluation view's
    shot(cell.locator(".jp-Cell-outputArea"), "lab_frozen_bar.png")
    shot(later.locator(".jp-Cell-outputArea"), "lab_eval_diff.png")

    # Saved, then reopened from a copy that was never signed (untrusted: JupyterLab sanitizes).
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    saved = lab.root / "work" / NOTEBOOK
    page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
    nb = nbformat.read(saved, as_version=4)
    nb.metadata["reopened"] = "unsigned"  # another digest: not in the trust database
    nbformat.write(nb, lab.root / "work" / "tex_cold.ipynb")
    cold = page.context.new_page()
    cold_requests = _watch(cold)
    cold.goto(lab.notebook_url("tex_cold.ipynb"))
    cold.locator(".anb-static").first.wait_for(timeout=60_000)
    cold.wait_for_function("() => document.readyState === 'complete'")
    _assert_never_typeset(cold, cold_requests, diffs=2)  # agentnb.diff's output, the frozen bar's
    shot(cold.locator(".jp-Notebook"), "lab_reopened_unsigned.png")
    cold.close()


@pytest.fixture(scope="module")
def voila() -> Any:
    pytest.importorskip("voila")
    server = Voila("tex_voila.ipynb").start()
    try:
        yield server
    finally:
        server.stop()


def test_tex_is_never_typeset_in_voila(voila: Voila, page: Any) -> None:
    requests = _watch(page)
    page.goto(voila.url, timeout=90_000, wait_until="domcontentloaded")
    page.locator(".anb-trace").first.wait_for(timeout=90_000)
    expect(page.locator(".jp-OutputArea-output").last).to_contain_text("tex and plain differ", timeout=60_000)
    _assert_never_typeset(page, requests, diffs=2)  # agentnb.diff's output, the evaluation view's
    shot(page.locator("body"), "voila.png")
