"""A saved notebook shows its finished traces without a kernel (issue 26, item 1).

Executed in a real kernel (nbclient), every finished trace's stored output is static HTML plus
text (no widget view, which would read "Error displaying widget: model not found" once the
kernel is gone), with the same sections as the live widget; nbconvert's plain HTML export (what
nbviewer shows) then shows them too.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipywidgets")

WIDGET = "application/vnd.jupyter.widget-view+json"

CELLS = [
    """\
%load_ext agentnb
from agentnb import Agent, tool
from agentnb.notebook import TraceWidget
from agentnb.testing import ScriptedProvider, call

@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

model = ScriptedProvider([call("add", a=2, b=3), "2 + 3 = **5**, and 37*91 = 3367."])""",
    "%%agent -p model --out first\nWhat is 2 + 3?",
    """\
trace = TraceWidget()
result = Agent(ScriptedProvider([call("add", a=1, b=1), "1 + 1 = 2"]), tools=[add]).run("1+1?", on_event=trace)
trace""",
    "TraceWidget.replay(first)",
    """\
shown = TraceWidget()
display(shown)""",
    """\
_ = Agent(ScriptedProvider(["later"]), tools=[add]).run("hi", on_event=shown)""",
    """\
stepper = ScriptedProvider([call("add", a=4, b=4), "8"])
%agent -p stepper --step --new What is 4 + 4?""",
    """\
await _agent_debugger.next_pause()
_agent_debugger.continue_()
r = await _agent_debugger.wait()
print(r.output)
html = _agent_debugger.view.static_bundle()[0]["text/html"]
print("Debugger: run ended: <b>answer</b>" in html and "Depth 1 · answer" in html)""",
    """\
from agentnb.notebook import Debugger
dbg = Debugger(Agent(ScriptedProvider([call("add", a=2, b=3), "five"]), tools=[add])).start("2 + 3?")
await dbg.next_pause()""",
    "dbg",
    """\
dbg.continue_()
await dbg.wait();""",
]


@pytest.fixture(scope="module")
def executed() -> Any:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    return nb


def _displays(cell: Any) -> list[Any]:
    return [o for o in cell.outputs if o.output_type in ("display_data", "execute_result")]


def test_finished_traces_are_stored_as_static_html(executed: Any) -> None:
    # (A --step debugger's display is replaced from its background run, after its cell ended:
    # JupyterLab applies that update, nbclient only takes a cell's own messages; see the browser test.)
    for i in (1, 2, 3, 4):
        out, bar = _displays(executed.cells[i])  # the trace, then its fork bar (issue 38)
        assert WIDGET not in out.data, f"cell {i} still needs the kernel to show its trace"
        # a later cell froze the bar: no fork was made, so it leaves nothing that needs the kernel
        assert WIDGET not in bar.data and bar.data["text/html"] == "<!--agentnb live trace\n-->", i
        html = out.data["text/html"]
        assert 'class="anb-static anb-trace tex2jax_ignore mathjax_ignore"' in html and "Depth 0" in html, i
        assert "<details" in html and "onclick" not in html and "<script" not in html
        assert out.data["text/plain"].startswith(("agentnb trace:", "agentnb live trace\n")), i
    magic = _displays(executed.cells[1])[0].data
    assert magic["text/html"].startswith("<!--agentnb live trace\n-->")  # updated in place: marked for nbval
    assert (
        "Depth 0 · add ✓" in magic["text/html"]
        and "2 + 3 = <strong>5</strong>, and 37*91 = 3367." in magic["text/html"]
    )
    assert 'download="agentnb-transcript.json"' in magic["text/html"]  # Save transcript stays: a data: link
    # The quickstart's pattern: a widget fed through on_event, shown after the run, has its Save link.
    quick = _displays(executed.cells[2])[0].data["text/html"]
    # it showed itself live when its run started (issue 39 item 7), so its display is updated in place
    assert quick.startswith("<!--agentnb live trace") and 'download="agentnb-transcript.json"' in quick
    assert executed.cells[7].outputs[-1].text == "8\nTrue\n"


def test_a_run_that_ends_in_a_later_cell_is_stored_static_too(executed: Any) -> None:
    """A debugger shown as a cell's value (``dbg``) was an ``Out[n]`` widget that could not be
    replaced: a reopened notebook said "model not found". And a run ending while a later cell
    ran (``await dbg.wait()``) was replaced in JupyterLab only: nbconvert kept "the run was still
    going", which is what GitHub and nbviewer show of a stored notebook."""
    for i in (6, 9):  # %agent --step, then a Debugger as a cell's value
        (out,) = _displays(executed.cells[i])
        assert WIDGET not in out.data, f"cell {i} still needs the kernel to show its trace"
        assert "anb-static" in out.data["text/html"] and "still going" not in out.data["text/html"], i
        assert "Debugger(state='finished')" in out.data["text/plain"], i


def test_nbconverts_plain_html_shows_the_traces(executed: Any) -> None:
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter().from_notebook_node(executed)
    assert html.count('class="anb-static anb-trace tex2jax_ignore mathjax_ignore"') == 6  # two debuggers
    assert "model not found" not in html
    assert len(re.findall(r"Depth 1 · answer", html)) >= 3
