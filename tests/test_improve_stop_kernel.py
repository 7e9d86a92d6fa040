"""The improvement widget's Stop reaches the search in a real kernel, at several moments (issue 45, item 12).

A Jupyter client plays the front end, as in test_eval_stop_kernel.py: it runs a cell that
improves a scripted student, waits until the live widget shows the moment under test (the phase
it names, and the runs finished in it), and sends the Stop button's click as the widget's comm
message. At each moment the student (or the reflector) never answers, so only the Stop can end
the cell. Under ``improve(...)`` the cell's thread waits for the search: before the fix the
click arrived once the search had ended, and it ran on to "ended: budget".
"""

from __future__ import annotations

import json
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
import asyncio, json
from agentnb import Agent, aimprove, improve
from agentnb.testing import FunctionProvider

def cases(tag, n):
    return [{"id": f"{tag}{i}", "input": f"2+2 ({tag}{i})", "expected": "4"} for i in range(n)]

TRAIN, VAL, TEST = cases("t", 4), cases("v", 2), cases("x", 2)
hang = {}  # (prompt, case prefix): how many such runs answer before the next ones never do
reflector_hangs = False

async def student(messages, tools):
    kind = "better" if "digits" in (messages[0].content or "") else "original"
    rule = (kind, str(messages[-1].content).split("(")[1][0])
    if rule in hang:
        if hang[rule] == 0:
            await asyncio.Event().wait()  # only a cancellation ends this
        hang[rule] -= 1
    return "4" if kind == "better" else "four"

async def reflect(messages, tools):
    if reflector_hangs:
        await asyncio.Event().wait()
    return "```\\nAnswer in digits.\\n```"

def facts(imp):
    rows = None if imp.test is None else len(imp.test.rows)
    return json.dumps({"stopped": imp.stopped, "reason": imp.reason, "spent": imp.spent, "test_rows": rows,
                       "statuses": imp.candidates["status"].tolist(), "verdict": imp.verdict, "text": repr(imp)})
"""

ARGS = 'agent, TRAIN, ["exact"], reflector=FunctionProvider(reflect), validation=VAL, test=TEST, budget=40, minibatch=2'

#: moment -> (what the cell sets first, the phase the widget shows, runs finished in it before the click)
MOMENTS = {
    "original": ('hang = {("original", "v"): 1}', "scoring the original", 1),
    "reflection": ("reflector_hangs = True", "the reflector reads the failures", 0),
    "validation": ('hang = {("better", "v"): 1}', r"new candidate \w+ on the validation set", 1),
    "test": ('hang = {("better", "x"): 1}', "the test comparison", 3),
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


class Front:
    """What the front end saw: the Stop button's comm, the widget's texts, the static end view."""

    def __init__(self) -> None:
        self.button: str | None = None
        self.spent = 0  # the last "runs N/40" the widget showed
        self.phase_at: int | None = None  # the count shown when the phase under test began
        self.static = ""

    def see(self, msg: dict[str, Any], phase: str) -> None:
        content = msg["content"]
        state = content.get("data", {}).get("state", {}) if msg["msg_type"] in ("comm_open", "comm_msg") else {}
        if msg["msg_type"] == "comm_open" and state.get("description") == "Stop":
            self.button = content["comm_id"]
        value = str(state.get("value", ""))
        if m := re.search(r"runs (\d+)/40", value):
            self.spent = int(m.group(1))
        if self.phase_at is None and re.search("now: .*" + phase, value):
            self.phase_at = self.spent
        if msg["msg_type"] == "update_display_data":
            self.static = content["data"].get("text/html", "")


def _session() -> tuple[Any, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3", env=env)
    kc.execute_interactive(SETUP, timeout=60)
    return km, kc


@pytest.mark.parametrize(
    ("form", "moment"),
    [("improve", m) for m in MOMENTS] + [("aimprove", "test")],
)
def test_the_improvement_widgets_stop_ends_the_search_where_it_is(form: str, moment: str) -> None:
    setup, phase, runs = MOMENTS[moment]
    call = f"improve({ARGS})" if form == "improve" else f"await aimprove({ARGS})"
    km, kc = _session()
    try:
        deadline = time.monotonic() + 60
        kc.execute(f'{setup}\nagent = Agent(FunctionProvider(student), system="Answer.")\n'
                   f'imp = {call}\nprint("FACTS", facts(imp), flush=True)')  # fmt: skip
        front = Front()

        def moment_came(msg: dict[str, Any]) -> bool | None:
            front.see(msg, phase)
            there = front.phase_at is not None and front.spent - front.phase_at >= runs
            return True if there and front.button else None

        _read(kc, moment_came, deadline)
        click = {"comm_id": front.button, "data": {"method": "custom", "content": {"event": "click"}}}
        kc.shell_channel.send(kc.session.msg("comm_msg", click))

        def printed(msg: dict[str, Any]) -> dict[str, Any] | None:
            front.see(msg, phase)
            text = msg["content"].get("text", "") if msg["msg_type"] == "stream" else ""
            line = next((x for x in text.splitlines() if x.startswith("FACTS ")), None)
            return json.loads(line[len("FACTS ") :]) if line else None

        facts = _read(kc, printed, deadline)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert facts["stopped"] and "budget" not in facts["reason"], facts
    assert "0/0" not in facts["text"] and "p = 1" not in facts["text"], facts["text"]
    assert "ended: stopped" in front.static  # the static view that replaced the widget says so
    if moment == "original":
        assert facts["reason"] == "stopped before the original was scored: 1 of 2 runs finished on the validation set"
        assert facts["spent"] == 1 and facts["statuses"] == []
    elif moment == "reflection":
        assert re.fullmatch(r"stopped during step 1 \(the reflection on the failures of the original \(\w+\) was "
                            r"cancelled\): the original is kept", facts["reason"]), facts  # fmt: skip
        assert facts["statuses"] == ["seed"] and facts["spent"] == 4
    elif moment == "validation":
        assert re.match(r"stopped during step 1 \(new candidate \w+ on the validation set: 1 of 2 runs finished\)",
                        facts["reason"]), facts  # fmt: skip
        assert facts["statuses"] == ["seed", "stopped"] and facts["spent"] == 7
    else:
        assert facts["reason"].startswith(
            "stopped during the test comparison (the original finished 2 of 2 test cases, the best finished 1 of 2 "
            "test cases); the search had ended: "
        ), facts
        assert facts["test_rows"] == 3 and facts["verdict"].startswith("The test comparison was stopped"), facts
