"""run_python (kernel_tools("code")): code in the user's namespace, approved, stopped by a timeout,
shown in every view, replayed, forked with edited code and diffed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.testing import globalipapp

from agentnb import Agent, Approve, Deny, Edit, UserError, kernel_tools
from agentnb.events import ApprovalDecided, AttachmentAdded, ToolFinished
from agentnb.kernel.code import CodeRunner
from agentnb.printer import TextPrinter
from agentnb.testing import ScriptedProvider, call
from agentnb.timetravel import ReplayMismatch, diff, replay


def code_agent(replies: list[Any], ns: dict[str, Any], approver: Any = None, **options: Any) -> Agent:
    tools = kernel_tools("code", namespace=ns, **options)
    return Agent(ScriptedProvider(replies), tools=tools, approver=approver)


def approve(call: Any) -> Approve:
    return Approve()


def finished(result: Any) -> list[ToolFinished]:
    return [e for e in result.events if isinstance(e, ToolFinished)]


def code_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agentnb-run_python"]


def test_a_cell_s_output_value_and_names_changed() -> None:
    ns: dict[str, Any] = {"prices": [3.5, 4.0], "keep": 1}
    code = "import sys\ntotal = sum(prices)\nprint('summing'); print('warn', file=sys.stderr)\nprices = prices + [1]\ntotal"
    result = code_agent([call("run_python", code=code), "7.5"], ns, approve).run("total?")
    text = result.messages[2].content
    assert text.startswith("stdout:\nsumming\nstderr:\nwarn\nvalue:\n7.5\nnames changed: ")
    assert "total (new, float)" in text and "prices (changed, list)" in text and "keep" not in text
    assert ns["total"] == 7.5 and ns["prices"] == [3.5, 4.0, 1]
    (done,) = finished(result)
    assert done.structured["kind"] == "code" and {n["name"] for n in done.structured["names"]} == {
        "sys",
        "total",
        "prices",
    }


def test_exceptions_and_sys_exit_are_data_and_the_next_call_runs() -> None:
    ns: dict[str, Any] = {}
    replies = [
        call("run_python", code="def f(x):\n    return 1 / x\nf(0)"),
        call("run_python", code="import sys\nsys.exit(3)"),
        call("run_python", code="raise KeyboardInterrupt"),
        call("run_python", code="x = (1,"),
        call("run_python", code="after = 'alive'\nafter"),
        "done",
    ]
    result = code_agent(replies, ns, approve).run("go")
    texts = [m.content for m in result.messages if m.role == "tool"]
    assert "error: ZeroDivisionError: division by zero" in texts[0]
    assert 'File "<run_python #' in texts[0] and "return 1 / x" in texts[0]
    assert "agentnb" not in texts[0]  # the traceback is cut to the code's own frames
    assert "error: SystemExit: 3" in texts[1]
    assert "error: KeyboardInterrupt" in texts[2]
    assert "error: SyntaxError" in texts[3]
    assert texts[4].startswith("value:\n'alive'") and result.output == "done"


def test_a_timeout_stops_the_code_and_later_prints_reach_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    ns: dict[str, Any] = {"n": 0}
    replies = [call("run_python", code="print('started')\nwhile True:\n    n += 1"), "stopped"]
    result = code_agent(replies, ns, approve, timeout=0.3).run("loop")
    text = result.messages[2].content
    assert text.startswith("stdout:\nstarted") and "stopped: timed out after 0.3 s" in text
    assert not code_threads()  # the thread ended: nothing keeps running or printing
    frozen = ns["n"]
    print("a later cell prints")
    assert capsys.readouterr().out == "a later cell prints\n"  # not captured by a leftover thread
    assert ns["n"] == frozen


def test_the_agent_s_tool_timeout_and_a_stop_stop_the_code_too() -> None:
    ns: dict[str, Any] = {"n": 0}
    agent = code_agent(
        [
            call("run_python", code="while True:\n    try:\n        n += 1\n    except BaseException:\n        pass"),
            "x",
        ],
        ns,
        approve,
    )
    agent.tool_timeout = 0.3
    result = agent.run("loop")
    assert "did not finish within 0.3 seconds" in result.messages[2].content
    assert not code_threads()  # stopped although the code catches every exception: raised again

    ns["go"] = False
    stop_agent = code_agent([call("run_python", code="go = True\nwhile True:\n    pass"), "never"], ns, approve)

    async def stop_while_running() -> Any:
        task = asyncio.ensure_future(stop_agent.arun("loop", on_cancel="return"))
        while not ns["go"]:  # the code runs
            await asyncio.sleep(0.01)
        task.cancel()  # what Stop and the kernel's interrupt do
        return await task

    stopped = asyncio.run(stop_while_running())
    assert stopped.stop_reason == "cancelled" and not code_threads()


def test_output_is_capped_with_a_note_and_hostile_text_stays_text() -> None:
    runner = CodeRunner({}, max_output=1000)
    r = runner.run("while True:\n    print('x' * 100)", timeout=0.3)
    assert len(r.stdout) == 1000 and r.cut > 0
    ns: dict[str, Any] = {}
    hostile = "print('\\x1b[31mred <script>alert(1)</script> $\\\\style{color:red}{x}$')"
    import io

    from agentnb.notebook.trace.widget import TraceWidget

    w = TraceWidget()
    result = code_agent([call("run_python", code=hostile), "ok"], ns, approve).run("go", on_event=w)
    assert "[output cut" not in result.messages[2].content
    assert "<script>" not in w.body_html and "&lt;script&gt;" in w.body_html
    assert "$\\style" in w.body_html and "tex2jax_ignore" in w.body_html  # TeX shown as written
    printed = io.StringIO()
    printer = TextPrinter(printed)
    for e in result.events:
        printer(e)
    assert "\x1b" not in printed.getvalue() and "\\x1b[31mred" in printed.getvalue()
    capped = CodeRunner({}, max_output=10).run("print('y' * 50)")
    from agentnb.kernel.results import render_code

    assert "[output cut: 41 more characters were printed and not kept]" in render_code(capped)


def test_denied_code_does_not_run_and_the_model_reads_why() -> None:
    ns: dict[str, Any] = {}
    result = code_agent([call("run_python", code="ran = True"), "ok"], ns).run("go")  # unattended
    assert "ran" not in ns and "The call was denied and not run" in result.messages[2].content
    policy = lambda c: Deny("no writes today")  # noqa: E731
    result = code_agent([call("run_python", code="ran = True"), "ok"], ns, policy).run("go")
    assert "ran" not in ns and result.messages[2].content == "The call was denied and not run: no writes today"
    assert kernel_tools("code", namespace=ns)[-1].requires_approval  # on by default
    assert not kernel_tools("code", namespace=ns, approval=False)[-1].requires_approval
    with pytest.raises(UserError, match="approval must be True or False"):
        kernel_tools("code", namespace=ns, approval="no")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="timeout must be a positive number"):
        kernel_tools("code", namespace=ns, timeout=0)


def test_an_edit_runs_the_person_s_code() -> None:
    ns: dict[str, Any] = {}
    policy = lambda c: Edit({"code": "chosen = 'mine'\nchosen"})  # noqa: E731
    result = code_agent([call("run_python", code="chosen = 'model'"), "ok"], ns, policy).run("go")
    assert ns["chosen"] == "mine" and result.messages[2].content.startswith("value:\n'mine'")
    (decided,) = [e for e in result.events if isinstance(e, ApprovalDecided)]
    assert decided.decision == "edit"


def test_rich_values_a_table_and_a_figure() -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    ns: dict[str, Any] = {"df": pd.DataFrame({"price": [1.0, None, 3.0]})}
    replies = [
        call("run_python", code="df.describe()"),
        call("run_python", code="import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])\nfig"),
        call("run_python", code="plt.figure(); plt.plot([3, 1]); None"),
        "ok",
    ]
    result = code_agent(replies, ns, approve).run("look")
    texts = [m.content for m in result.messages if m.role == "tool"]
    assert "DataFrame with 8 rows x 1 columns" in texts[0] and "| count | 2 |" in texts[0]
    assert "Image attached (image/png" in texts[1]
    assert "A figure the code drew is attached" in texts[2]
    assert len([e for e in result.events if isinstance(e, AttachmentAdded)]) == 2
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # drawn figures were closed once attached (no late inline display)


def test_the_approval_panel_shows_code_edits_it_and_approves_all() -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    ns: dict[str, Any] = {}
    w = TraceWidget()
    code = "a = '<img src=x onerror=alert(1)>'"
    replies = [call("run_python", code=code), call("run_python", code="b = 2"), call("run_python", code="c = 3"), "ok"]
    agent = code_agent(replies, ns)

    async def main() -> Any:
        task = asyncio.ensure_future(agent.arun("go", on_event=w))
        await w.approval.next_pending()
        label = w.approval.label.value
        assert 'class="anb-code"' in label and "<img" not in label and "&lt;img src=x" in label
        assert w.approval.arguments.value == code and w.approval.edit_button.description == "Run this code"
        w.approval.arguments.value = "a = 'edited'"
        w.approval.edit_button.click()
        await w.approval.next_pending()
        w.approval.all_button.click()  # b, and c without asking
        return await task

    result = asyncio.run(main())
    assert {k: v for k, v in ns.items() if not k.startswith("_")} == {"a": "edited", "b": 2, "c": 3}
    assert [e.decision for e in result.events if isinstance(e, ApprovalDecided)] == ["edit", "approve", "approve"]
    body = w.body_html
    assert "code edited by widget" in body and 'class="anb-del"' in body and "names changed:" in body
    assert "<img" not in body


def test_replay_reruns_the_code_and_fork_with_edited_code_diffs() -> None:
    ns: dict[str, Any] = {"runs": 0}
    code = "runs += 1\nx = 40 + 2\nx"
    first = code_agent([call("run_python", code=code), "42"], ns, approve).run("x?")
    assert ns["runs"] == 1
    with pytest.raises(ReplayMismatch):  # re-run: the side effect happens again, x is the same
        Agent(replay(first), tools=kernel_tools("code", namespace=ns), approver=approve).run("x?")
    assert ns["runs"] == 2
    steady = code_agent([call("run_python", code="y = 6 * 7\ny"), "42"], ns, approve).run("y?")
    del ns["y"]  # the namespace as it was when the run began: the same results
    again = Agent(replay(steady), tools=kernel_tools("code", namespace=ns), approver=approve).run("y?")
    assert again.output == "42" and again.messages[2].content == steady.messages[2].content
    forked = steady.fork(0, arguments={"code": "y = 6 * 9\ny"}, agent=code_agent(["54"], ns, approve))
    assert ns["y"] == 54 and "value:\n54" in forked.messages[2].content
    d = diff(steady, forked)
    assert d.first_divergence == 0
    text = str(d)
    assert "run_python code (a -, b +):" in text and "-y = 6 * 7" in text and "+y = 6 * 9" in text
    html = d._repr_html_()
    assert "anb-del" in html and "y = 6 * 9" in html


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    from agentnb.notebook.magics.agent import AgentMagics
    from agentnb.notebook.magics.options import MagicOptions

    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    magics: AgentMagics = shell.magics_manager.registry["AgentMagics"]
    magics.defaults = MagicOptions()
    magics.history = None
    magics.display_mode = "text"
    saved = dict(shell.user_ns)
    yield shell
    shell.user_ns.clear()
    shell.user_ns.update(saved)


def test_in_an_ipython_shell_a_stopped_run_leaves_the_kernel_printing(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.run_cell("counter = 0")
    tools = {t.name: t for t in kernel_tools("code", approval=False, timeout=0.3)}  # the shell's namespace
    agent = Agent(
        ScriptedProvider([call("run_python", code="while True:\n    counter += 1"), "ok"]), tools=list(tools.values())
    )
    result = agent.run("loop")
    assert "stopped: timed out" in result.messages[2].content and not code_threads()
    capsys.readouterr()
    ip.run_cell("print('cell output', counter > 0)")
    assert capsys.readouterr().out == "cell output True\n"


def test_the_kernel_option_of_the_magic(ip: Any) -> None:
    ip.user_ns["model"] = ScriptedProvider([call("list_variables"), "listed"])
    ip.user_ns["table"] = [1, 2, 3]
    ip.run_line_magic("agent", "-p model -t none -q --new --kernel read what is there?")
    assert "table: list of 3 int" in ip.user_ns["_agent_result"].messages[2].content
    ip.user_ns["model"] = ScriptedProvider([call("run_python", code="touched = True"), "ok"])
    ip.run_line_magic("agent", "-p model -t none -q --new --kernel code change it")
    assert "touched" not in ip.user_ns  # no one there to approve (quiet, no widget): denied
    assert "denied" in ip.user_ns["_agent_result"].messages[2].content
    ip.user_ns["model"] = ScriptedProvider([call("run_python", code="x = 1"), "ok"])
    ip.run_line_magic("agent", "-p model -t none -q --new change it")
    assert "x" not in ip.user_ns and "Not executed" in ip.user_ns["_agent_result"].messages[2].content
    with pytest.raises(UserError, match="--kernel takes read, code or sandbox"):
        from agentnb.notebook.magics.options import parse_line

        parse_line("--kernel all hi")


def test_ctrl_c_while_the_code_runs_stops_the_run_as_stop_does() -> None:
    import os
    import signal

    ns: dict[str, Any] = {"go": False}
    agent = code_agent([call("run_python", code="go = True\nwhile True:\n    pass"), "never"], ns, approve)

    def interrupt() -> None:  # what the kernel's interrupt sends, once the code runs
        while not ns["go"]:
            threading.Event().wait(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    result = agent.run("loop")  # Ctrl-C cancels the run, which ends cleanly
    assert result.stop_reason == "cancelled" and not code_threads()
