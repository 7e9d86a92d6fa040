"""Static HTML exports (nbconvert) show the final trace without widgets' JavaScript."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("ipywidgets")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbconvert")

from agentnb import Agent, tool  # noqa: E402
from agentnb.notebook.debugger.debugger import Debugger  # noqa: E402
from agentnb.notebook.export import StaticHTMLExporter, StaticTraces  # noqa: E402
from agentnb.notebook.trace.widget import TraceWidget  # noqa: E402
from agentnb.testing import ScriptedProvider, call  # noqa: E402


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _output(obj: Any) -> Any:
    bundle = obj._repr_mimebundle_()
    data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
    return nbformat.v4.new_output("display_data", data=data, metadata=meta)


def _notebook(*outputs: Any) -> Any:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("%%agent\nWhat is 2 + 3?")
    cell.outputs = list(outputs)
    nb.cells = [cell]
    return nb


def test_trace_outputs_become_static_html_other_widgets_stay() -> None:
    import ipywidgets

    w = TraceWidget()
    result = Agent(ScriptedProvider([call("add", a=2, b=3), "2 + 3 = **5**"]), tools=[add]).run("2+3?", on_event=w)
    w.finish(result)
    slider = ipywidgets.IntSlider()
    nb = _notebook(_output(w), _output(slider))
    state = {
        m: {"model_name": "x", "model_module": "x", "model_module_version": "x", "state": {}}
        for m in (w.model_id, slider.model_id)
    }
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": state, "version_major": 2, "version_minor": 0}
    }
    html, _ = StaticHTMLExporter().from_notebook_node(nb)
    assert "Depth 0 · add ✓" in html and "Depth 1 · answer" in html
    assert "2 + 3 = <strong>5</strong>" in html  # the answer's Markdown rendered
    assert "agentnb-transcript.json" not in html  # the transcript stays in the widget state, not copied again
    # static and sanitized: sections fold, nothing runs (no Copy button's onclick, no handler)
    assert "<details" in html and 'class="anb-copy"' not in html and "onclick" not in html
    # The slider (not a trace) keeps its widget view; the trace's was replaced.
    assert html.count('<script type="application/vnd.jupyter.widget-view+json">') == 1
    (cell,) = StaticTraces().preprocess(_notebook(_output(w)), {})[0].cells
    assert "application/vnd.jupyter.widget-view+json" not in cell.outputs[0].data


def test_a_live_fork_bar_keeps_only_its_note() -> None:
    """A trace's fork bar left live (the notebook's last cell: no later cell froze it) says that
    its controls need the kernel; its widget view is dropped (issue 38)."""
    from agentnb.notebook.forks.bar import ForkBar

    result = Agent(ScriptedProvider([call("add", a=2, b=3), "5"]), tools=[add]).run("2+3?")
    bar = ForkBar(TraceWidget.replay(result))
    bar.fill(result)
    (cell,) = StaticTraces().preprocess(_notebook(_output(bar)), {})[0].cells
    data = cell.outputs[0].data
    assert "application/vnd.jupyter.widget-view+json" not in data
    assert "the controls of this trace need its kernel" in data["text/html"]
    html, _ = StaticHTMLExporter().from_notebook_node(_notebook(_output(bar)))
    assert "widget-view+json" not in html and "the controls of this trace need its kernel" in html


def test_a_running_trace_has_no_snapshot_and_the_debugger_has_its_summary() -> None:
    w = TraceWidget()
    assert w._repr_mimebundle_()[1] == {}

    async def main() -> Debugger:
        dbg = Debugger(Agent(ScriptedProvider(["hi"]))).start("hello")
        await dbg.next_pause()
        dbg.continue_()
        await dbg.wait()
        return dbg

    dbg = asyncio.run(main())
    _data, meta = dbg._repr_mimebundle_()
    assert "run ended: <b>answer</b>" in meta["agentnb"]["html"]
