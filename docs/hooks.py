"""MkDocs hooks for agentnb's site (mkdocs.yml `hooks:`): the notebooks' navigation and their HTML.

- **Every notebook in the navigation.** The "Notebooks" section is filled with every
  ``notebooks/*.ipynb`` in name order (after ``notebooks/README.md``), so a new notebook needs no
  edit here.
- **Every public name in the API reference.** ``api/agentnb.md``, ``api/testing.md``,
  ``api/evaluation.md`` and ``api/providers.md`` are generated from each module's ``__all__``: one
  mkdocstrings entry per name, at the object's defining module, under an anchor named as the user
  imports it (``#agentnb.evaluate``), so a new public name needs no edit here.
- **Notebook outputs stay static and inert.** mkdocs-jupyter renders each notebook's stored
  outputs with nbconvert. Its exporter is swapped for one that (1) replaces each agentnb widget
  output by its stored static snapshot (:class:`agentnb.notebook.export.StaticTraces`, as
  ``jupyter nbconvert --to agentnb_html`` does), (2) drops any other widget output (its text form
  stays) and the notebook's saved widget state, so no widget manager is loaded from a CDN and no
  page says "Loading widget...", (3) passes every HTML output through
  :func:`agentnb.untrusted.static_view` (a notebook file is untrusted: no script, no handler, no
  ``url()``, under a no-math root) and drops JavaScript outputs, (4) cleans Markdown cells and
  Markdown outputs with nh3 (:func:`clean_cell_html`), and (5) uses a template without
  the MathJax, Mermaid and widget scripts nbconvert would load from CDNs.
"""

from __future__ import annotations

import glob
import os
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NOTEBOOKS_SECTION = "Notebooks"
WIDGET = "application/vnd.jupyter.widget-view+json"
SCRIPT_MIMES = ("application/javascript", "text/javascript", "application/vnd.jupyter.widget-state+json")


def on_config(config: Any) -> Any:
    """Fill the Notebooks section of the nav; swap mkdocs-jupyter's exporter for the site's."""
    notebooks = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    entries: list[Any] = [{"Overview": "notebooks/README.md"}]
    entries += [{_title(path): f"notebooks/{os.path.basename(path)}"} for path in notebooks]
    for item in config["nav"] or []:
        if isinstance(item, dict) and NOTEBOOKS_SECTION in item:
            item[NOTEBOOKS_SECTION] = entries
    _install_exporter()
    return config


_PACKAGE: dict[str, Any] = {}  # griffe's reading of agentnb, once per build
_RENDERED: dict[str, str] = {}  # an object's defining path -> the first API module listing it
API_MODULES = {
    "api/agentnb.md": "agentnb",
    "api/testing.md": "agentnb.testing",
    "api/evaluation.md": "agentnb.evaluation",
    "api/providers.md": "agentnb.providers",
}


def on_files(files: Any, config: Any) -> Any:
    """Add the generated API pages (one entry per public name)."""
    from mkdocs.structure.files import File

    _RENDERED.clear()
    for src_uri, module in API_MODULES.items():
        files.append(File.generated(config, src_uri, content=api_page(module)))
    return files


def api_page(module: str) -> str:
    """The Markdown of one API page: an anchor and a mkdocstrings entry for each public name."""
    import importlib

    mod = importlib.import_module(module)
    parts = [
        f"# `{module}`\n",
        f"Every public name of `{module}` (its `__all__`), from the docstrings. The examples in the "
        "docstrings run as doctests in the test suite (`tests/test_public_api.py`).\n",
    ]
    for name in mod.__all__:
        path = _defined_at(module, name)
        if path in _RENDERED and _RENDERED[path] != module:  # one entry per object: link to it
            first = _RENDERED[path]
            page = next(uri for uri, m in API_MODULES.items() if m == first).removeprefix("api/")
            parts.append(
                f'<span id="{module}.{name}"></span>\n\n## {name}\n\n'
                f"`{module}.{name}` is [`{first}.{name}`]({page}#{first}.{name}).\n"
            )
            continue
        _RENDERED[path] = module
        parts.append(
            f'<span id="{module}.{name}"></span>\n\n'
            f'::: {path}\n    options:\n      heading: "{name}"\n      toc_label: "{name}"\n'
        )
    return "\n".join(parts)


