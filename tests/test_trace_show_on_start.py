"""A trace widget fed by a run in a notebook cell shows itself, live, when the run starts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from IPython.testing import globalipapp
from IPython.utils.capture import capture_output

from agentnb import Agent, tool
from agentnb.notebook.trace.display import LIVE_MARKER, kernel_cell
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@pytest.fixture
def kernel_shell() -> Iterator[Any]:
    """The test shell, seen as a kernel's (what ``kernel_cell`` looks for)."""
    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.kernel = object()
    hooks = list(shell.events.callbacks["pre_run_cell"])
    try:
        yield shell
    finally:
        shell.__dict__.pop("kernel", None)
        shell.events.callbacks["pre_run_cell"][:] = hooks  # the fork bars' freezes (a kernel's only)


def traces(outputs: list[Any]) -> list[Any]:
    """The trace widget's outputs (each is followed by its fork bar: agentnb.notebook.forks.bar)."""
    return [o for o in outputs if "Fork from here" not in o.data.get("text/plain", "")]


def shown(outputs: list[Any]) -> list[str]:
    return [o.data.get("text/plain", "") for o in outputs if not o.metadata.get("update")]


def test_the_widget_shows_itself_live_when_its_run_starts_and_the_cell_end_adds_nothing(kernel_shell: Any) -> None:
    assert kernel_cell() == kernel_shell.execution_count
    w = TraceWidget()
    at_start: list[int] = []

    def watch(event: Any) -> None:
        w(event)
        if event.kind == "run_started":
            at_start.append(len(cap.outputs))

    with capture_output() as cap:
        model = ScriptedProvider([call("ping"), "pong it is"])
        Agent(model, tools=[ping]).run("ping", on_event=watch)
        w._ipython_display_()  # the cell's last line: `trace`
    assert at_start == [2]  # displayed when the run started, before any model call, with its fork bar
    views = [o for o in traces(cap.outputs) if "application/vnd.jupyter.widget-view+json" in o.data]
    assert len(views) == 1 and views[0].data["text/plain"].startswith(LIVE_MARKER)
    assert w._display_handles()  # updated in place (static) when the run ended


def test_a_widget_displayed_already_or_outside_a_kernel_or_replayed_is_not_shown_again(kernel_shell: Any) -> None:
    w = TraceWidget()
    with capture_output() as cap:
        w.show()
        Agent(ScriptedProvider(["hi"])).run("x", on_event=w)
    assert len([o for o in traces(cap.outputs) if "application/vnd.jupyter.widget-view+json" in o.data]) == 1
    with capture_output() as cap:
        result = Agent(ScriptedProvider(["hi"])).run("x")
        TraceWidget.replay(result)  # shown where the caller puts it, not by itself
        TraceWidget(show_on_start=False)(result.events[0])
    assert cap.outputs == []
    del kernel_shell.kernel
    assert kernel_cell() is None  # a terminal's IPython, a script: nothing is displayed
    with capture_output() as cap:
        Agent(ScriptedProvider(["hi"])).run("x", on_event=TraceWidget())
    assert cap.outputs == []
