"""Fork from here in a real kernel (no browser): the clicks arrive as the widgets' comm messages.

A Jupyter client plays the front end: it shows a finished run's trace, clicks "Fork…", types a
new tool result into the editor (a state update, as the browser sends it), clicks "Fork from
here", and reads the fork's result: it ran as a task on the kernel's loop, the kernel stayed free.
"""

from __future__ import annotations

import os
import queue
import time
from pathlib import Path
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipywidgets")
pytestmark = pytest.mark.timeout(120)

SHOW = """\
from IPython.display import display
from agentnb import Agent, tool
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call
ran = []

@tool
def weather(city: str) -> str:
    '''The weather in a city.'''
    ran.append(city)
    return "sunny"

model = ScriptedProvider([call("weather", city="Paris"), "Sunny.", "Rain, take a coat."])
r = Agent(model, tools=[weather]).run("Paris?")
w = TraceWidget.replay(r)
display(w)
print("FORK-ID", w.fork_button.model_id, flush=True)
"""

IDS = 'print("PANEL", w.fork_panel.editor.model_id, w.fork_panel.fork_button.model_id, flush=True)'

READ = """\
import asyncio
await asyncio.gather(*w.fork_panel.tasks)
f = w.fork_panel.forks[0]
print("FORKED", repr(f.output), f.lineage.forked_at, len(model.requests), ran, flush=True)
"""


def _wait_for(kc: Any, needle: str, deadline: float, seen: list[str], start: str = "") -> str:
    while time.monotonic() < deadline:
        for line in seen:
            if needle in line and line.startswith(start):
                return line
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            continue
        if msg["msg_type"] == "stream":
            seen.extend(msg["content"]["text"].splitlines())
        elif msg["msg_type"] == "update_display_data":  # one line: the HTML it shows now (beside a widget?)
            data = msg["content"]["data"]
            live = "LIVE-" if "application/vnd.jupyter.widget-view+json" in data else ""
            seen.append(f"{live}UPDATE " + data.get("text/html", "").replace("\n", " "))
        elif msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
    raise AssertionError(f"no {needle!r} in time; saw {[line[-160:] for line in seen[-10:]]}")


def _comm(kc: Any, comm_id: str, data: dict[str, Any]) -> None:
    kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data}))


def test_fork_from_here_by_clicks_in_a_kernel() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    try:
        deadline = time.monotonic() + 90
        seen: list[str] = []
        kc.execute(SHOW)
        fork_id = _wait_for(kc, "FORK-ID", deadline, seen).split()[1]
        _comm(kc, fork_id, {"method": "custom", "content": {"event": "click"}})
        kc.execute(IDS)
        editor, go = _wait_for(kc, "PANEL", deadline, seen).split()[1:3]
        _comm(kc, editor, {"method": "update", "state": {"value": "rain"}, "buffer_paths": []})
        _comm(kc, go, {"method": "custom", "content": {"event": "click"}})
        kc.execute(READ)
        line = _wait_for(kc, "FORKED", deadline, seen)
        # one more model request (step 1), none for step 0, and the tool did not run again
        assert line == "FORKED 'Rain, take a coat.' 0 3 ['Paris']"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


MAGIC = """\
%load_ext agentnb
from agentnb import tool
from agentnb.notebook.forks import bar as fork_bar
from agentnb.testing import ScriptedProvider, call
ran = []

@tool
def weather(city: str) -> str:
    '''The weather in a city.'''
    ran.append(city)
    return "sunny"

model = ScriptedProvider([call("weather", city="Paris"), "Sunny.", "Rain, take a coat."])
bars = []
shipped_fill = fork_bar.ForkBar.fill

def fill(self, result):  # the test's eyes: the bar's and then the editor's widget ids
    shipped_fill(self, result)
    bars.append(self)
    print("BAR", self.steps.model_id, flush=True)
    self.steps.observe(
        lambda _: print("PANEL", self.panel.editor.model_id, self.panel.fork_button.model_id, flush=True),
        names="value",
    )

fork_bar.ForkBar.fill = fill
"""

READ_BAR = """\
import asyncio
await asyncio.gather(*bars[0].panel.tasks)
f = bars[0].forks[0]
print("FORKED", repr(f.output), f.lineage.forked_at, len(model.requests), ran, flush=True)
"""


def test_a_finished_magic_trace_forks_from_its_step_control_in_a_kernel() -> None:
    """``%%agent`` in a real kernel: its finished trace is static HTML with a fork bar after it;
    a click on step 0's control (the ToggleButtons' state update), an edit, "Fork from here"."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    try:
        deadline = time.monotonic() + 90
        seen: list[str] = []
        kc.execute(MAGIC)
        kc.execute("%%agent -p model --tools weather\nWeather in Paris?")
        steps = _wait_for(kc, "BAR", deadline, seen).split()[1]
        _comm(kc, steps, {"method": "update", "state": {"index": 0}, "buffer_paths": []})
        editor, go = _wait_for(kc, "PANEL", deadline, seen).split()[1:3]
        _comm(kc, editor, {"method": "update", "state": {"value": "rain"}, "buffer_paths": []})
        _comm(kc, go, {"method": "custom", "content": {"event": "click"}})
        kc.execute(READ_BAR)  # this cell also freezes the bar, once the fork has ended
        line = _wait_for(kc, "FORKED", deadline, seen)
        # one more model request (step 1), none for step 0, and the tool did not run again
        assert line == "FORKED 'Rain, take a coat.' 0 3 ['Paris']"
        # while the bar was live, its static copy beside the widget followed the fork (issue 45)
        running = _wait_for(kc, "fork of step [0]", deadline, seen, start="LIVE-UPDATE")
        assert "still running" in running and "Rain, take a coat." not in running
        assert "diff with the parent run" in _wait_for(kc, "Rain, take a coat.", deadline, seen, start="LIVE-UPDATE")
        # the bar froze into the fork's static trace (what the saved notebook keeps)
        frozen = _wait_for(kc, "fork of step [0]", deadline, seen, start="UPDATE")
        assert frozen.startswith("UPDATE <!--agentnb live trace") and "Rain, take a coat." in frozen
        assert "anb-static" in frozen and "diff with the parent run" in frozen
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
