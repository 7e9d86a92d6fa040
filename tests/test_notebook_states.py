"""What the notebook says always derives from what happened (issue 26, items 2, 4, 5, 6).

States after Stop, the default streaming of ``%agent``, the pending result of a ``--step`` run,
and ``--output-type`` written as a Python type.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

pytest.importorskip("ipywidgets")

from agentnb import Agent, RunResult, Usage
from agentnb.events import ModelRequest, RunFinished, RunStarted, TextDelta
from agentnb.notebook.debugger.debugger import Debugger
from agentnb.notebook.magics.options import MagicOptions
from agentnb.notebook.magics.pending import PendingResult, RunPendingError
from agentnb.notebook.trace.header import header_html
from agentnb.notebook.trace.render import depth_html, depth_title
from agentnb.notebook.trace.state import TraceState
from agentnb.notebook.trace.text import summary_line
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, Streamed


def _started() -> RunStarted:
    return RunStarted(0, "scripted", (), 10, 1, "hi", None, "ScriptedProvider", 1)


def test_a_run_stopped_mid_stream_does_not_say_the_model_never_replied() -> None:
    s = TraceState()
    for e in (
        _started(),
        ModelRequest(0, 1, (), "none"),
        TextDelta(0, "Paris is the capital "),
        TextDelta(0, "of"),
        RunFinished(0, "cancelled", 0, Usage(), 1.0),
    ):
        s.add(e, 0.0)
    html = depth_html(s.depths[0])
    assert "Paris is the capital of" in html
    assert "stopped while the model was replying" in html
    assert "before the model replied" not in html and "streaming…" not in html
    assert depth_title(s.depths[0]) == "Depth 0 · stopped"
    # Without any text, it did stop before the reply.
    s2 = TraceState()
    for e in (_started(), ModelRequest(0, 1, (), "none"), RunFinished(0, "cancelled", 0, Usage(), 1.0)):
        s2.add(e)
    assert "stopped before the model replied" in depth_html(s2.depths[0])


def test_stop_in_the_debugger_before_a_model_call_counts_no_model_call() -> None:
    async def main() -> tuple[Debugger, RunResult]:
        dbg = Debugger(Agent(ScriptedProvider(["never sent"]))).start("hello")
        await dbg.next_pause()
        dbg.stop()
        return dbg, await dbg.wait()

    dbg, result = asyncio.run(main())
    kinds = [e.kind for e in result.events]
    assert kinds == ["run_started", "model_request", "step_decision", "run_finished"]
    for trace in (dbg.view.trace, TraceWidget.replay(result)):  # live, and replayed from the events
        assert "model calls <b>0</b>" in trace.header_html, trace.header_html[-300:]
        assert repr(trace).startswith("agentnb trace: cancelled · 0 model calls")
        assert "this model call was never sent" in trace.body_html
    assert summary_line(result.events) == "agentnb trace: cancelled · 0 model calls · 0/10 tool calls"
    assert "model calls <b>0</b>" in header_html(dbg.view.trace.state, None)


# --- the magics ---------------------------------------------------------------------------------


@pytest.fixture
def ip() -> Iterator[Any]:
    globalipapp.start_ipython()
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    magics = shell.magics_manager.registry["AgentMagics"]
    magics.defaults, magics.history, magics.debugger = MagicOptions(), None, None
    magics._providers.clear()
    magics.display_mode = "auto"
    saved = dict(shell.user_ns)
    yield shell
    shell.user_ns.clear()
    shell.user_ns.update(saved)


def test_calls_refused_by_the_tool_call_limit_are_not_shown_as_dropped_by_a_stop() -> None:
    """Three parallel calls with a budget of two: the third was "not executed" by the limit, but
    the widget said "1 unfinished tool call dropped" and "not run: the run was stopped first"."""
    from agentnb import tool
    from agentnb.notebook.trace.snapshot import static_html
    from agentnb.testing import call

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    w = TraceWidget()
    script = [[call("add", a=1, b=2), call("add", a=2, b=2), call("add", a=3, b=2)], call("add", a=5, b=5), "7"]
    result = Agent(ScriptedProvider(script), tools=[add], max_tool_calls=2).run("go", on_event=w)
    assert result.stop_reason == "limit" and result.tool_calls == 2
    assert w.state.dropped_calls == 0 and w.state.tool_calls == 2
    html = static_html(w)
    assert "dropped" not in html and "the run was stopped first" not in html
    assert "past the tool-call limit (2); the model was told" in html
    assert depth_title(w.state.depths[0]).startswith("Depth 0 · add ✓, add ✓, add ⊘")
    # depth 1 offers no tools; the model still asks for one: what happened to it is shown
    assert "add: no tools were offered in this call; the model was told" in depth_html(w.state.depths[1])


def test_the_magic_streams_by_default_where_the_provider_can(ip: Any) -> None:
    ip.user_ns["model"] = ScriptedProvider([Streamed(["Hel", "lo"]), Streamed(["Hel", "lo"])])
    ip.run_line_magic("agent", "-p model -q --new hi")
    assert [e.text for e in ip.user_ns["_agent_result"].events if e.kind == "text_delta"] == ["Hel", "lo"]
    ip.run_line_magic("agent", "-p model -q --new --no-stream hi")
    assert not [e for e in ip.user_ns["_agent_result"].events if e.kind == "text_delta"]


def test_a_step_run_never_leaves_the_previous_result_readable(ip: Any) -> None:
    ip.user_ns["model"] = ScriptedProvider(["first answer", "second answer"])
    ip.run_line_magic("agent", "-p model -q first")
    assert ip.user_ns["_agent_result"].output == "first answer"
    ip.run_line_magic("agent", "-p model -q --step second")  # returns at once: the debugger waits
    pending = ip.user_ns["_agent_result"]
    assert isinstance(pending, PendingResult) and not pending
    assert "still going" in repr(pending) and ("paused" in repr(pending) or "running" in repr(pending))
    with pytest.raises(RunPendingError, match=r"_agent_result\.output: the --step run is still going"):
        _ = pending.output
    dbg = ip.user_ns["_agent_debugger"]
    while dbg.state == "running":
        threading.Event().wait(0.005)
    dbg.continue_()
    result = asyncio.run(_wait(pending))
    assert result.output == "second answer"
    assert ip.user_ns["_agent_result"] is result  # replaced when the run ended


async def _wait(pending: PendingResult) -> RunResult:
    return await pending  # type: ignore[no-any-return]


@dataclass
class Price:
    item: str
    euros: float


def test_output_type_is_written_as_a_python_type(ip: Any) -> None:
    ip.user_ns["Price"] = Price
    ip.user_ns["model"] = ScriptedProvider(['[{"item": "kiwi", "euros": 0.4}]', '{"item": "fig", "euros": 1.5}'])
    ip.run_line_magic("agent", "-p model -q --new --output-type list[Price] Kiwis are 0.40.")
    assert ip.user_ns["_agent_result"].value == [Price("kiwi", 0.4)]
    ip.run_line_magic("agent", '-p model -q --new --output-type "Price | None" Figs are 1.50.')
    assert ip.user_ns["_agent_result"].value == Price("fig", 1.5)
    for bad, why in [
        ("list[Nope]", "name 'Nope' is not defined"),
        ("__import__('os').system('x')", "a type such as"),
        ("Price()", "a type such as"),
    ]:
        with pytest.raises(UsageError, match=why):
            ip.run_line_magic("agent", f'-p model -q --new --output-type "{bad}" hi')


def test_output_type_reads_quoted_names_literals_and_annotations(ip: Any) -> None:
    """Siblings of ``list[Price]``: a quoted (forward) reference is the type it names; inside
    Literal and Annotated's notes, constants stay values."""
    from typing import Annotated, Literal

    from agentnb.notebook.magics.options import type_from_text

    ns = {"Price": Price}
    assert type_from_text("'Price'", ns) is Price
    assert type_from_text('list["Price"]', ns) == list[Price]
    assert type_from_text('Literal["Price", -1]', ns) == Literal["Price", -1]
    assert type_from_text('Annotated[int, "a count"]', ns) == Annotated[int, "a count"]
    ip.user_ns["Price"] = Price
    ip.user_ns["model"] = ScriptedProvider(['[{"item": "kiwi", "euros": 0.4}]'])
    ip.run_line_magic("agent", """-p model -q --new --output-type 'list["Price"]' Kiwis are 0.40.""")
    assert ip.user_ns["_agent_result"].value == [Price("kiwi", 0.4)]
    with pytest.raises(UsageError, match="'list\\[' is not a type such as"):
        ip.run_line_magic("agent", """-p model -q --new --output-type '"list["' hi""")


