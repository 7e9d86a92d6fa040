"""The %agent magics, in-process with IPython's test shell."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

from agentnb import tool
from agentnb.errors import UserError
from agentnb.messages import SystemMessage, UserMessage
from agentnb.notebook.magics.agent import AgentMagics, _await_agent_magics
from agentnb.notebook.magics.options import MagicOptions, interpolate, parse_line
from agentnb.testing import ScriptedProvider, call


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text."""
    return text.upper()


def plain(x: int) -> int:
    """Double a number."""
    return 2 * x


@pytest.fixture
def ip() -> Iterator[Any]:
    globalipapp.start_ipython()  # once per process; it then rebinds get_ipython
    shell = globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "agentnb")
    magics: AgentMagics = shell.magics_manager.registry["AgentMagics"]
    magics.defaults = MagicOptions()
    magics.history = None
    magics.debugger = None
    magics._providers.clear()
    magics.display_mode = "auto"
    saved = dict(shell.user_ns)
    shell.user_ns.update({"add": add, "shout": shout, "plain": plain, "x": 2, "_hidden": tool(plain, name="hidden")})
    yield shell
    shell.user_ns.clear()
    shell.user_ns.update(saved)


def magics(ip: Any) -> AgentMagics:
    return ip.magics_manager.registry["AgentMagics"]  # type: ignore[no-any-return]


def scripted(ip: Any, *replies: Any, name: str = "model") -> ScriptedProvider:
    provider = ScriptedProvider(list(replies))
    ip.user_ns[name] = provider
    return provider


def offered(provider: ScriptedProvider, i: int = 0) -> list[str]:
    return [t.name for t in provider.requests[i].tools]


# --- parsing -------------------------------------------------------------------------------


def test_parse_keeps_the_prompt_verbatim() -> None:
    opts, prompt = parse_line("""-p model --tools=add,shout -n 3 -s "Be brief." --no-stream What's "2 + 3"? -x""")
    assert opts == MagicOptions(
        provider="model", tools=("add", "shout"), max_tool_calls=3, system="Be brief.", stream=False
    )
    assert prompt == """What's "2 + 3"? -x"""
    assert parse_line("--quiet -- --not-an-option")[1] == "--not-an-option"
    assert parse_line("-t none hi")[0].tools == ()
    assert parse_line("--step --new -o res hi")[0] == MagicOptions(step=True, new=True, out="res")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("--bogus hi", "unknown option '--bogus'; options: -p/--provider"),
        ("-n lots hi", "-n needs a whole number, not 'lots'"),
        ("-n -1 hi", "-n needs a number >= 0, not -1"),
        ("--out 1x hi", "--out needs a Python variable name, not '1x'"),
        ("--step=yes hi", "--step is a flag and takes no value"),
        ("--provider", "--provider needs a value"),
    ],
)
def test_parse_errors(line: str, message: str) -> None:
    from agentnb.errors import UserError

    with pytest.raises(UserError) as info:
        parse_line(line)
    assert str(info.value).startswith(message)


def test_interpolation() -> None:
    ns = {"city": "Oslo", "xs": [1, 2], "n": 3.14159}
    assert interpolate("{city} {xs[1]} {n:.2f} {{literal}} {city!r}", ns) == "Oslo 2 3.14 {literal} 'Oslo'"
    assert interpolate('JSON: {{"a": 1}}', ns) == 'JSON: {"a": 1}'


# --- running -------------------------------------------------------------------------------


def test_line_magic_interpolates_and_stores_the_result(ip: Any, capsys: Any) -> None:
    model = scripted(ip, call("add", a=2, b=3), "It is 5.")
    assert ip.run_line_magic("agent", "-p model What's {x} + 3? {{literal}}") is None
    assert model.requests[0].messages[-1] == UserMessage("What's 2 + 3? {literal}")
    result = ip.user_ns["_agent_result"]
    assert result.output == "It is 5." and result.tool_calls == 1
    out = capsys.readouterr().out  # no kernel here: the text trace is printed
    assert "call add(a=2, b=3)" in out and "answer: It is 5." in out


def test_cell_magic_prompt_is_the_body_and_out_stores_it(ip: Any) -> None:
    model = scripted(ip, "Fine.")
    ip.run_cell_magic("agent", "-p model -q --out answer", "Line one about {x}.\nLine two.\n")
    assert model.requests[0].messages[-1] == UserMessage("Line one about 2.\nLine two.")
    assert ip.user_ns["answer"] is ip.user_ns["_agent_result"]
    assert ip.user_ns["answer"].output == "Fine."


