"""Hostile model and tool text in JupyterLab and in the static export, in headless Chromium (issue 22).

A scripted model streams payloads, a tool returns them, another fails with them in its error,
and the answer is all of them. Each payload would set ``document.title`` (to ``PWN...``) or
fetch from ``evil.example`` if it became live HTML. Checked: the title, the DOM of the outputs
(no script, no handler, no remote image), and Playwright's request log (no request leaves
127.0.0.1), live, after save and reload, and in the exported HTML file.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from lab_harness import NOTEBOOKS, open_and_run_all, screenshot

pytestmark = pytest.mark.browser

NOTEBOOK = "hostile.ipynb"

_LIVE_MARKUP = """() => {
  // Our HTML: every element checked. JupyterLab's own chrome has SVG icons, so around it only
  // scripts and frames count.
  const area = [...document.querySelectorAll('.anb, .anb-static, .anb-md')];
  const bad = [...document.querySelectorAll('.jp-OutputArea script, .jp-OutputArea iframe, iframe')].map(e => e.tagName);
  for (const root of area) {
    for (const el of root.querySelectorAll('*')) {
      const tag = el.tagName.toLowerCase();
      if (['script', 'iframe', 'object', 'embed', 'form', 'base', 'meta', 'link', 'svg', 'math'].includes(tag)) bad.push(tag);
      for (const a of el.attributes) {
        if (a.name.startsWith('on') && !el.classList.contains('anb-copy')) bad.push(tag + ' ' + a.name);
        if (/^\\s*(javascript|vbscript|data:text)/i.test(a.value) && ['href', 'src', 'action'].includes(a.name)) bad.push(tag + ' ' + a.value);
        if (a.name === 'style' && /url\\(|image-set|expression/i.test(a.value)) bad.push(tag + ' style ' + a.value);
      }
      if (tag === 'img' && !(el.getAttribute('src') || '').startsWith('data:image/')) bad.push('img ' + el.getAttribute('src'));
    }
  }
  return bad;
}"""


def _watch(page: Any) -> list[str]:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    return requests


def _left_the_machine(requests: list[str]) -> list[str]:
    out = []
    for url in requests:
        parsed = urlparse(url)
        if parsed.scheme in ("data", "blob", "about", "file"):
            continue
        if parsed.hostname != "127.0.0.1" or "evil.example" in url or "PWN" in url:
            out.append(url)
    return out


def _assert_inert(page: Any, requests: list[str]) -> None:
    assert "PWN" not in page.evaluate("() => document.title")
    assert page.evaluate(_LIVE_MARKUP) == []
    assert _left_the_machine(requests) == []


def test_hostile_text_stays_text_live_and_after_reload(lab: Any, page: Any) -> None:
    requests = _watch(page)
    open_and_run_all(page, lab, NOTEBOOK)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.anb-badge')].filter(b => b.textContent === 'finished').length >= 2",
        timeout=60_000,
    )
    page.wait_for_timeout(1500)  # an onerror / onload would have fired by now
    _assert_inert(page, requests)
    trace = page.locator(".anb-trace").first
    trace.scroll_into_view_if_needed()
    answer = trace.locator(".anb-md").first
    text = answer.inner_text()
    for marker in ("PWN1", "PWN2", "PWN5", "PWN7", "PWN13", "PWN22"):
        assert marker in text, marker  # shown as text, not run
    assert "image: PWN7 http://evil.example/PWN7.png (not loaded)" in text
    assert "<script>document.title='PWN2'</script>" in text
    body = trace.inner_text()
    assert "ValueError" in body and "fetch_page" in body
    _assert_inert(page, requests)
    screenshot(trace, "hostile_trace.png")

    # Hover and click over everything the answer shows: no handler, no navigation.
    for el in answer.locator("p, code, span").all()[:40]:
        el.hover(timeout=2_000)
    _assert_inert(page, requests)

    # Save, reload with the kernel still running: the outputs render again, still inert.
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_timeout(1000)
    page.reload()
    page.locator(".anb-md").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    _assert_inert(page, requests)


def _jupyter(*args: str, cwd: Path) -> None:
    jupyter = str(Path(sys.executable).parent / "jupyter")
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(cwd / "config"), "JUPYTER_RUNTIME_DIR": str(cwd / "runtime")}
    subprocess.run([jupyter, *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=180)


def test_hostile_text_stays_text_in_the_static_export(tmp_path: Path, page: Any, executed: Path) -> None:
    _executed(executed, tmp_path)
    _jupyter("nbconvert", "--to", "agentnb_html", "run.ipynb", cwd=tmp_path)
    requests = _open_offline_file(page, tmp_path / "run.html")
    trace = page.locator(".anb-static").first
    page.wait_for_timeout(1000)
    assert "PWN" not in page.evaluate("() => document.title")
    assert page.evaluate(_LIVE_MARKUP) == []
    assert not [u for u in requests if "evil.example" in u or "PWN" in u]
    assert "PWN1" in page.locator(".anb-md").first.inner_text()
    screenshot(trace, "hostile_static_export.png")


@pytest.fixture(scope="module")
def executed(tmp_path_factory: Any) -> Path:
    """The hostile notebook run to its end by nbconvert, its outputs stored (static traces); once
    for the module."""
    folder = tmp_path_factory.mktemp("hostile")
    shutil.copy(NOTEBOOKS / NOTEBOOK, folder / "run.ipynb")
    _jupyter("nbconvert", "--to", "notebook", "--execute", "--inplace", "run.ipynb", cwd=folder)
    return folder / "run.ipynb"


def _executed(executed: Path, tmp_path: Path) -> Path:
    shutil.copy(executed, tmp_path / "run.ipynb")
    return tmp_path / "run.ipynb"


def _open_offline_file(page: Any, path: Path) -> list[str]:
    requests: list[str] = []

    def block(route: Any) -> None:  # offline: the file loads; everything else is recorded and refused
        requests.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    page.route("**/*", block)
    page.goto(path.as_uri())
    page.locator(".anb-static").first.wait_for(timeout=10_000)
    return requests


def test_hostile_text_stays_text_in_both_exports(tmp_path: Path, page: Any, executed: Path) -> None:
    """The preprocessor on nbconvert's own HTML export, beside the agentnb_html exporter above."""
    _executed(executed, tmp_path)
    _jupyter(
        "nbconvert",
        "--to",
        "html",
        "--HTMLExporter.preprocessors=agentnb.notebook.export.StaticTraces",
        "--output",
        "plain.html",
        "run.ipynb",
        cwd=tmp_path,
    )
    requests = _open_offline_file(page, tmp_path / "plain.html")
    page.wait_for_function("() => document.readyState === 'complete'")
    assert "PWN" not in page.evaluate("() => document.title")
    assert page.evaluate(_LIVE_MARKUP) == []
    assert not [u for u in requests if "evil.example" in u or "PWN" in u]
    shown = page.locator(".anb-static").first.inner_text()
    assert "ontoggle=document.title='PWN24'" in shown  # the payload, as text


@pytest.mark.parametrize("trusted", [True, False])
def test_a_saved_hostile_notebook_reopened_cold_is_inert(
    lab: Any, page: Any, tmp_path: Path, trusted: bool, executed: Path
) -> None:
    """Reopened from disk (the run long over), signed by the user or never signed: in the
    trusted view the handlers would run, in the untrusted one a style would fetch."""
    name = f"cold_{'trusted' if trusted else 'untrusted'}.ipynb"
    shutil.copy(executed, lab.root / "work" / name)
    if trusted:
        _jupyter("trust", name, cwd=lab.root / "work")
    requests = _watch(page)
    page.goto(lab.notebook_url(name))
    page.locator(".anb-static").first.wait_for(timeout=60_000)
    # the stored traces are rendered; whatever would fire on load or on toggle, fires now
    page.wait_for_function("() => document.querySelectorAll('.anb-static details').length > 2", timeout=30_000)
    for details in page.locator(".anb-static details").all()[:30]:
        details.evaluate("e => { e.open = !e.open; }")
    page.wait_for_function("() => document.readyState === 'complete'")
    _assert_inert(page, requests)
    text = page.locator(".anb-static").first.inner_text()
    assert "PWN24" in text and "PWN27" in text