def test_loading_the_model_is_not_an_error_box_in_a_notebook(monkeypatch: Any, capsys: Any) -> None:
    pytest.importorskip("torch")
    from agentnb.providers.hf import local

    class Kernel:
        kernel = object()

    monkeypatch.setattr(local, "_LOCAL", None)
    monkeypatch.setattr(local, "smollm2_path", lambda: Path("model.gguf"))
    monkeypatch.setattr(local, "apply_threads", lambda threads: 1)  # torch's threads stay as they are
    monkeypatch.setattr(local, "smollm2_tokenizer", lambda path: "tokenizer")
    monkeypatch.setattr(local, "smollm2_weights", lambda path, tokenizer: "weights")
    monkeypatch.setattr("IPython.get_ipython", lambda: Kernel())
    provider = local.local_provider(threads=1)
    assert capsys.readouterr() == ("", "")  # built, not loaded: nothing to say yet
    assert provider.weights.model == "weights"  # loaded on first use
    out, err = capsys.readouterr()
    assert "loading the model SmolLM2-135M-Instruct" in out and "model loaded in" in out and err == ""
    monkeypatch.setattr(local, "_LOCAL", None)
    monkeypatch.setattr("IPython.get_ipython", lambda: None)  # a terminal: stderr, as before
    local.local_provider(threads=1).weights.load()
    assert "loading the model" in capsys.readouterr().err