def test_tools_default_to_every_tool_in_the_namespace(ip: Any) -> None:
    model = scripted(ip, "a", "b", "c", "d")
    ip.run_line_magic("agent", "-p model -q hi")
    assert sorted(offered(model, 0)) == ["add", "shout"]  # not _hidden, not the plain function
    ip.run_line_magic("agent", "-p model -q --tools shout hi")
    assert offered(model, 1) == ["shout"]
    ip.run_line_magic("agent", "-p model -q --tools add,plain hi")  # a plain function is wrapped
    assert offered(model, 2) == ["add", "plain"]
    ip.run_line_magic("agent", "-p model -q --tools none hi")
    assert offered(model, 3) == []


def test_options_reach_the_agent(ip: Any) -> None:
    model = scripted(ip, call("add", a=1, b=1), "stopped")
    ip.user_ns["persona"] = "pirate"
    ip.run_line_magic("agent", "-p model -q --new -n 1 -s 'You are a {persona}.' --stream hi")
    assert model.requests[0].messages[0] == SystemMessage("You are a pirate.")
    assert offered(model, 1) == []  # the limit of one tool call was reached
    assert ip.user_ns["_agent_result"].stop_reason == "limit"


def test_follow_ups_continue_until_new_or_reset(ip: Any) -> None:
    model = scripted(ip, "one", "two", "three", "four")
    ip.run_line_magic("agent", "-p model -q first")
    ip.run_line_magic("agent", "-p model -q second")
    assert [m.content for m in model.requests[1].messages] == ["first", "one", "second"]
    ip.run_line_magic("agent", "-p model -q --new third")
    assert [m.content for m in model.requests[2].messages] == ["third"]
    ip.run_line_magic("agent_reset", "")
    ip.run_line_magic("agent", "-p model -q fourth")
    assert [m.content for m in model.requests[3].messages] == ["fourth"]


def test_agent_config_sets_notebook_defaults(ip: Any) -> None:
    model = scripted(ip, call("shout", text="a"), "done")
    config = ip.run_line_magic("agent_config", "-p model -q --tools shout -n 4")
    assert repr(config) == "AgentConfig(provider='model', tools=('shout',), max_tool_calls=4, quiet=True)"
    ip.run_line_magic("agent", "hi")
    assert offered(model, 0) == ["shout"]
    assert ip.user_ns["_agent_result"].output == "done"
    assert repr(ip.run_line_magic("agent_config", "--reset")) == "AgentConfig()"


def test_provider_spec_strings_are_built_and_cached(ip: Any) -> None:
    m = magics(ip)
    first = m._provider(MagicOptions(provider="openai", model="gpt-test", base_url="http://127.0.0.1:9/v1"))
    again = m._provider(MagicOptions(provider="openai:gpt-test", base_url="http://127.0.0.1:9/v1"))
    assert first is again and first.name.endswith("gpt-test")


@pytest.mark.parametrize(
    ("line", "cell", "message"),
    [
        ("--bogus hi", None, "unknown option '--bogus'"),
        (
            "-p model --tools add,nope hi",
            None,
            "unknown tool 'nope': no variable of that name in the notebook (tools found: add, shout)",
        ),
        ("-p model --tools x hi", None, "'x' is a int, not a tool; decorate a function with @tool"),
        ("-p model Tell me about {nothing}", None, "name 'nothing' is not defined in the notebook (used as {nothing}"),
        ("-p model {}", None, "empty {} in the prompt"),
        ("-p model", None, "no prompt"),
        (
            "-p model stray text",
            "prompt",
            "%%agent takes options on its first line and the prompt in the cell; not 'stray text'",
        ),
        ("-p nowhere hi", None, "unknown provider 'nowhere': no Provider variable of that name in the notebook"),
        ("-p ollama hi", None, "provider spec 'ollama' names no model; write 'ollama:MODEL'"),
        ("-p local --tool-calling untooled hi", None, "--tool-calling applies to 'openai:MODEL' (or a server's)"),
        ("-p bogus:model hi", None, "unknown provider spec 'bogus:model'"),
        ("-p model -m gpt hi", None, "--model/--base-url need a provider spec"),
    ],
)
def test_mistakes_are_one_usage_error_line(ip: Any, line: str, cell: str | None, message: str) -> None:
    scripted(ip, "unused")
    with pytest.raises(UsageError) as info:
        if cell is None:
            ip.run_line_magic("agent", line)
        else:
            ip.run_cell_magic("agent", line, cell)
    text = str(info.value)
    assert text.startswith(message), text
    assert "\n" not in text
    assert "_agent_result" not in ip.user_ns or ip.user_ns["_agent_result"].output != "unused"


