"""``agent.run()`` in a real kernel waits in place for the widget's decision (no browser).

A Jupyter client plays the front end: it runs a cell whose blocking ``agent.run()`` waits for
approval, sends another cell meanwhile, then the Approve click as the widget's comm message. The
click must reach the run although the cell still holds the kernel and another request waits
behind it; the other cell runs after, in order.
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

CELL = """\
from IPython.display import display
from agentnb import Agent, tool
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call
ran = []

@tool(requires_approval=True)
def delete_file(path: str) -> str:
    '''Delete a file (here: only noted).'''
    ran.append(path)
    return f"deleted {path}"

w = TraceWidget()
display(w)
print("APPROVE-ID", w.approval.approve_button.model_id, flush=True)
r = Agent(ScriptedProvider([call("delete_file", path="/tmp/x"), "Deleted."]), tools=[delete_file]).run(
    "go", on_event=w)
print("RESULT", r.stop_reason, r.output, ran, flush=True)
"""


def _wait_for(kc: Any, needle: str, deadline: float, seen: list[str]) -> str:
    """Read iopub (stream text, and widget state values as ``COMM ...``) until a line contains
    ``needle``; that line."""
    while time.monotonic() < deadline:
        for line in seen:
            if needle in line:
                return line
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            continue
        if msg["msg_type"] == "stream":
            seen.extend(msg["content"]["text"].splitlines())
        elif msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        elif msg["msg_type"] == "comm_msg":  # a widget's state, e.g. the approval panel's label
            seen.append("COMM " + str(msg["content"]["data"].get("state", {}).get("value", "")))
    raise AssertionError(f"no {needle!r} in time; saw {[line[-160:] for line in seen[-10:]]}")


def test_a_blocking_run_gets_the_click_past_a_waiting_cell() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    try:
        deadline = time.monotonic() + 60
        seen: list[str] = []
        kc.execute(CELL)
        button = _wait_for(kc, "APPROVE-ID", deadline, seen).split()[1]
        _wait_for(kc, "Approve this tool call?", deadline, seen)  # the panel's label: a call waits
        assert not any(line.startswith("RESULT") for line in seen)
        second = kc.execute('print("SECOND cell ran", flush=True)')  # held back behind the run
        time.sleep(0.3)
        click = kc.session.msg(
            "comm_msg", {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
        )
        kc.shell_channel.send(click)
        assert _wait_for(kc, "RESULT", deadline, seen) == "RESULT answer Deleted. ['/tmp/x']"
        _wait_for(kc, "SECOND cell ran", deadline, seen)
        assert seen.index("RESULT answer Deleted. ['/tmp/x']") < seen.index("SECOND cell ran")  # in order
        reply = kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != second:
            reply = kc.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