def test_a_run_ended_by_a_usage_limit_names_that_limit_and_waits_for_nothing() -> None:
    """UsageLimits(requests=1): the header said "finished at the tool-call limit", the agentnb-written
    answer's depth said "waiting for the model…" after the run had ended."""
    from agentnb import UsageLimits, tool
    from agentnb.notebook.trace.snapshot import static_html
    from agentnb.testing import call

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    w = TraceWidget()
    model = ScriptedProvider([call("add", a=1, b=2), "never asked"])
    result = Agent(model, tools=[add], limits=UsageLimits(requests=1)).run("go", on_event=w)
    assert result.stop_reason == "limit" and len(model.requests) == 1
    head = header_html(w.state, None)
    assert "finished at the request limit" in head and "tool-call limit" not in head
    html = static_html(w)
    assert "waiting for the model" not in html and "no model call: agentnb wrote the answer" in html
    # the limit's note counts the request it announces, as the header's "model calls 1" does
    assert "request limit (1; request 1 of 1 is the last, for the answer) reached" in html
    assert "model calls <b>1</b>" in head and "0 used" not in html


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("print", "--out print would hide Python's built-in print"),
        ("class", "--out class is a Python keyword"),
        ("model", "--out model would replace the notebook's variable model (a ScriptedProvider)"),
        ("prices", "--out prices would replace the notebook's variable prices (a list)"),
    ],
)
def test_out_never_hides_a_builtin_a_keyword_or_a_notebook_variable(ip: Any, out: str, message: str) -> None:
    """``--out print`` broke every later print ("'RunResult' object is not callable"); ``--out m``
    replaced the provider ``m``, so the next ``%agent -p m`` failed."""
    ip.user_ns["model"] = ScriptedProvider(["ok", "again"])
    ip.user_ns["prices"] = [1, 2]
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ip.run_line_magic("agent", f"-p model --out {out} hi")
    assert ip.user_ns["model"].requests == [] and ip.user_ns["prices"] == [1, 2]
    assert "print" not in ip.user_ns
    ip.run_line_magic("agent", "-p model --out reply hi")  # a fresh name, then the same again: fine
    ip.run_line_magic("agent", "-p model --out reply again")
    assert isinstance(ip.user_ns["reply"], RunResult) and ip.user_ns["reply"].output == "again"