def test_tool_choice_forces_a_call(ip: Any) -> None:
    model = scripted(ip, call("shout", text="hey"), "HEY")
    ip.run_line_magic("agent", "-p model -q --new --tool-choice shout say hey")
    assert model.requests[0].tool_choice == "shout"
    assert ip.user_ns["_agent_result"].tool_calls == 1
    ip.run_line_magic("agent_config", "-c required")
    assert magics(ip).defaults.tool_choice == "required"
    with pytest.raises(UsageError, match="tool_choice 'nope' is not 'auto'"):
        ip.run_line_magic("agent", "-p model -q --tool-choice nope hi")


def test_a_bad_tool_definition_is_one_line(ip: Any, capsys: Any) -> None:
    result = ip.run_cell("from agentnb import tool\n@tool\ndef broken(x) -> str:\n    return 'no docstring, no type'\n")
    assert result.error_in_exec is not None
    err = capsys.readouterr()
    shown = (err.out + err.err).strip()
    assert "Traceback" not in shown and "File " not in shown
    (line,) = [ln for ln in shown.splitlines() if ln.strip()]
    assert "ToolDefinitionError" in line and "invalid tool 'broken'" in line


def test_a_mistake_in_a_cell_shows_no_traceback(ip: Any, capsys: Any) -> None:
    result = ip.run_cell("%agent -p model --tools nope hi")
    assert isinstance(result.error_in_exec, UsageError)
    err = capsys.readouterr().err
    assert "UsageError: unknown tool 'nope'" in err and "Traceback" not in err


def test_step_mode_returns_at_once_and_is_driven_from_python(ip: Any) -> None:
    model = scripted(ip, call("add", a=2, b=3), "5")
    ip.run_line_magic("agent", "-p model -q --step --out stepped 2+3?")
    dbg = ip.user_ns["_agent_debugger"]
    from agentnb.notebook.magics.pending import PendingResult, RunPendingError

    # The run has not finished: both names hold a pending handle, never an earlier result.
    assert isinstance(ip.user_ns["stepped"], PendingResult) and isinstance(ip.user_ns["_agent_result"], PendingResult)
    with pytest.raises(RunPendingError, match="the --step run is still going"):
        _ = ip.user_ns["_agent_result"].output
    with pytest.raises(UsageError, match="a step-through run is still going"):
        ip.run_line_magic("agent", "-p model -q again")

    def wait_paused() -> None:
        while dbg.state == "running":
            threading.Event().wait(0.005)

    wait_paused()
    dbg.step()
    wait_paused()
    assert dbg.pause.target == "tool"
    dbg.continue_()
    assert dbg.handle.result_blocking(10).output == "5"
    assert ip.user_ns["stepped"] is ip.user_ns["_agent_result"]
    assert len(model.requests) == 2


def test_widget_mode_shows_a_trace_widget(ip: Any, monkeypatch: Any) -> None:
    pytest.importorskip("ipywidgets")
    from agentnb.notebook.trace.widget import TraceWidget

    shown: list[TraceWidget] = []
    monkeypatch.setattr(TraceWidget, "show", lambda self: shown.append(self) or self)
    magics(ip).display_mode = "widget"
    scripted(ip, call("shout", text="hi"), "HI")
    ip.run_line_magic("agent", "-p model shout hi")
    (widget,) = shown
    assert widget.status == "answer" and widget.answer == "HI"
    assert widget.stop_button.disabled
    assert "Save transcript" in widget._save.value  # the magic hands the result over
    ip.run_line_magic("agent", "-p model again")  # a follow-up: turn 2, the first turn listed
    assert len(shown) == 2 and "turn <b>2</b>" in shown[1].header_html
    assert "Earlier turns (1)" in shown[1]._context.value and "shout hi" in shown[1]._context.value


def test_a_person_steers_an_agent_magic_run_from_its_trace(ip: Any, monkeypatch: Any) -> None:
    """%agent's trace has a "Tell the agent…" box: what is sent while the run goes on reaches the
    model's next request, after the step's tool result, and the trace shows where it went in."""
    pytest.importorskip("ipywidgets")
    from agentnb.notebook.trace.widget import TraceWidget

    shown: list[TraceWidget] = []
    monkeypatch.setattr(TraceWidget, "show", lambda self: shown.append(self) or self)
    magics(ip).display_mode = "widget"

    def steered(text: str) -> str:
        """Upper-case a text (while it runs, a person types in the trace's box)."""
        shown[-1].steer.send("<b>also</b> say please")
        return text.upper()

    ip.user_ns["steered"] = tool(steered)
    model = scripted(ip, call("steered", text="hi"), "HI, please")
    ip.run_line_magic("agent", "-p model --tools steered shout hi")
    (widget,) = shown
    assert widget.status == "answer"
    second = model.requests[1].messages
    assert second[-1] == UserMessage("<b>also</b> say please")  # after the call and its result
    assert [m.role for m in second[-3:]] == ["assistant", "tool", "user"]
    said = [e for e in ip.user_ns["_agent_result"].events if e.kind == "user_interjected"]
    assert [(e.depth, e.text) for e in said] == [(1, "<b>also</b> say please")]
    assert "&lt;b&gt;also&lt;/b&gt; say please" in widget.static_html()  # shown as text
    assert widget.steer.layout.display == "none"  # the run ended: the box is gone
    with pytest.raises(UserError, match="ended"):
        widget.steer.send("too late")