def _defined_at(module: str, name: str) -> str:
    """Where ``module.name`` is defined, read by griffe without importing it (heavy optional
    dependencies stay out of the build); a lazily exported name is looked up in the module its
    ``_LAZY`` map names, or else imported (agentnb's own modules, light by design)."""
    import importlib

    import griffe

    if _PACKAGE.get("agentnb") is None:
        _PACKAGE["agentnb"] = griffe.load("agentnb", search_paths=[ROOT], resolve_aliases=False)
    package = _PACKAGE["agentnb"]
    mod = importlib.import_module(module)
    lazy = getattr(mod, "_LAZY", {})
    path = f"{lazy[name]}.{name}" if name in lazy else f"{module}.{name}"
    try:
        obj = package[path.removeprefix("agentnb.")]
    except KeyError:  # made by a module __getattr__ griffe cannot read: ask the object itself
        value = getattr(mod, name)
        return f"{value.__module__}.{value.__qualname__}"
    while obj.is_alias:
        obj = package[obj.target_path.removeprefix("agentnb.")]
    return str(obj.path)


CELL_TAGS = {"details", "summary", "div", "span", "pre", "code", "table", "thead", "tbody", "tr", "th", "td"}


def clean_cell_html(element: Any) -> str:
    """A Markdown cell's (or a Markdown output's) HTML with no script, handler or ``javascript:``
    link left: nh3 with its default tags, plus the ``id`` and ``class`` the headings' anchors and
    the code highlighting use. HTML outputs are cleaned before, by ``static_view``.

    >>> clean_cell_html('<h2 id="a">A<script>x()</script></h2><img src=x onerror="y()">')
    '<h2 id="a">A</h2><img src="x">'
    """
    import nh3

    html = element.decode() if isinstance(element, bytes) else str(element)
    attributes = {**nh3.ALLOWED_ATTRIBUTES, "*": {"id", "class"}}
    return nh3.clean(html, tags=nh3.ALLOWED_TAGS | CELL_TAGS, attributes=attributes)


def _title(path: str) -> str:
    """``notebooks/08_structured_output.ipynb`` -> ``08 Structured output``."""
    stem = os.path.splitext(os.path.basename(path))[0]
    number, _, rest = stem.partition("_")
    return f"{number} {rest.replace('_', ' ').capitalize()}".strip()


def _install_exporter() -> None:
    import mkdocs_jupyter.nbconvert2 as nbc2
    from nbconvert.preprocessors import Preprocessor

    if getattr(nbc2.HTMLExporter, "agentnb_site", False):
        return
    from agentnb.notebook.export import StaticTraces
    from agentnb.untrusted import static_view

    class SiteOutputs(Preprocessor):  # type: ignore[misc]
        """Every output static and sanitized; no widget state left in the notebook."""

        def preprocess(self, nb: Any, resources: Any) -> tuple[Any, Any]:
            nb.metadata.pop("widgets", None)
            return super().preprocess(nb, resources)

        def preprocess_cell(self, cell: Any, resources: Any, index: int) -> tuple[Any, Any]:
            for output in cell.get("outputs", ()):
                data = output.get("data", {})
                for mime in (WIDGET, *SCRIPT_MIMES):
                    data.pop(mime, None)
                if "text/html" in data:
                    html = data["text/html"]
                    data["text/html"] = static_view(html if isinstance(html, str) else "".join(html))
            return cell, resources

    base = nbc2.HTMLExporter

    class SiteExporter(base):  # type: ignore[misc, valid-type]
        agentnb_site = True

        def __init__(self, **kwargs: Any) -> None:
            # nbconvert's cleaning on, with the site's cleaner: mkdocs-jupyter turns clean_html off
            kwargs["sanitize_html"] = True
            kwargs["filters"] = {**kwargs.get("filters", {}), "clean_html": clean_cell_html}
            kwargs["template_file"] = "agentnb_site.html.j2"
            extra = kwargs.get("extra_template_paths", [])
            kwargs["extra_template_paths"] = [os.path.join(HERE, "overrides", "nbconvert"), *extra]
            super().__init__(**kwargs)
            # after mkdocs-jupyter's own preprocessors: agentnb's snapshots first, then the rest
            self.register_preprocessor(StaticTraces, enabled=True)
            self.register_preprocessor(SiteOutputs, enabled=True)

    nbc2.HTMLExporter = SiteExporter
