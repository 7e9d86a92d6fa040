"""Fast checks on the stored notebooks under notebooks/ (the docs that run as tests).

`pytest --nbval` compares only cells saved with outputs, so a notebook saved empty would pass
trivially. These checks make sure every notebook was executed top to bottom in a fresh
``python3`` kernel, stores an output for every code cell, and keeps machine-specific text
(absolute paths, memory addresses) out of what it stores.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXPECTED = [
    "01_quickstart",
    "02_local_models",
    "03_native_providers",
    "04_limits_direct_output_attachments",
    "05_deduplication",
    "06_debugger",
    "07_magics_reference",
    "08_structured_output",
    "09_mcp_tools",
    "10_evaluation",
    "11_control",
]
TEST_COMMAND = (
    ".venv/bin/pytest --nbval notebooks --nbval-sanitize-with notebooks/sanitize.cfg --nbval-cell-timeout 300"
)

# Text that only makes sense on the machine that executed the notebook.
MACHINE_SPECIFIC = [
    (re.compile(r"0x[0-9a-fA-F]{6,}"), "a memory address"),
    (re.compile(r"(?<![\w.:/])/(?:work|home|root|tmp|Users|opt|usr|var|private)/"), "an absolute path"),
    (re.compile(r"[A-Za-z]:\\\\?(?:Users|Windows)"), "a Windows path"),
    (re.compile(r"site-packages"), "an installation path"),
]
TEXT_MIMES = ("text/plain", "text/markdown", "text/html", "text/latex", "application/json")


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def source(cell: dict[str, Any]) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def tags(cell: dict[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def ignores_output(cell: dict[str, Any]) -> bool:
    return "NBVAL_IGNORE_OUTPUT" in source(cell) or "nbval-ignore-output" in tags(cell)


def output_texts(cell: dict[str, Any]) -> list[str]:
    texts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            texts.append(_join(out["text"]))
        elif out["output_type"] == "error":
            texts.append(f"{out['ename']}: {out['evalue']}")
        for mime in TEXT_MIMES:
            value = out.get("data", {}).get(mime)
            if value is not None:
                texts.append(_join(value) if not isinstance(value, dict) else json.dumps(value))
    return texts


def _join(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def label(cell: dict[str, Any]) -> str:
    first = source(cell).splitlines()[0] if source(cell) else ""
    return f"cell [{cell.get('execution_count')}] {first[:60]!r}"


def test_every_documented_notebook_is_there() -> None:
    names = [p.stem for p in notebook_paths()]
    assert names[: len(EXPECTED)] == EXPECTED, names


@pytest.fixture(params=notebook_paths(), ids=lambda p: p.stem)
def nb(request: pytest.FixtureRequest) -> dict[str, Any]:
    return load(request.param)


def test_kernel_is_python3(nb: dict[str, Any]) -> None:
    assert nb["metadata"]["kernelspec"]["name"] == "python3"


def test_starts_with_an_introduction(nb: dict[str, Any]) -> None:
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown"
    assert source(first).startswith("# "), "the first cell should be a Markdown title and introduction"
    assert len(source(first)) > 200, "the introduction should say what the notebook shows"


def test_executed_in_order_from_a_fresh_kernel(nb: dict[str, Any]) -> None:
    counts = [c["execution_count"] for c in code_cells(nb)]
    assert counts, "a notebook without code cells tests nothing"
    assert counts == list(range(1, len(counts) + 1)), f"execution counts {counts}: re-execute the whole notebook"


def test_every_code_cell_stores_output(nb: dict[str, Any]) -> None:
    empty = [label(c) for c in code_cells(nb) if not c.get("outputs")]
    assert not empty, f"code cells without stored output (nbval would not compare them): {empty}"


def test_errors_only_where_expected(nb: dict[str, Any]) -> None:
    for cell in code_cells(nb):
        errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
        stderr = "".join(_join(o["text"]) for o in cell["outputs"] if o.get("name") == "stderr")
        if "raises-exception" in tags(cell):
            assert errors or "Error" in stderr, f"{label(cell)} is tagged raises-exception but shows no error"
        else:
            assert not errors, f"{label(cell)} failed: {errors[0]['ename']}: {errors[0]['evalue']}"


def test_no_machine_specific_text_in_outputs(nb: dict[str, Any]) -> None:
    for cell in code_cells(nb):
        for text in output_texts(cell):
            for pattern, what in MACHINE_SPECIFIC:
                found = pattern.search(text)
                assert found is None, (
                    f"{label(cell)} stores {what}: ...{text[max(0, found.start() - 40) : found.end() + 40]}..."
                )


def test_ignored_outputs_are_rare_and_paired(nb: dict[str, Any]) -> None:
    """A cell whose output is not compared is followed by one that prints the stable facts."""
    cells = code_cells(nb)
    for i, cell in enumerate(cells):
        assert "NBVAL_SKIP" not in source(cell) and "nbval-skip" not in tags(cell), f"{label(cell)} is skipped"
        if ignores_output(cell):
            assert i + 1 < len(cells) and not ignores_output(cells[i + 1]), (
                f"{label(cell)} ignores its output; the next code cell should check what is stable"
            )
    assert sum(map(ignores_output, cells)) <= 3, "most cells should be compared under --nbval"


def test_sanitizer_file_parses_with_nbval() -> None:
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns((NOTEBOOKS / "sanitize.cfg").read_text(encoding="utf-8"))
    assert len(patterns) >= 3
    subs = dict(patterns)
    for regex in subs:
        re.compile(regex)
    timing = next(r for r in subs if subs[r] == "<time>")
    assert re.sub(timing, subs[timing], "model replied in 0.12s; add -> 5 (3.4 ms)") == (
        "model replied in <time>; add -> 5 (<time>)"
    )
    assert re.sub(timing, subs[timing], "10 km = 6.21371 mi, 5 tokens") == "10 km = 6.21371 mi, 5 tokens"


def test_readme_indexes_every_notebook_and_gives_the_command() -> None:
    readme = (NOTEBOOKS / "README.md").read_text(encoding="utf-8")
    for path in notebook_paths():
        assert path.name in readme, f"notebooks/README.md does not list {path.name}"
    assert TEST_COMMAND in readme
