"""Untrusted text never becomes live HTML or raw terminal control (issue 22), in every view.

Hostile payloads (tests/untrusted_payloads.py) go through scripted runs as the answer, tool
arguments, results, errors and names, streamed text, provider notes and errors, structured
values, an MCP-style tool source, the prompt, the system prompt and earlier turns. Every HTML
string every view makes of them (widget values, output bundles, snapshots, replays from a
file, the debugger, the static export) is parsed: no script, no handler, no dangerous URL, no
remote fetch, and each marker still visible as text.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

widgets = pytest.importorskip("ipywidgets")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nh3")

from untrusted_payloads import ALL, MARKERS, check_html  # noqa: E402

from agentnb import Agent, RunResult, Tool, tool  # noqa: E402
from agentnb.events import CallsFromText, ReasoningSummary  # noqa: E402
from agentnb.notebook.debugger.debugger import Debugger  # noqa: E402
from agentnb.notebook.export import StaticHTMLExporter, StaticTraces  # noqa: E402
from agentnb.notebook.trace.blocks import _COPY_JS  # noqa: E402
from agentnb.notebook.trace.text import trace_text  # noqa: E402
from agentnb.notebook.trace.widget import TraceWidget  # noqa: E402
from agentnb.printer import TextPrinter  # noqa: E402
from agentnb.providers.base import Completion  # noqa: E402
from agentnb.testing import ScriptedProvider, Streamed, call, tool_chunks  # noqa: E402
from agentnb.untrusted import untrusted_html, untrusted_markdown, untrusted_terminal  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def boom(text: str) -> str:
    """Always fails."""
    raise ValueError(text)


def _remote(text: str) -> str:
    return text


mcp_tool = Tool("remote", "An MCP tool.", {"type": "object", "properties": {"text": {"type": "string"}}}, _remote)
mcp_tool.source = ALL  # an MCP server names itself


@dataclass
class Note:
    note: str


def _runs() -> dict[str, RunResult]:
    streamed = Streamed([ALL[:150], ALL[150:], *tool_chunks(0, "echo", json.dumps({"text": ALL}), id="s1")])
    noted = Completion(
        text=ALL,
        tool_calls=(call("remote", text=ALL, id="m1"),),
        events=(ReasoningSummary(0, ALL), CallsFromText(0, ALL, (ALL,), ALL)),
    )
    script = [
        streamed,
        noted,
        call("boom", text=ALL),
        call("no<b>such</b>" + ALL[:300], x=ALL),
        call("echo", bad=ALL),
        Streamed([ALL[:200], ALL[200:]]),
    ]
    main = Agent(ScriptedProvider(script), tools=[echo, boom, mcp_tool], system=ALL).run(ALL, stream=True)
    follow = Agent(ScriptedProvider([ALL])).run(ALL, history=main)
    failed = Agent(ScriptedProvider([RuntimeError(ALL)])).run(ALL)
    typed = Agent(ScriptedProvider([ALL, json.dumps({"note": ALL})]), output_type=Note).run(ALL)
    from agentnb.control.approval import Deny

    gated = Agent(
        ScriptedProvider([call("echo", text=ALL), ALL]),
        tools=[echo],
        requires_approval=True,
        approver=lambda c: Deny(ALL),
    ).run(ALL)
    return {"main": main, "follow": follow, "failed": failed, "typed": typed, "gated": gated}


@pytest.fixture(scope="module")
def runs() -> dict[str, RunResult]:
    return _runs()


def _collect(obj: Any) -> list[str]:
    """Every HTML string a widget tree shows, its output bundle and its export snapshot."""
    found: list[str] = []

    def walk(w: Any) -> None:
        if isinstance(w, widgets.Output):
            for out in w.outputs:
                assert "text/markdown" not in out.get("data", {}), "a Markdown bundle renders raw HTML"
                found.extend(v for k, v in out.get("data", {}).items() if k == "text/html")
        elif isinstance(w, (widgets.HTML, widgets.HTMLMath)):
            found.append(w.value)
        for child in getattr(w, "children", ()):
            walk(child)

    walk(obj)
    data, meta = obj._repr_mimebundle_()
    assert "text/markdown" not in data
    found += [v for k, v in data.items() if k == "text/html"]
    if meta.get("agentnb"):
        found.append(meta["agentnb"]["html"])
    return found


def _assert_inert(htmls: list[str], *, page: bool = False, need_markers: bool = True) -> None:
    text = []
    for html in htmls:
        problems, visible = check_html(html, ours=(_COPY_JS,), page=page)
        assert not problems, problems[:5]
        text.append(visible)
    if need_markers:
        joined = "".join(text)
        missing = [m for m in MARKERS if m not in joined]
        assert not missing, f"payload markers not shown as text: {missing}"


def test_markdown_keeps_characters_and_kills_markup() -> None:
    html = untrusted_markdown("37*91 = 3367, a_b_c, __init__, 2 * 3 * 4, x < y, $5 and $6, `a*b*c`, **bold**")
    _problems, text = check_html(html)
    assert "37*91 = 3367, a_b_c, __init__, 2 * 3 * 4, x < y, $5 and $6, a*b*c, bold" in text
    assert "<strong>bold</strong>" in html and "<code>a*b*c</code>" in html
    fenced = untrusted_markdown("```python\nif a < b and c_d:\n    print('*x*')\n```", raw=True)
    assert "if a &lt; b and c_d:\n    print('*x*')" in fenced
    assert '<details class="anb-raw"><summary>raw text</summary>' in fenced
    link = untrusted_markdown("[docs](https://example.org/x) [api](/api/kernels)")
    assert 'href="https://example.org/x"' in link and 'target="_blank"' in link
    assert "noopener noreferrer nofollow" in link and "/api/kernels" not in link
    assert "<img" not in untrusted_markdown("![x](https://example.org/p.png)")
    _assert_inert([untrusted_markdown(ALL, raw=True)])
    # A bidi override would reorder what follows it on screen: written out instead.
    assert "\u202e" not in untrusted_markdown(ALL, raw=True) + untrusted_html(ALL)


@pytest.mark.parametrize(
    "written",
    [
        r"The regex \d+\.\d+ matches 3.14",
        r"Files: C:\Users\*.txt and \\server\share",
        r"Inline math \(x^2\) and \[y\]",
        "Write &lt; for < and &amp; for &; &#60;b&#62; is <b>",
        r"An escaped \*star\* and 1\. not a list",
    ],
)
def test_markdown_shows_backslashes_and_entities_as_written(written: str) -> None:
    """A backslash or an entity in an answer is a character the user must see (issue 26 item 3)."""
    html = untrusted_markdown(written)
    problems, text = check_html(html)
    assert not problems and written in text


def test_terminal_text_has_no_control_sequences() -> None:
    shown = untrusted_terminal(ALL + "\tok\n")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", shown)
    assert shown.endswith("\tok\n") and "\\x1b]0;PWN23" in shown


def test_every_view_of_every_run_is_inert(runs: dict[str, RunResult], tmp_path: Path) -> None:
    assert runs["main"].tool_calls >= 3 and runs["failed"].stop_reason == "error"
    assert runs["typed"].value == Note(ALL)
    for name, result in runs.items():
        live = TraceWidget(history=runs["main"] if name == "follow" else None)
        for event in result.events:
            live(event)
        live.finish(result)
        path = tmp_path / f"{name}.json"
        result.save(path)
        views = [live, TraceWidget.replay(result), TraceWidget.replay(path)]
        htmls = [h for v in views for h in _collect(v)]
        _assert_inert(htmls, need_markers=name != "failed")
        if name == "failed":
            _assert_inert([views[0].header_html])
            assert "PWN1" in check_html(views[0].header_html)[1]
        assert all(not re.search(r"[\x1b\x07\r\u202e]", v.text()) for v in views)


def test_the_text_printer_sends_no_control_sequences(runs: dict[str, RunResult]) -> None:
    out = io.StringIO()
    printer = TextPrinter(out)
    for event in runs["main"].events:
        printer(event)
    assert "PWN23" in out.getvalue() and not re.search(r"[\x1b\x07\r\u202e]", out.getvalue())
    assert not re.search(r"[\x1b\x07\r\u202e]", trace_text(runs["main"].events))


def test_the_debugger_view_is_inert() -> None:
    async def main() -> tuple[list[str], Debugger]:
        agent = Agent(ScriptedProvider([call("echo", text=ALL), ALL]), tools=[echo])
        dbg = Debugger(agent).start(ALL)
        seen: list[str] = []
        for _ in range(4):
            pause = await dbg.next_pause()
            if pause is None:
                break
            seen += _collect(dbg.view)
            dbg.step()
        await dbg.wait()
        return seen + _collect(dbg.view), dbg

    seen, _dbg = asyncio.run(main())
    assert any("paused before tool call echo" in h for h in seen)
    _assert_inert(seen)


def _notebook(*objs: Any) -> Any:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%%agent\nhi")
    for obj in objs:
        data, meta = obj._repr_mimebundle_()
        cell.outputs.append(nbformat.v4.new_output("display_data", data=data, metadata=meta))
    nb.cells = [cell]
    return nb


def test_the_static_export_is_inert(runs: dict[str, RunResult]) -> None:
    traces = [TraceWidget.replay(r) for r in runs.values()]
    (cell,) = StaticTraces().preprocess(_notebook(*traces), {})[0].cells
    _assert_inert([o.data["text/html"] for o in cell.outputs if "text/html" in o.data])
    page, _ = StaticHTMLExporter().from_notebook_node(_notebook(*traces))
    problems, text = check_html(page, ours=(_COPY_JS,), page=True)
    assert not problems, problems[:5]
    assert all(m in text for m in MARKERS)


def test_an_old_snapshot_answer_is_sanitized_on_export() -> None:
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output(
        "display_data",
        data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "t"},
        metadata={"agentnb": {"html": "<div class='anb-static'>trace</div>", "answer": ALL}},
    )
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[out])]
    (cell,) = StaticTraces().preprocess(nb, {})[0].cells
    _assert_inert([cell.outputs[0].data["text/html"]])


_FORBIDDEN = [
    (re.compile(r"^\s*(from html import|import html\b)", re.M), "html.escape: use agentnb.untrusted.untrusted_html"),
    (re.compile(r"\bmarkdown2html\b|\bmarkdown_it\b|\bmistune\b|\bbleach\b|\bnh3\b"), "a Markdown renderer"),
    (re.compile(r"[\"']text/markdown[\"']"), "a text/markdown bundle (rendered trusted, raw HTML live)"),
    (re.compile(r"\bMarkdown\((?!\))"), "IPython.display.Markdown of text (rendered trusted, raw HTML live)"),
]


def test_no_view_renders_text_any_other_way() -> None:
    """Only agentnb/untrusted.py turns text into HTML; a new view cannot forget it."""
    hits = []
    for path in sorted((ROOT / "agentnb").rglob("*.py")):
        if path.name == "untrusted.py":
            continue
        for pattern, why in _FORBIDDEN:
            for m in pattern.finditer(path.read_text(encoding="utf-8")):
                line = path.read_text(encoding="utf-8")[: m.start()].count("\n") + 1
                hits.append(f"{path.relative_to(ROOT)}:{line}: {why}")
    assert not hits, "\n".join(hits)
