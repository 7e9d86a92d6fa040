"""Fork from here on every step of a FINISHED trace (issue 38): the fork bar under a trace.

A finished trace is static HTML; the bar displayed after it gives one control per step. These
tests drive it through its traits in IPython's test shell seen as a kernel's, with the fork's
model requests counted at a real server.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.testing import globalipapp
from IPython.utils.capture import capture_output

from agentnb import Agent, tool
from agentnb.notebook.forks import bar as fork_bar
from agentnb.notebook.forks.panel import ForkPanel
from agentnb.notebook.magics.options import MagicOptions
from agentnb.notebook.trace.display import LIVE_MARKER
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.providers import OpenAIProvider
from agentnb.testing import FunctionProvider, ScriptedProvider, call
from agentnb.testing.server import ScriptedServer, text, tool_calls
from tests.untrusted_payloads import check_html

WIDGET = "application/vnd.jupyter.widget-view+json"
RAN: list[str] = []
PAYLOAD = "<img src=x onerror=\"document.title='PWN'\">"


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(city)
    return "sunny"


@pytest.fixture
def ip(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """IPython's test shell with agentnb loaded, seen as a kernel's (where the bar is shown)."""
    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    magics = shell.magics_manager.registry["AgentMagics"]
    magics.defaults, magics.history, magics.debugger, magics.display_mode = MagicOptions(), None, None, "auto"
    saved = dict(shell.user_ns)
    shell.kernel = object()
    before = list(shell.events.callbacks["pre_run_cell"])
    yield shell
    shell.__dict__.pop("kernel", None)
    shell.events.callbacks["pre_run_cell"][:] = before
    shell.user_ns.clear()
    shell.user_ns.update(saved)


@pytest.fixture
def bars(monkeypatch: pytest.MonkeyPatch) -> list[fork_bar.ForkBar]:
    made: list[fork_bar.ForkBar] = []

    class Recorded(fork_bar.ForkBar):
        def __init__(self, trace: Any) -> None:
            super().__init__(trace)
            made.append(self)

    monkeypatch.setattr(fork_bar, "ForkBar", Recorded)
    return made


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def test_each_step_of_a_finished_magic_trace_forks_from_a_click(ip: Any, bars: list[Any], server: Any) -> None:
    server.script(tool_calls(("weather", {"city": "Paris"})), text(f"Sunny {PAYLOAD} in Paris."))
    ip.user_ns.update({"model": OpenAIProvider("m", base_url=server.url), "weather": weather})
    RAN.clear()
    with capture_output() as cap:
        ip.run_cell_magic("agent", "-p model --tools weather --no-stream", "Weather in Paris?")
    assert len(server.requests) == 2 and RAN == ["Paris"]
    (bar,) = bars
    trace_out, bar_out = [o.data for o in cap.outputs if WIDGET in o.data]  # then the trace's static update
    assert "agentnb trace: waiting" in trace_out["text/plain"]  # shown live at the start, with its bar
    assert WIDGET in bar_out and bar_out["text/plain"].startswith(LIVE_MARKER)  # nbval compares the marker
    assert check_html(bar_out["text/html"])[0] == []
    # one control per step, the steps as the trace numbers them; the model's text only in tooltips
    assert [label for label, _ in bar.steps.options] == ["[0] weather", "[1] answer"]
    assert bar.steps.value is None and bar.panel is None
    assert bar.steps.tooltips[1].startswith("Fork from step [1]: it said Sunny <img")  # a title attribute
    # click step 1: the debugger's editor opens below, prefilled with step 1's reply
    bar.steps.value = 1
    panel = bar.panel
    assert isinstance(panel, ForkPanel) and panel in bar.children
    assert (panel.step.value, panel.kind.value, panel.editor.value) == (1, "reply", f"Sunny {PAYLOAD} in Paris.")
    # click step 0: the same editor, refilled with step 0's tool result
    bar.steps.value = 0
    assert bar.panel is panel and (panel.step.value, panel.kind.value, panel.editor.value) == (
        0,
        "tool_result",
        "sunny",
    )
    panel.step.value = 1  # the editor's own step picker moves the bar's selection too
    assert bar.steps.value == 1
    bar.steps.value = 0
    server.reset()
    server.script(text("Rain: take a coat."))
    panel.editor.value = "heavy rain"
    trace = panel.fork()
    # only the live step was sent (step 1); step 0 came from the recording and its tool did not run
    assert len(server.requests) == 1 and RAN == ["Paris"]
    assert server.requests[0].body["messages"][-1]["content"] == "heavy rain"
    (fork,) = bar.forks
    assert fork.output == "Rain: take a coat." and fork.lineage.forked_at == 0
    assert trace.state.finished is not None and not trace._is_open(0) and trace._is_open(1)  # prefix folded
    # the next cell freezes the bar: its display becomes the fork's static trace and diff
    with capture_output() as cap:
        ip.events.trigger("pre_run_cell", None)
    assert bar.frozen and bar.steps.comm is None  # closed: no dead control is left
    (update,) = [o.data for o in cap.outputs]
    problems, visible = check_html(update["text/html"])
    assert problems == [] and update["text/html"].startswith(f"<!--{LIVE_MARKER}\n-->")
    assert "fork of step [0]" in visible and "Rain: take a coat." in visible and "heavy rain" in visible
    assert "diff with the parent run" in visible and update["text/plain"].startswith(LIVE_MARKER)
    assert bar.open_at(1) is panel and len(server.requests) == 1  # a frozen bar does nothing
    with capture_output():
        bar.trace._ipython_display_()  # the trace shown again in a later cell: a new, live bar
    assert len(bars) == 2 and not bars[1].frozen and bars[1].steps.options == bar.steps.options


def test_a_trace_fed_by_on_event_gets_its_result_and_its_bar(ip: Any, bars: list[Any]) -> None:
    model = ScriptedProvider([call("weather", city="Oslo"), "Snow.", "Hail."])
    trace = TraceWidget()
    with capture_output():
        result = Agent(model, tools=[weather]).run("Oslo?", on_event=trace)
        trace._ipython_display_()  # the cell's last line: no second trace, no second bar
    assert trace.result is result  # handed over after the last event (agentnb.run.delivery)
    other = Agent(ScriptedProvider(["Other."])).run("Other?")
    trace.take_run_result(other)  # another run's result (a sink shared by mistake) is not taken
    assert trace.result is result
    (bar,) = bars
    assert [label for label, _ in bar.steps.options] == ["[0] weather", "[1] answer"]
    bar.steps.value = 1
    bar.panel.editor.value = "Hail."
    bar.panel.fork()
    assert bar.forks[0].output == "Hail." and len(model.requests) == 2  # a reply edit sends nothing


def test_no_control_that_cannot_work(ip: Any, bars: list[Any], tmp_path: Any) -> None:
    result = Agent(ScriptedProvider([call("weather", city="Rome"), "Warm."]), tools=[weather]).run("Rome?")
    result.save(tmp_path / "run.json")
    with capture_output() as cap:
        TraceWidget.replay(tmp_path / "run.json")._ipython_display_()  # loaded: no agent to go on with
    (loaded,) = bars  # the label editor alone (issue 48): no step to fork from
    assert loaded.steps is None and loaded.children == (loaded.labeller,) and loaded.open_at(0) is None
    assert len([o for o in cap.outputs if WIDGET in o.data]) == 1
    with capture_output():
        ip.events.trigger("pre_run_cell", None)
    assert loaded.frozen
    bars.clear()
    # a live trace fed only events (a bound method: no result handed over): its bar stays empty
    trace = TraceWidget()
    with capture_output() as cap:
        Agent(ScriptedProvider(["Warm."])).run("Rome?", on_event=trace.handle)
    (bar,) = bars
    assert trace.result is None and bar.children == () and bar.steps is None
    assert len([o for o in cap.outputs if WIDGET in o.data]) == 2  # the live trace, its empty bar
    with capture_output() as cap:
        ip.events.trigger("pre_run_cell", None)
    assert bar.frozen and [o.data["text/html"] for o in cap.outputs] == [f"<!--{LIVE_MARKER}\n-->"]
    # outside a kernel (a terminal, a script) no bar is shown: no click could reach it
    del ip.kernel
    with capture_output() as cap:
        TraceWidget.replay(result)._ipython_display_()
    assert len(bars) == 1 and all(WIDGET not in o.data for o in cap.outputs)


def test_a_step_the_run_ended_in_says_so(ip: Any, bars: list[Any]) -> None:
    failing = Agent(ScriptedProvider([call("weather", city="Rome"), RuntimeError("server down")]), tools=[weather])
    result = failing.run("Rome?")
    assert result.stop_reason == "error"
    labels = fork_bar.step_labels(result)
    assert [label for label, _ in labels] == ["[0] weather", "[1] error"]
    assert "ended in an error: fork it with a reply or system prompt" in labels[1][1]
    with capture_output():
        TraceWidget.replay(result)._ipython_display_()
    bars[0].steps.value = 1
    bars[0].panel.editor.value = "Recovered."
    bars[0].panel.fork()
    assert bars[0].forks[0].output == "Recovered."


def test_labels_are_text_escaped_once_by_the_buttons_front_end(monkeypatch: pytest.MonkeyPatch) -> None:
    # ToggleButtons' front end escapes each label itself (escape_html, then innerHTML) and never
    # typesets it: a tool name (an MCP server's, a model's) is given as written, or it showed as
    # "[0] &lt;img…" (issue 45). The browser test checks the button's text.
    result = Agent(ScriptedProvider([call("weather", city="Paris"), "ok"]), tools=[weather]).run("x")
    steps = fork_bar.steps_of(result)
    odd = dataclasses.replace(steps[0], calls=((PAYLOAD, {}),))
    monkeypatch.setattr(fork_bar, "steps_of", lambda r: [odd, *steps[1:]])
    label, tip = fork_bar.step_labels(result)[0]
    assert label == f"[0] {PAYLOAD}"
    assert tip == f"Fork from step [0]: it called {PAYLOAD}"  # a title attribute: text


def test_a_fork_still_running_is_waited_for_before_the_bar_freezes(ip: Any, bars: list[Any]) -> None:
    async def scenario() -> None:
        gate = asyncio.Event()
        replies: list[Any] = [call("weather", city="Oslo"), "Snow."]

        async def answer(messages: Any, tools: Any) -> Any:
            if replies:
                return replies.pop(0)
            await gate.wait()
            return "Hail, late."

        agent = Agent(FunctionProvider(answer), tools=[weather])
        result = await agent.arun("Oslo?")
        with capture_output():
            TraceWidget.replay(result)._ipython_display_()
        (bar,) = bars
        bar.steps.value = 0
        bar.panel.kind.value = "system"
        bar.panel.editor.value = "Be terse."
        bar.panel.fork()  # a task on this loop: it waits for the gate
        (task,) = bar.panel.tasks
        with capture_output() as cap:
            ip.events.trigger("pre_run_cell", None)
        assert not bar.frozen and cap.outputs == []  # the fork is still going: the bar stays live
        gate.set()
        await task
        while not bar.frozen:  # the freeze follows the fork's end on this loop
            await asyncio.sleep(0)
        assert bar.forks[0].output == "Hail, late."

    asyncio.run(scenario())


def _displayed(cap: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(o.data, o.metadata or {}) for o in cap.outputs]


def test_the_bar_keeps_a_static_copy_of_its_forks_nested_ones_too(ip: Any, bars: list[Any]) -> None:
    """Issue 45, item 11: a notebook saved at any moment keeps every fork. The bar's output holds,
    beside its widget view, a static copy of the forks made there, brought up to date as each fork
    starts and ends; a fork made from a fork's own "Fork…" is in it too, and kept when it freezes."""
    model = ScriptedProvider([call("weather", city="Oslo"), "Snow.", "Hail.", "Nested: sleet."])
    with capture_output() as cap:
        Agent(model, tools=[weather]).run("Oslo?", on_event=(trace := TraceWidget()))
    (bar,) = bars
    (shown,) = [o for o in _displayed(cap) if o[1].get("agentnb_fork_bar")]  # its view, the copy, marked
    assert WIDGET in shown[0] and shown[1] == {"agentnb_fork_bar": True, "agentnb_static": True}
    assert "need its kernel" in shown[0]["text/html"] and "fork of step" not in shown[0]["text/html"]
    bar.steps.value = 1
    bar.panel.editor.value = "Hail."
    with capture_output() as cap:
        fork = bar.panel.fork()
    started, ended = _displayed(cap)  # two display updates: the fork started, then it ended
    for data, meta in (started, ended):
        assert WIDGET in data and meta["agentnb_static"] and check_html(data["text/html"])[0] == []
    assert "still running" in started[0]["text/html"] and "Hail." not in started[0]["text/html"]
    assert "Hail." in ended[0]["text/html"] and "still running" not in ended[0]["text/html"]
    assert "diff with the parent run" in ended[0]["text/html"] and "Hail." in ended[0]["text/plain"]
    # a fork of the fork, from its own trace's "Fork…": the bar's copy takes it in too
    fork.fork_button.click()
    fork.fork_panel.kind.value = "reply"
    fork.fork_panel.editor.value = "Nested: sleet."
    with capture_output() as cap:
        fork.fork_panel.fork()
    *_, (nested, _meta) = _displayed(cap)
    assert "Nested: sleet." in nested["text/html"] and 'class="anb-fork-nested"' in nested["text/html"]
    with capture_output() as cap:
        ip.events.trigger("pre_run_cell", None)  # a later cell: frozen, the nested fork kept
    ((frozen, meta),) = _displayed(cap)
    assert WIDGET not in frozen and meta == {} and bar.frozen and fork.fork_panel.editor.comm is None
    assert "Hail." in frozen["text/html"] and "Nested: sleet." in frozen["text/html"]
    assert check_html(frozen["text/html"])[0] == [] and "need its kernel" not in frozen["text/html"]
    assert trace.state.finished is not None


