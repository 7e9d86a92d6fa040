"""The read tools in a real IPython shell: definition order, the cells run, and @mentions in %agent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.testing import globalipapp

from agentnb import kernel_tools
from agentnb.kernel.mentions import HEADING, split_mentions
from agentnb.notebook.magics.agent import AgentMagics
from agentnb.notebook.magics.options import MagicOptions
from agentnb.notebook.trace.blocks import context_html
from agentnb.testing import ScriptedProvider


@pytest.fixture
def ip() -> Iterator[Any]:
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


def tools(ip: Any) -> dict[str, Any]:
    return {t.name: t for t in kernel_tools("read")}  # the kernel's own namespace


def listed(ip: Any) -> list[str]:
    return [line.split(":")[0] for line in tools(ip)["list_variables"]().splitlines()[1:]]


def test_variables_are_listed_most_recently_defined_first_and_ipython_names_are_not(ip: Any) -> None:
    for cell in ("alpha = 1", "beta = [1, 2]", "import json", "gamma = 'g'", "alpha = 2", "_hidden = 3", "1 + 1"):
        ip.run_cell(cell)
    names = listed(ip)
    assert names[:3] == ["alpha", "gamma", "beta"]  # alpha was rebound last
    for internal in ("In", "Out", "exit", "quit", "get_ipython", "json", "_hidden", "_", "_i1"):
        assert internal not in names
    ip.run_cell("beta += [3]")  # in place: not a rebinding
    assert listed(ip)[:3] == ["alpha", "gamma", "beta"]
    ip.run_cell("gamma += '!'")  # a new str: rebound
    assert listed(ip)[:3] == ["gamma", "alpha", "beta"]


def test_a_user_variable_named_like_ipythons_is_the_users(ip: Any) -> None:
    ip.user_ns["exit"] = "a value of mine"  # (a cell `exit = ...` is IPython's autocall)
    assert "exit" in listed(ip)
    assert tools(ip)["describe"](name="exit").startswith("exit: str 'a value of mine'")


def test_notebook_cells_reads_sources_values_and_errors_not_the_running_cell(ip: Any) -> None:
    for cell in ("x = 41", "x + 1", "'<b>' + '\\x1b[31m'", "1 / 0"):
        ip.run_cell(cell, store_history=True)  # as a kernel runs a cell
    cells = tools(ip)["notebook_cells"](last=4)
    n = ip.execution_count - 1  # the last cell run
    assert f"[{n - 3}]:\nx = 41" in cells
    assert f"[{n - 2}]:\nx + 1\nout[{n - 2}]: 42" in cells
    assert f"out[{n - 1}]: '<b>\\x1b[31m'" in cells and "\x1b" not in cells
    assert f"[{n}]:\n1 / 0\nerror[{n}]: ZeroDivisionError: division by zero" in cells
    ip.user_ns["read_cells"] = tools(ip)["notebook_cells"]
    ip.run_cell("seen = read_cells(last=1)", store_history=True)  # called while a cell runs: that cell is not "run" yet
    assert ip.user_ns["seen"].startswith(f"[{n}]:\n1 / 0\n")
    assert "seen = read_cells" in tools(ip)["notebook_cells"](last=1)  # once it has run, it is


def test_mentions_attach_descriptions_and_leave_the_rest_as_typed(ip: Any) -> None:
    ip.user_ns.update({"df": pd.DataFrame({"price": [1.0, None]}), "_secret": "s3cr3t", "example": 1, "addr": "@df"})
    model = ScriptedProvider(["ok"])
    ip.user_ns["model"] = model
    typed = "why nulls in @df.price and @df? mail me@example.com, not @nobody or @_secret; {addr}"
    ip.run_line_magic("agent", f"-p model -t none {typed}")
    sent = model.requests[0].messages[-1].content
    prompt, mentions = split_mentions(sent)
    assert prompt == typed.replace("{addr}", "@df")  # filled in, and the rest as typed
    assert [path for path, _ in mentions] == ["df.price", "df"]  # a filled-in "@df" is no new mention
    assert mentions[0][1].startswith("df.price: Series 'price' of 2 float64") and "nulls: 1 (50.0%)" in mentions[0][1]
    assert mentions[1][1].startswith("df: DataFrame 2 x 1")
    assert "s3cr3t" not in sent and "example: int" not in sent


def test_a_cell_magic_mentions_too_and_no_mention_leaves_the_prompt_alone(ip: Any) -> None:
    ip.user_ns.update({"cfg": {"lr": 0.1}, "model": ScriptedProvider(["ok", "ok"])})
    ip.run_cell_magic("agent", "-p model -t none", "Is @cfg right?\n")
    ip.run_line_magic("agent", "-p model -t none --new Write to team@cfg.org")
    first, second = (r.messages[-1].content for r in ip.user_ns["model"].requests)
    assert first.startswith("Is @cfg right?\n\n" + HEADING) and "```mention @cfg\ncfg: dict of 1 str -> float" in first
    assert second == "Write to team@cfg.org"


def test_the_trace_shows_a_mention_folded_and_escaped(ip: Any) -> None:
    note = "<script>alert(1)</script> ``` a fence in the text"
    ip.user_ns.update({"note": note, "model": ScriptedProvider(["ok"])})
    ip.run_line_magic("agent", "-p model -t none -q Read @note")
    started = ip.user_ns["_agent_result"].events[0]
    html = context_html(started)
    assert "Prompt: Read @note ·" in html  # the summary line is the typed prompt
    assert '<details class="anb-ctx anb-mention"><summary>@note · note: str of 49 characters</summary>' in html
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; ``` a fence" in html
    assert split_mentions(started.prompt)[1] == [("note", f"note: str of 49 characters\n{note}")]
