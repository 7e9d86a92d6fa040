"""The documentation site: `./dev docs` builds it strictly and offline (issue 49).

The site is built once (module fixture, into a temporary folder) with ``mkdocs build --strict``:
a broken link or anchor, a missing reference, a docstring griffe cannot read or a notebook that
fails to render fails it. The checks read the built HTML: every page of the navigation, the search
index, each notebook page's static traces and Binder link, no script from a notebook output, no
request to another machine, and an API entry for every public name.
"""

from __future__ import annotations

import doctest
import html.parser
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
sys.path.insert(0, str(ROOT / "docs"))
import hooks  # noqa: E402  (docs/hooks.py: the site's nav, API pages and notebook exporter)

pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]')")
import yaml  # noqa: E402  (mkdocs's own dependency)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def _nav_pages(nav: list[Any]) -> list[str]:
    pages: list[str] = []
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def _html_name(page: str) -> str:
    if page.endswith("README.md"):
        return page.removesuffix("README.md") + "index.html"
    return re.sub(r"\.(md|ipynb)$", ".html", page)


class _Scan(html.parser.HTMLParser):
    """Scripts, event handlers and remote loads inside the notebook's own part of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # > 0 inside <div class="jupyter-wrapper">
        self.scripts = 0
        self.handlers: list[str] = []
        self.remote: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if self.depth:
            self.depth += tag == "div"
        elif tag == "div" and "jupyter-wrapper" in (names.get("class") or ""):
            self.depth = 1
        if tag in ("script", "link", "img", "iframe") and re.match(r"(https?:)?//", names.get("src") or ""):
            self.remote.append(f"{tag} {names.get('src')}")
        if tag == "link" and re.match(r"(https?:)?//", names.get("href") or ""):
            self.remote.append(f"link {names.get('href')}")
        if not self.depth:
            return
        self.scripts += tag == "script"
        self.handlers += [f"{tag} {k}" for k in names if k.startswith("on")]
        self.handlers += [f"{tag} {k}" for k, v in attrs if (v or "").strip().lower().startswith("javascript:")]

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag == "div":
            self.depth -= 1


def _scan(path: Path) -> _Scan:
    scan = _Scan()
    scan.feed(path.read_text(encoding="utf-8"))
    return scan


def test_every_page_of_the_navigation_is_built(site: Path) -> None:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    pages = _nav_pages(nav) + [f"notebooks/{p.name}" for p in NOTEBOOKS]
    missing = [p for p in pages if not (site / _html_name(p)).is_file()]
    assert not missing
    home = (site / "index.html").read_text(encoding="utf-8")
    for path in NOTEBOOKS:  # the Notebooks section lists every notebook, with no edit of mkdocs.yml
        assert f'href="notebooks/{path.stem}.html"' in home, path.name


def test_search_works_offline_and_finds_the_terms(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    text = " ".join(doc["title"] + " " + doc["text"] for doc in index["docs"])
    for term in ("fork", "Compaction", "cassette", "UnTooled"):
        assert re.search(rf"\b{term}\b", text), term
    # Material's offline plugin: the index as a script, and the Worker shim served from the site
    assert (site / "search" / "search_index.js").read_text(encoding="utf-8").startswith("var __index =")
    assert (site / "assets" / "iframe-worker" / "shim.js").is_file()


def test_nothing_is_loaded_from_another_machine(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    remote = {str(p.relative_to(site)): _scan(p).remote for p in pages}
    assert not {k: v for k, v in remote.items() if v}
    assert "fonts.googleapis" not in (site / "index.html").read_text(encoding="utf-8")


def test_each_notebook_page_shows_its_static_traces_and_runs_no_output_script(site: Path) -> None:
    binder = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["extra"]["binder"]
    for path in NOTEBOOKS:
        page = site / "notebooks" / f"{path.stem}.html"
        text = page.read_text(encoding="utf-8")
        if 'class=\\"anb' in path.read_text(encoding="utf-8") or "anb" in _stored_trace_keys(path):
            assert 'class="anb' in text, f"{path.name}: no static trace on its page"
        assert "Loading widget" not in text and "widget-view+json" not in text, path.name
        assert f'href="{binder}/HEAD?labpath=notebooks/{path.name}"' in text, path.name
        scan = _scan(page)
        assert scan.scripts == 0 and not scan.handlers, (path.name, scan.handlers)


def _stored_trace_keys(path: Path) -> str:
    nb = json.loads(path.read_text(encoding="utf-8"))
    keys = {k for cell in nb["cells"] for out in cell.get("outputs", ()) for k in out.get("metadata", {})}
    return " ".join(sorted(keys))


def test_a_hostile_notebook_renders_inert(tmp_path: Path) -> None:
    import mkdocs_jupyter.nbconvert2 as nbc2

    hooks._install_exporter()
    outputs = [
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {
                "text/html": '<script>alert(1)</script><img src=x onerror="alert(2)"><b>kept</b>',
                "text/plain": "x",
            },
        },
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {"application/javascript": "alert(3)", "text/plain": "js"},
        },
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {
                "application/vnd.jupyter.widget-view+json": {"model_id": "m", "version_major": 2, "version_minor": 0},
                "text/plain": "a widget's text",
            },
        },
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {"text/html": "<a href='javascript:alert(4)'>$\\href{x}{y}$</a>", "text/plain": "t"},
        },
        {
            "output_type": "display_data",
            "metadata": {},
            "data": {"text/markdown": "**md** <script>alert(7)</script>", "text/plain": "m"},
        },
    ]
    markdown = "# Title\n\n<script>alert(5)</script><img src=x onerror=alert(6)>"
    nb = {
        "cells": [
            {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": markdown},
            {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "source": "x", "outputs": outputs},
        ],
        "metadata": {
            "widgets": {
                "application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2, "version_minor": 0}
            }
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "hostile.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    body = nbc2.nb2html(str(path), include_requirejs=False, custom_mathjax_url="")
    scan = _Scan()
    scan.feed(body)
    assert scan.scripts == 0 and not scan.handlers and not scan.remote, (scan.handlers, scan.remote)
    assert "<b>kept</b>" in body  # the output is shown, cleaned, not dropped
    assert "text" in body.split("a widget", 1)[1][:20]  # a widget output keeps its text form
    assert "alert(3)" not in body and "mathjax_ignore" in body and "unpkg" not in body
    assert 'id="Title"' in body and "<strong>md</strong>" in body  # headings keep their anchors


def test_every_public_name_has_a_reference_entry(site: Path) -> None:
    for page, module in hooks.API_MODULES.items():
        text = (site / _html_name(page)).read_text(encoding="utf-8")
        for name in importlib.import_module(module).__all__:
            assert f'id="{module}.{name}"' in text, f"{module}.{name}: no anchor on {page}"
            where = hooks._defined_at(module, name)
            rendered = [p for p in hooks.API_MODULES if f'id="{where}"' in (site / _html_name(p)).read_text("utf-8")]
            assert rendered, f"{module}.{name} ({where}): no mkdocstrings entry"


def test_the_site_helpers_examples_run() -> None:
    import griffe_docstrings

    assert doctest.testmod(griffe_docstrings).failed == 0
    assert doctest.testmod(hooks).failed == 0


def test_readme_fits_on_a_few_screens_and_links_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 260
    links = re.findall(r"\]\(((?:docs|notebooks)/[^)#]+)", readme)
    assert links and all((ROOT / link).exists() for link in links), links
    for command in ("./dev demo", "./dev test", "./dev docs"):
        assert command in readme


def test_the_pages_self_contained_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the examples that need no model or server (scripted providers): run as a reader would, a
    # page's blocks in order in one namespace, in a folder of their own (a page may write files)
    import agentnb

    monkeypatch.chdir(tmp_path)
    ran = 0
    for page in sorted((ROOT / "docs").glob("*.md")):
        namespace: dict[str, object] = {"__name__": "__docs__"}
        try:
            for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
                if "ScriptedProvider" in block:
                    exec(compile(block, str(page), "exec"), namespace)
                    ran += 1
        finally:
            agentnb.keep_runs(None)  # a page that keeps runs stops here
            for value in namespace.values():  # a sandbox a page started is shut down
                if hasattr(value, "shutdown") and type(value).__module__.startswith("agentnb.kernel"):
                    value.shutdown()
    assert ran >= 8