def test_the_fork_editor_of_agent_fork_keeps_its_forks_and_freezes(ip: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``%agent --fork N`` in a kernel's cell: its output keeps a static copy of the forks made in
    it, and a later cell freezes it into that copy (its widgets closed), as the bar does."""
    from agentnb.notebook.trace import widget as trace_module

    made: list[ForkPanel] = []
    real = trace_module.fork_editor
    monkeypatch.setattr(trace_module, "fork_editor", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    model = ScriptedProvider([call("weather", city="Oslo"), "Snow.", "Hail."])
    ip.user_ns.update({"model": model, "weather": weather})
    with capture_output():
        ip.run_line_magic("agent", "-p model -q --tools weather Weather in Oslo?")
    with capture_output() as cap:
        ip.run_line_magic("agent", "--fork 0")
    ((shown, meta),) = _displayed(cap)
    assert WIDGET in shown and meta["agentnb_static"] and "Fork editor" in shown["text/html"]
    (panel,) = made
    assert shown[WIDGET]["model_id"] == panel.model_id
    assert panel.step.value == 0 and panel.editor.value == "sunny"
    panel.editor.value = "hail"
    with capture_output() as cap:
        panel.fork()
    assert "Hail." in _displayed(cap)[-1][0]["text/html"]
    with capture_output() as cap:
        ip.events.trigger("pre_run_cell", None)
    ((frozen, _),) = _displayed(cap)
    assert WIDGET not in frozen and "Hail." in frozen["text/html"] and "Fork editor" not in frozen["text/html"]
    assert panel.fork_button.comm is None and check_html(frozen["text/html"])[0] == []
