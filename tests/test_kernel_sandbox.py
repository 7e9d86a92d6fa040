"""``kernel_tools("sandbox", share=[...])`` (issue 46 item 3): run_python in a separate kernel process.

Most tests share one module-scoped sandbox (a kernel start costs a second or two); the ones that
kill it (``os._exit``, a segfault, a CPU limit) check that the next call gets a fresh, re-seeded
one. Every sandbox is shut down at the end, and the last test checks no kernel process is left.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pytest

from agentnb import Agent, kernel_tools
from agentnb.errors import UserError
from agentnb.kernel.sandbox import SandboxError, SandboxTools, process
from agentnb.testing import ScriptedProvider, call
from agentnb.timetravel import replay

pytestmark = pytest.mark.timeout(120)

SHARED = ["df", "n", "lock", "log", "missing"]


def _kernels() -> set[int]:
    """This process's child processes that run the sandbox's launcher."""
    found = set()
    for child in psutil.Process().children(recursive=True):
        try:
            if any("launch.py" in part for part in child.cmdline()):
                found.add(child.pid)
        except psutil.Error:
            continue
    return found


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    log = open(tmp_path_factory.mktemp("sandbox") / "log.txt", "w")  # noqa: SIM115 (an open file is the point)
    yield {"df": pd.DataFrame({"price": [3.5, None, 2.25], "city": ["Oslo", "Rome", "Lima"]}), "n": 41,
           "lock": threading.Lock(), "log": log}  # fmt: skip
    log.close()


@pytest.fixture(scope="module")
def tools(ns: dict[str, Any]) -> Iterator[SandboxTools]:
    made = kernel_tools("sandbox", namespace=ns, share=SHARED, approval=False, timeout=3, memory_mb=4096)
    assert isinstance(made, SandboxTools)
    try:
        yield made
    finally:
        made.shutdown()


def run(tools: SandboxTools, code: str) -> Any:
    return tools.sandbox.run(code)


def test_started_when_first_needed_and_the_notebook_is_untouched(tools: SandboxTools, ns: dict[str, Any]) -> None:
    assert tools.sandbox.process is None  # kernel_tools() started nothing
    before = {k: id(v) for k, v in ns.items()}
    frame = ns["df"].copy()
    first = run(tools, "df['price'] = 0.0\ndf.drop(columns='city', inplace=True)\nn = n + 1\nnew = 'made here'\nn")
    assert first.value == "42" and first.error is None
    assert first.notes == (
        "(Copies of the notebook's df, n are in the sandbox.)",
        "(Not copied: lock is a lock (_thread.lock): it cannot be copied into another process "
        "(TypeError: cannot pickle '_thread.lock' object).)",
        "(Not copied: log is an open file or stream (_io.TextIOWrapper): it cannot be copied into another "
        "process (TypeError: cannot pickle '_io.TextIOWrapper' object).)",
        "(Not copied: missing is not defined in the notebook.)",
    )
    assert set(first.changed) == {"n", "new"}  # df changed in place: same object
    assert {k: id(v) for k, v in ns.items()} == before and sorted(ns) == ["df", "lock", "log", "n"]
    pd.testing.assert_frame_equal(ns["df"], frame)
    assert ns["n"] == 41
    assert run(tools, "list(df.columns), n").value == "(['price'], 42)"  # the sandbox kept its own


def test_uncopyable_variables_say_why(tools: SandboxTools) -> None:
    text = "\n".join(tools.sandbox.run("1").notes or ("(no notes: the sandbox had started)",))
    assert text == "(no notes: the sandbox had started)"  # the notes came with the first call
    result = run(tools, "lock")
    assert result.error is not None and result.error.ename == "NameError"


def test_a_result_reads_like_a_cell(tools: SandboxTools) -> None:
    code = "import sys\nprint('out \\x1b[31mred\\x1b[0m')\nprint('err', file=sys.stderr)\nx = 1\nt = df.copy()\nt['price'] = 2.5\nt['city'] = 'Oslo'\nt"
    result = run(tools, code)
    assert result.stdout == "out red\n" and result.stderr == "err\n"
    assert result.value is not None and result.value.startswith(
        "DataFrame with 3 rows x 2 columns\n|  | price | city |"
    )
    assert "x" in result.changed
    text = result.text()
    assert "\nstderr:\nerr\nOut:\nDataFrame with 3 rows" in text and "<table" not in text

    error = run(tools, "def f():\n    return 1 / 0\nf()")
    assert error.error is not None and (error.error.ename, error.error.evalue) == (
        "ZeroDivisionError",
        "division by zero",
    )
    assert "----> 2     return 1 / 0" in error.error.traceback and "\x1b" not in error.error.traceback
    assert "f" in error.changed  # names made before the error are still reported

    loud = run(tools, "print('x' * 50_000)")
    assert loud.stdout.endswith("… (stdout cut: 40,001 more characters not shown)")

    figure = run(tools, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
    assert len(figure.images) == 1 and figure.images[0].data.startswith(b"\x89PNG")


def test_a_hang_times_out_and_the_sandbox_still_answers(tools: SandboxTools) -> None:
    run(tools, "kept = 'still here'")
    hung = run(tools, "import time\nprint('before')\ntime.sleep(60)")
    assert hung.error is not None and hung.error.ename == "Timeout"
    assert "did not finish within 3 s: it was interrupted; the sandbox kept its variables" in hung.error.evalue
    assert hung.stdout == "before\n"
    assert run(tools, "kept").value == "'still here'"


def test_code_that_ignores_the_interrupt_gets_a_fresh_sandbox(
    tools: SandboxTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(process, "GRACE", 0.5)  # how long an interrupted kernel has to stop
    run(tools, "kept = 1")
    stuck = run(tools, "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(60)")
    assert stuck.error is not None and "did not stop when interrupted: the sandbox was restarted" in stuck.error.evalue
    assert "shared variables were copied again" in stuck.error.evalue
    assert run(tools, "'kept' in dir(), n").value == "(False, 41)"


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import os\nos._exit(3)", "it exited with code 3"),
        ("import ctypes\nctypes.string_at(0)", "a segmentation fault (SIGSEGV)"),
    ],
    ids=["os_exit", "segfault"],
)
def test_a_sandbox_that_dies_is_restarted_and_says_so(tools: SandboxTools, code: str, why: str) -> None:
    run(tools, "mine = 1")
    died = run(tools, code)
    assert died.error is not None and died.error.ename == "SandboxDied"
    assert died.error.evalue == (
        f"the sandbox died ({why}); it was restarted and its variables are gone; shared variables were copied again"
    )
    assert run(tools, "'mine' in dir(), n, len(df)").value == "(False, 41, 3)"


def test_memory_is_limited(tools: SandboxTools) -> None:
    big = run(tools, "x = bytearray(5 * 2**30)")  # over the fixture's 4,096 MiB of address space
    assert big.error is not None and big.error.ename == "MemoryError"
    assert run(tools, "n").value == "41"


def test_cpu_time_is_limited_and_a_dropped_sandbox_leaves_no_process(ns: dict[str, Any]) -> None:
    small = kernel_tools("sandbox", namespace=ns, approval=False, cpu_seconds=1, timeout=60)
    burn = run(small, "while True:\n    pass")  # 1 to 3 s of CPU, well within the 60 s of wall time
    assert burn.error is not None and burn.error.ename == "SandboxDied"
    assert "the CPU time limit (SIGXCPU)" in burn.error.evalue
    assert run(small, "1 + 1").value == "2"
    kernel = small.sandbox.process
    assert kernel is not None
    pid, folder = kernel.km.provisioner.process.pid, kernel.folder
    del small, kernel
    gc.collect()  # the agent and tools are gone: so is their sandbox
    assert not psutil.pid_exists(pid)
    assert not Path(folder).exists()


def test_pull_brings_a_copy_back(tools: SandboxTools, ns: dict[str, Any]) -> None:
    run(tools, "clean = df.dropna()\ngen = (i for i in range(3))")
    copy = tools.pull("clean")
    assert isinstance(copy, pd.DataFrame) and len(copy) == 2 and "clean" not in ns
    assert tools.pull("clean") is not copy  # a copy each time
    with pytest.raises(SandboxError, match="the sandbox has no variable 'nothing'"):
        tools.pull("nothing")
    with pytest.raises(SandboxError, match="gen cannot be copied out of the sandbox: TypeError"):
        tools.pull("gen")
    with pytest.raises(SandboxError, match=r"pull takes a variable's name .* not 'df\.price'"):
        tools.pull("df.price")


def test_bad_options_are_user_errors(ns: dict[str, Any]) -> None:
    with pytest.raises(UserError, match=r"share takes the names of the notebook.s variables, not .df\.x."):
        kernel_tools("sandbox", namespace=ns, share=["df.x"])
    with pytest.raises(UserError, match="timeout must be a number > 0 or None, not 0"):
        kernel_tools("sandbox", namespace=ns, timeout=0)
    with pytest.raises(UserError, match="approval must be True or False, not 'no'"):
        kernel_tools("sandbox", namespace=ns, approval="no")
    default = kernel_tools("sandbox", namespace=ns)
    assert [t.requires_approval for t in default] == [True, True]  # approval stays on by default


def test_an_agent_runs_code_and_pulls_then_a_replay_starts_fresh(tools: SandboxTools, ns: dict[str, Any]) -> None:
    script = [
        call("run_python", code="runs = globals().get('runs', 0) + 1\ntotal = n + runs\ntotal"),
        call("pull", name="total"),
        call("pull", name="total", as_name="total"),
        "Done.",
    ]
    first = Agent(ScriptedProvider(script), tools=tools).run("Add one to n.")
    results = [m.content for m in first.messages if m.role == "tool"]
    assert results[0].endswith("Out: 42\nNames created or changed: runs, total")
    assert results[1] == "The notebook now has total: int 42"
    assert results[2].startswith("Error: pull raised ValueError: the notebook already has 'total'")
    assert ns.pop("total") == 42

    # Replayed on the same sandbox, `runs` would be 2 and the request would differ: a replay starts fresh.
    tools.restart()
    again = Agent(replay(first), tools=tools).run("Add one to n.")
    assert [m.content for m in again.messages if m.role == "tool"] == results
    assert ns.pop("total") == 42


def test_the_agents_tool_timeout_interrupts_the_sandbox(ns: dict[str, Any], tools: SandboxTools) -> None:
    script = [call("run_python", code="import time\ntime.sleep(60)"), call("run_python", code="n"), "ok"]
    result = Agent(ScriptedProvider(script), tools=tools, tool_timeout=1).run("Sleep.")
    answers = [m.content for m in result.messages if m.role == "tool"]
    assert answers[0] == "Error: run_python did not finish within 1 seconds."
    assert answers[1].endswith("Out: 41")


def test_no_kernel_process_is_left(tools: SandboxTools) -> None:  # (last: it stops the module's sandbox)
    assert tools.sandbox.process is not None and _kernels()
    tools.shutdown()
    assert _kernels() == set()
