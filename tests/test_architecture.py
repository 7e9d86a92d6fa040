"""The package's shape: its import graph has no cycles, no module is too long, and the guidance
layer, the UnTooled layer and the OpenAI route never import the in-process backend.

The graph is read with ``ast`` from every ``agentnb/**/*.py``: module-level imports, imports
inside functions and ``if TYPE_CHECKING:`` blocks alike (a type-only import is still a
dependency a reader has to follow).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agentnb"
MAX_LINES = 450
#: Folders whose modules must not import the in-process backend (agentnb.providers.hf).
NO_HF = ("agentnb.providers.untooled", "agentnb.providers.openai", "agentnb.providers.guidance")
HF = "agentnb.providers.hf"
#: Import cycles allowed: none. (The last ones were cut by typing the agent that a session and an
#: agent tool use as a Protocol, reading the version from agentnb.version, and building single
#: providers in agentnb.providers.spec.)
KNOWN_CYCLES: list[list[str]] = []
#: Modules allowed past MAX_LINES: none (the last five were split in December: events became a
#: package; tools, loop, agent and the trace's HTML gave their parts to modules of their own).
KNOWN_LONG: dict[str, int] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, known: set[str]) -> str | None:
    """The agentnb module ``name`` names: itself, or its longest known parent package."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every agentnb module that ``name`` imports, wherever the import statement is."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports the submodule pkg.mod where there is one.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            if target.startswith("agentnb"):
                resolved = _resolve(target, known)
                if resolved is not None and resolved != name:
                    found.add(resolved)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports_of(name, path, known) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_graph_is_read_from_every_kind_of_import() -> None:
    """The reader itself: module level, function level, TYPE_CHECKING and relative imports."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "import agentnb.errors\n"
        "from agentnb.providers import base\n"
        "from . import loop\n"
        "if TYPE_CHECKING:\n    from agentnb.tools import Tool\n"
        "def f():\n    from agentnb.messages import Usage\n"
    )
    path = ROOT / "tests" / "_arch_probe.py"
    path.write_text(source)
    try:
        known = {"agentnb.errors", "agentnb.providers", "agentnb.providers.base", "agentnb.loop", "agentnb.tools"}
        known |= {"agentnb.messages", "agentnb.x"}
        got = imports_of("agentnb.x", path, known)
    finally:
        path.unlink()
    assert got == {"agentnb.errors", "agentnb.providers.base", "agentnb.loop", "agentnb.tools", "agentnb.messages"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles() -> None:
    edges = graph()
    found = [c for c in cycles(edges) if c not in KNOWN_CYCLES]
    assert not found, "import cycles in agentnb:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_module_is_too_long() -> None:
    lengths = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    long = {name: n for name, n in lengths.items() if n > KNOWN_LONG.get(name, MAX_LINES)}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("layer", NO_HF)
def test_guidance_untooled_and_openai_never_import_the_in_process_backend(layer: str) -> None:
    offenders = {
        name: sorted(t for t in targets if t == HF or t.startswith(HF + "."))
        for name, targets in graph().items()
        if name == layer or name.startswith(layer + ".")
    }
    offenders = {name: hf for name, hf in offenders.items() if hf}
    assert not offenders, f"{layer} imports the in-process backend: {offenders}"


def test_the_providers_folders_show_the_design() -> None:
    """What `ls agentnb/providers/*` shows: the interface, the native APIs, the UnTooled layer
    with its guidance, and the in-process backend."""
    providers = PACKAGE / "providers"
    folders = {p.name for p in providers.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == {"openai", "untooled", "guidance", "hf"}
    assert (providers / "base.py").exists() and (providers / "anthropic.py").exists()
    assert not list(providers.glob("openai_*.py")), "the OpenAI modules live in providers/openai/"


def test_the_notebook_folders_show_what_a_person_sees() -> None:
    """What `ls agentnb/notebook` shows: one folder (or module) per thing a person sees, and the
    models under them import no widget (a view imports its model, never the other way round)."""
    notebook = PACKAGE / "notebook"
    folders = {p.name for p in notebook.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == {"magics", "trace", "debugger", "forks", "cells"}
    assert {p.stem for p in notebook.glob("*.py")} == {"__init__", "approval", "export"}
    edges = graph()
    for model in ("agentnb.notebook.trace.state", "agentnb.notebook.trace.depths", "agentnb.notebook.debugger.stepper"):
        source = modules()[model].read_text()
        assert "ipywidgets" not in source, f"{model} imports ipywidgets"
        views = {t for t in edges[model] if t.endswith((".view", ".widget", ".panel", ".bar"))}
        assert not views, f"{model} imports views: {views}"


#: The layers of the package, lowest first: a module may import its own layer and those below,
#: never one above. Packages in one layer do not import each other (the cycle test holds that).
LAYERS: list[tuple[str, ...]] = [
    ("agentnb.errors", "agentnb.version", "agentnb.untrusted"),  # the base: imports nothing of ours
    ("agentnb.messages",),  # the conversation and its JSON forms
    ("agentnb.events",),  # what a run reports
    ("agentnb.control", "agentnb.tracing"),  # approval, budgets, cost; watchers of runs
    ("agentnb.tools",),  # what a model may call, and running it
    ("agentnb.output", "agentnb.mcp", "agentnb.kernel"),  # structured output; tools from MCP servers, the kernel
    ("agentnb.providers",),  # the models
    ("agentnb.context",),  # what fits in a model's window: the gauge (and compaction)
    ("agentnb.timetravel",),  # replay and cassettes (providers made of recordings), fork, diff
    ("agentnb.run",),  # Agent, the loop, results, sessions
    ("agentnb.testing", "agentnb.printer"),  # fake models; the terminal's view of events
    ("agentnb.evaluation", "agentnb.notebook", "agentnb.runstore"),  # many runs; the notebook's views; runs kept
    # the face: the package's own names, the command, the demo's tools, documented old paths
    (
        "agentnb",
        "agentnb.__main__",
        "agentnb.cli",
        "agentnb.terminal_approval",
        "agentnb.demo_tools",
        "agentnb.datasets",
    ),
    ("agentnb.cost", "agentnb.dedupe"),
]
#: Imports that go up a layer, each with the reason it is allowed (keep this short).
UPWARD_ALLOWED: dict[tuple[str, str], str] = {
    ("agentnb.timetravel.load", "agentnb.run.result"): (
        "replay, fork and diff take a RunResult or a transcript's path; a path is read into a "
        "RunResult, imported lazily when one is given"
    ),
    ("agentnb.output.structured", "agentnb.providers.untooled.parse"): (
        "the forgiving JSON reader (load_json) lives with the UnTooled parser; imported lazily, "
        "only when a structured answer is not strict JSON"
    ),
}
#: At most this many modules at the package's root; the rest live in packages named after their jobs.
MAX_ROOT_MODULES = 12
MAX_FUNCTION_LINES = 80
#: Functions allowed past MAX_FUNCTION_LINES: none.
KNOWN_LONG_FUNCTIONS: dict[str, int] = {}


def layer_of(module: str) -> int:
    """The index in LAYERS of ``module``: the layer of its longest listed prefix."""
    best, found = "", -1
    for index, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > len(best):
                best, found = name, index
    return found


def test_every_module_has_a_layer() -> None:
    missing = sorted(name for name in modules() if layer_of(name) < 0)
    assert not missing, f"modules in no layer of LAYERS: {missing}"


def test_no_module_imports_a_higher_layer() -> None:
    upward = {
        (name, target): (LAYERS[layer_of(name)], LAYERS[layer_of(target)])
        for name, targets in graph().items()
        for target in targets
        if layer_of(target) > layer_of(name) and (name, target) not in UPWARD_ALLOWED
    }
    assert not upward, "imports from a lower layer up:\n" + "\n".join(f"{a} -> {b}" for a, b in sorted(upward))
    assert all(target in modules() for _, target in UPWARD_ALLOWED), "an allowed upward import names no module"


def test_the_root_holds_few_modules() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, f"{len(root)} modules at agentnb/'s root: {root}"


def test_every_package_says_what_it_owns() -> None:
    """Each package's __init__ opens with a docstring of more than a line (what it owns, what it
    may import)."""
    bare = []
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        if len(doc.strip().splitlines()) < 2:
            bare.append(module_name(init))
    assert not bare, f"packages without a docstring saying what they own: {bare}"


def function_lengths() -> dict[str, int]:
    """Every function and method in agentnb, by ``module:qualified.name``: lines from ``def`` to its end."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, module: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found[f"{module}:{name}"] = (child.end_lineno or child.lineno) - child.lineno + 1
                visit(child, name + ".", module)
            else:
                visit(child, prefix, module)

    for name, path in modules().items():
        visit(ast.parse(path.read_text(), str(path)), "", name)
    return found


def test_no_function_is_too_long() -> None:
    lengths = function_lengths()
    assert "agentnb.run.loop:run_loop" in lengths and "agentnb.run.agent:Agent.stream" in lengths
    long = {name: n for name, n in lengths.items() if n > KNOWN_LONG_FUNCTIONS.get(name, MAX_FUNCTION_LINES)}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_loop_body_names_its_phases() -> None:
    """run_loop's body (agentnb.run.loop.steps) calls each phase by name, so a new phase has an
    obvious place; each phase says in its docstring's first line what it decides."""
    from agentnb.run import phases

    source = (PACKAGE / "run" / "loop.py").read_text()
    body = source[source.index("def steps(") : source.index("async def run_loop(")]
    for phase in ("ask", "end", "decide", "deduplicate", "approve", "schedule", "execute", "append"):
        assert f"{phase}(" in body or f"{phase}," in body or f"{phase})" in body, phase
        doc = getattr(phases, phase).__doc__ or ""
        assert doc and "\n" not in doc.split("\n\n")[0].strip(), f"{phase}: a one-line docstring first"
