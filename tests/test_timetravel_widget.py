"""Fork from here (issue 38) in the trace widget and ``%agent --fork N``, through traits and clicks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

from agentnb import Agent, RunResult, tool
from agentnb.notebook.forks.panel import ForkPanel
from agentnb.notebook.magics.options import MagicOptions
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call
from tests.untrusted_payloads import check_html

RAN: list[str] = []


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    return "sunny"


def recorded(*later: str) -> tuple[ScriptedProvider, RunResult]:
    model = ScriptedProvider([call("weather", city="Paris"), "Sunny in Paris.", *later])
    result = Agent(model, tools=[weather], system="Be brief.").run("Weather in Paris?")
    RAN.clear()
    return model, result


def test_fork_from_here_opens_the_editor_prefilled_and_runs_the_fork_below() -> None:
    model, result = recorded("<b>Rain</b> in Paris.")
    w = TraceWidget.replay(result)
    assert w.fork_button in w.toolbar.children
    w.fork_button.click()
    panel = w.fork_panel
    assert panel in w.children and [label for label, _ in panel.step.options] == [
        "[0] calls weather",
        "[1] says: Sunny in Paris.",
    ]
    assert (panel.step.value, panel.kind.value, panel.editor.value) == (0, "tool_result", "sunny")
    panel.kind.value = "arguments"
    assert panel.editor.value == '{\n  "city": "Paris"\n}'
    panel.kind.value = "tool_result"
    panel.editor.value = "<img src=x onerror=\"document.title='PWN'\"> rain"
    n = len(model.requests)
    trace = panel.fork()
    assert len(model.requests) == n + 1 and RAN == []  # step 1 only; no tool ran again
    (fork,) = panel.forks
    assert fork.output == "<b>Rain</b> in Paris." and fork.lineage.forked_at == 0
    box = panel.below.children[0]
    assert trace in box.children and trace.state.finished is not None
    assert not trace._is_open(0) and trace._is_open(1)  # the recorded prefix folded
    html = box.children[2].value
    problems, visible = check_html(html)
    assert problems == [] and "parent and fork differ first at step 0 (results)" in visible
    problems, visible = check_html(trace.static_html())
    assert problems == [] and "document.title" in visible


def test_a_bad_edit_is_shown_beside_the_button_and_nothing_runs() -> None:
    model, result = recorded()
    panel = ForkPanel(result, TraceWidget, at=0)
    panel.kind.value = "arguments"
    panel.editor.value = '{"town": "Paris"}'
    n = len(model.requests)
    assert panel.fork() is None
    assert "fail its schema" in panel.problem.value and "&#x27;city&#x27; is a required property" in panel.problem.value
    panel.editor.value = "not json"
    assert panel.fork() is None and "the arguments are a JSON object" in panel.problem.value
    assert len(model.requests) == n and RAN == [] and panel.below.children == ()


def test_the_step_picks_its_kind_of_edit_and_the_system_prompt_is_editable() -> None:
    model, result = recorded("Bref: soleil.")
    panel = ForkPanel(result, TraceWidget)
    panel.step.value = 1
    assert (panel.kind.value, panel.editor.value) == ("reply", "Sunny in Paris.")
    panel.kind.value = "system"
    assert panel.editor.value == "Be brief."
    panel.editor.value = "Réponds en français."
    panel.fork()
    assert model.requests[-1].messages[0].content == "Réponds en français."
    assert panel.forks[0].output == "Bref: soleil." and panel.forks[0].lineage.edit == {
        "system": "Réponds en français."
    }


def test_a_loaded_transcript_has_no_fork_button(tmp_path) -> None:
    _, result = recorded()
    result.save(tmp_path / "run.json")
    w = TraceWidget.replay(tmp_path / "run.json")
    assert getattr(w, "fork_button", None) is None
    with pytest.raises(Exception, match="out of range: this run has steps 0 to 1"):
        ForkPanel(result, TraceWidget, at=5)


@pytest.fixture
def ip() -> Iterator[Any]:
    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    magics = shell.magics_manager.registry["AgentMagics"]
    magics.defaults = MagicOptions()
    magics.history = None
    magics.debugger = None
    magics.display_mode = "auto"
    saved = dict(shell.user_ns)
    yield shell
    shell.user_ns.clear()
    shell.user_ns.update(saved)


def test_agent_fork_n_opens_the_editor_at_step_n(ip, monkeypatch) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("agentnb.notebook.magics.agent._display", shown.append)
    model = ScriptedProvider([call("weather", city="Oslo"), "Snow.", "Hail."])
    ip.user_ns.update({"model": model, "weather": weather})
    with pytest.raises(UsageError, match="no result to fork: run %agent first"):
        ip.run_line_magic("agent", "--fork 0")
    ip.run_line_magic("agent", "-p model -q --tools weather Weather in Oslo?")
    ip.run_line_magic("agent", "--fork 0")
    (panel,) = shown
    assert isinstance(panel, ForkPanel) and (panel.step.value, panel.editor.value) == (0, "sunny")
    panel.editor.value = "hail"
    panel.fork()
    assert panel.forks[0].output == "Hail."
    with pytest.raises(UsageError, match="out of range: this run has steps 0 to 1"):
        ip.run_line_magic("agent", "--fork 7")
    with pytest.raises(UsageError, match="--fork N takes no prompt"):
        ip.run_line_magic("agent", "--fork 0 and a prompt")
    with pytest.raises(UsageError, match="it is no default"):
        ip.run_line_magic("agent_config", "--fork 1")


def test_fork_editor_and_a_fork_of_the_fork() -> None:
    from agentnb.notebook import fork_editor

    _, result = recorded("Rain.", "Hail.")
    panel = fork_editor(result, at=0)
    panel.editor.value = "rain"
    trace = panel.fork()
    trace.fork_button.click()  # the fork's own trace forks it again
    inner = trace.fork_panel
    assert inner.result is panel.forks[0] and inner.editor.value == "rain"
    inner.editor.value = "hail"
    inner.fork()
    second = inner.forks[0]
    assert second.output == "Hail." and second.lineage.parent == panel.forks[0].run_id
    assert RAN == []


def test_a_forks_header_counts_its_live_model_calls_and_the_recorded_ones_apart() -> None:
    """A fork's trace does not claim the recorded prefix's model calls as its own: they were
    never sent (the header and the text summary both say so)."""
    import html
    import re

    from agentnb.notebook.trace.text import summary_line

    script = [call("weather", city="Paris"), call("weather", city="Oslo"), "Sunny.", "Snow."]
    parent = Agent(ScriptedProvider(script), tools=[weather]).run("Weather in Paris, then in Oslo?")
    fork = parent.fork(1, tool_result="heavy snow")
    trace = TraceWidget()
    for event in fork.events:
        trace(event)
    trace.flush()
    header = " ".join(html.unescape(re.sub("<[^>]+>", " ", trace.static_html())).split())
    assert "model calls 1 (+2 recorded)" in header
    assert "1 model call (+2 recorded)" in summary_line(fork.events)
    assert "3 model calls ·" in summary_line(parent.events)
