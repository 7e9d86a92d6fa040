"""The evaluation widget's Stop reaches the runs in a real kernel (no browser; issue 39, item 2).

A Jupyter client plays the front end: it runs a cell that evaluates a slow agent on 400 cases
(50 s), waits until the progress widget shows a finished row, and sends the Stop button's click
as the widget's comm message. Under ``evaluate(...)`` and ``%agent_eval`` the cell's thread
waits for the runs; the click reached them only once all 400 had run (``stopped == False``).
The browser test (tests/browser/test_eval_stop.py) clicks the same button with a mouse.
"""

from __future__ import annotations

import os
import queue
import re
import time
from pathlib import Path
from typing import Any

import pytest

jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("ipywidgets")
pytestmark = pytest.mark.timeout(180)

SETUP = """\
%load_ext agentnb
from agentnb import Agent
from agentnb.evaluation import aevaluate, contains, evaluate
from agentnb.testing import FunctionProvider
slow = Agent(FunctionProvider(lambda messages, tools: "ok", delay=0.25))
cases = [f"case {i}" for i in range(400)]
"""

CELLS = {
    "evaluate": 'ev = evaluate(slow, cases, scorers=[contains("ok")], concurrency=2)',
    "aevaluate": 'ev = await aevaluate(slow, cases, scorers=[contains("ok")], concurrency=2)',
    "agent_eval": "ev = %agent_eval cases slow --scorers contains --concurrency 2",
}


def _read(kc: Any, until: Any, deadline: float) -> Any:
    """Read iopub until ``until(msg)`` gives a value; that value."""
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            continue
        if msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        found = until(msg)
        if found is not None:
            return found
    raise AssertionError("the kernel did not get there in time")


@pytest.mark.parametrize("form", list(CELLS))
def test_the_progress_widgets_stop_ends_the_evaluation(form: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    try:
        kc.execute_interactive(SETUP, timeout=60)
        deadline = time.monotonic() + 40  # well before the 50 s the whole evaluation takes
        kc.execute(CELLS[form] + '\nprint("STOPPED", ev.stopped, len(ev.rows), flush=True)')

        def stop_button(msg: dict[str, Any]) -> str | None:
            state = msg["content"].get("data", {}).get("state", {})
            return (
                msg["content"]["comm_id"]
                if msg["msg_type"] == "comm_open" and state.get("description") == "Stop"
                else None
            )

        button = _read(kc, stop_button, deadline)

        def a_row_done(msg: dict[str, Any]) -> bool | None:
            value = str(msg["content"].get("data", {}).get("state", {}).get("value", ""))
            return True if msg["msg_type"] == "comm_msg" and re.search(r"agent: [1-9]\d*/400 done", value) else None

        _read(kc, a_row_done, deadline)  # the widget shows rows finishing: the runs are under way
        click = {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
        kc.shell_channel.send(kc.session.msg("comm_msg", click))

        def printed(msg: dict[str, Any]) -> str | None:
            text = msg["content"].get("text", "") if msg["msg_type"] == "stream" else ""
            return next((line for line in text.splitlines() if line.startswith("STOPPED")), None)

        _, stopped, rows = _read(kc, printed, deadline).split()
        assert stopped == "True" and int(rows) < 400, (stopped, rows)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_cells_queued_behind_a_stopped_evaluate_run_in_order() -> None:
    # Run All sends every cell at once. While evaluate(...) held its cell, the cells behind it
    # were read and kept, then given back; the first of them could run after the others (4 of 5
    # runs before the fix: C, D, B).
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    try:
        kc.execute_interactive(SETUP, timeout=60)
        deadline = time.monotonic() + 40
        kc.execute('ev = evaluate(slow, cases, concurrency=2)\nprint("A", ev.stopped, flush=True)')
        for name in "BCD":
            kc.execute(f'print("{name}", flush=True)')

        def stop_button(msg: dict[str, Any]) -> str | None:
            state = msg["content"].get("data", {}).get("state", {})
            return (
                msg["content"]["comm_id"]
                if msg["msg_type"] == "comm_open" and state.get("description") == "Stop"
                else None
            )

        button = _read(kc, stop_button, deadline)
        click = {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
        kc.shell_channel.send(kc.session.msg("comm_msg", click))
        printed: list[str] = []

        def four_lines(msg: dict[str, Any]) -> list[str] | None:
            if msg["msg_type"] == "stream":
                printed.extend(msg["content"]["text"].split())
            return printed if printed.count("B") + printed.count("C") + printed.count("D") == 3 else None

        assert _read(kc, four_lines, deadline) == ["A", "True", "B", "C", "D"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