def test_run_async_is_what_a_kernel_awaits(ip: Any) -> None:
    model = scripted(ip, "async ok")
    asyncio.run(magics(ip).run_async("-p model -q", "hello {x}"))
    assert model.requests[0].messages[-1] == UserMessage("hello 2")
    assert ip.user_ns["_agent_result"].output == "async ok"
    with pytest.raises(UsageError, match="unknown option"):
        asyncio.run(magics(ip).run_async("--nope hi"))


def test_kernel_cells_are_rewritten_to_await_the_magic(ip: Any) -> None:
    ip.input_transformers_post.append(_await_agent_magics)
    try:
        for source in ("%%agent -q\nWhat is {x}?", "%agent -q hi"):
            code = ip.transform_cell(source)
            assert code.startswith("await get_ipython().magics_manager.registry['AgentMagics'].run_async(")
            assert ip.should_run_async(source, transformed_cell=code)
        assert ip.transform_cell("y = 1\n%agent hi").splitlines()[1].startswith("await ")
        assert "await" not in ip.transform_cell("%agent_config -q")
    finally:
        ip.input_transformers_post.remove(_await_agent_magics)


# --- in a real kernel: what nbval compares ----------------------------------------------------

NOTEBOOK = Path(__file__).parent / "browser" / "notebooks" / "trace_and_debugger.ipynb"


def text_outputs() -> list[str]:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", out
            texts.append(out["text"] if out["output_type"] == "stream" else out["data"].get("text/plain", ""))
    return texts


def test_notebook_outputs_are_stable_and_readable_as_text() -> None:
    """Executed in a kernel twice, a notebook's text outputs are identical (what nbval compares)."""
    first, second = text_outputs(), text_outputs()
    assert first == second
    trace = next(t for t in first if t.startswith("agentnb live trace\nagentnb trace: answer"))
    assert trace.splitlines()[1] == "agentnb trace: answer · 4 model calls · 4/10 tool calls"
    assert "  [1] dedup f9d4aaca60c9: repeat, not run: earlier result given" in trace
    assert "answer: **Paris**: 14 °C" in trace
    for text in first:
        assert not re.search(r"0x[0-9a-f]{6,}", text)
        assert not re.search(r"\d\s?(ms|s)\b", text)
    assert "kernel is free while paused before the model call at depth 0\n" in first


def test_a_line_prompt_ending_in_a_question_mark_reaches_the_agent() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from agentnb.notebook.magics.agent import _protect_questions

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("agentnb")
    assert _protect_questions in shell.input_transformers_cleanup
    code = shell.transform_cell("%agent What's the weather in Paris?\n")
    assert code == "get_ipython().run_line_magic('agent', \"What's the weather in Paris?\")\n"
    assert shell.transform_cell("%agent?\n") != code  # help on the magic itself still works


def test_cells_carry_one_session_and_new_starts_another(ip: Any) -> None:
    provider = scripted(ip, "Hi Ada.", "You are Ada.", "Fresh start.")
    magics(ip).display_mode = "quiet"
    ip.run_line_magic("agent", "-p model --quiet I am Ada.")
    first = ip.user_ns["_agent_result"].events[0]
    ip.run_line_magic("agent", "-p model --quiet Who am I?")
    second = ip.user_ns["_agent_result"].events[0]
    session = magics(ip).session
    assert session is not None and session.turns == 2
    assert first.conversation_id == second.conversation_id == session.id
    assert (first.turn, second.turn) == (1, 2)
    assert [m.content for m in provider.requests[1].messages] == ["I am Ada.", "Hi Ada.", "Who am I?"]
    ip.run_line_magic("agent", "-p model --quiet --new Hello")
    third = ip.user_ns["_agent_result"].events[0]
    assert third.turn == 1 and third.conversation_id != session.id
    assert [m.content for m in provider.requests[2].messages] == ["Hello"]


def test_a_server_by_name_with_its_options(ip: Any) -> None:
    from agentnb.testing import ScriptedServer
    from agentnb.testing.server import text

    with ScriptedServer() as server:
        server.script(text("hello from the server"))
        ip.run_cell(f"%agent -p ollama:m --tool-calling untooled --base-url {server.url} --out r hi")
        assert ip.user_ns["r"].output == "hello from the server"  # --tool-calling was refused for it
    assert server.requests[0].body["model"] == "m"
