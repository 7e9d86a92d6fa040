"""The trace widget with agents as tools and sessions (through its traits and HTML)."""

from __future__ import annotations

import re
from typing import Any

from agentnb import Agent, tool
from agentnb.notebook.trace.render import depth_html
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call


@tool
def lookup(word: str) -> str:
    """Look a word up."""
    return f"<script>alert('{word}')</script>"


def writer() -> Agent:
    checker = Agent(
        ScriptedProvider([call("lookup", word="x"), "checked <img src=x onerror=1>"]), tools=[lookup], name="checker"
    )
    researcher = Agent(
        ScriptedProvider([call("checker", prompt="check"), "found it"]), tools=[checker.as_tool()], name="researcher"
    )
    return Agent(
        ScriptedProvider([call("researcher", prompt="find <b>it</b>"), "done"]),
        tools=[researcher.as_tool()],
        name="writer",
    )


def all_html(w: TraceWidget) -> str:
    return "".join(depth_html(v) for _, v in sorted(w.state.depths.items()))


def test_the_inner_runs_show_nested_under_their_calls_escaped() -> None:
    w = TraceWidget()
    writer().run("write", on_event=w)
    html = all_html(w)
    assert html.count('class="anb-sub"') == 2  # the researcher, and the checker inside it
    assert html.index("agent <code>researcher</code>") < html.index("agent <code>checker</code>")
    assert "asked: find &lt;b&gt;it&lt;/b&gt;" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<img" not in html
    assert "Tool call <code>lookup</code>" in html  # two levels down
    call = w.state.depths[0].calls["call_1"]
    assert call.inner.finished.stop_reason == "answer" and call.inner.answer == "found it"
    # the inner run comes first, then the result it produced (the order things happened in)
    researcher_block = html.index("agent <code>researcher</code>")
    assert researcher_block < html.index('<span class="anb-ok">result</span>')
    assert html.rindex("found it") > html.index("agent <code>researcher</code>")


def test_an_inner_run_shows_live_while_it_runs() -> None:
    w = TraceWidget()
    seen: list[str] = []

    def watch(event: Any) -> None:
        w(event)
        if event.kind == "sub_agent" and event.event.kind == "model_response":
            seen.append(all_html(w))

    writer().run("write", on_event=watch)
    assert seen and "running…" in seen[0] and 'class="anb-sub"' in seen[0]


def test_a_session_turn_and_trimming_show_in_the_widget() -> None:
    chat = Agent(ScriptedProvider(["one", "two", "three"])).session(max_messages=3)
    chat.run("a")
    chat.run("b")
    w = TraceWidget()
    chat.run("c", on_event=w)
    assert "turn <b>3</b>" in w.header_html
    html = all_html(w)
    assert "history trimmed" in html and "1 earlier turn (2 messages) left out to fit max_messages=3" in html
    assert "history: 1 earlier turn (2 messages) left out" in w.text()


def test_replayed_transcript_shows_the_nested_runs(tmp_path: Any) -> None:
    result = writer().run("write")
    path = str(tmp_path / "run.json")
    result.save(path)
    w = TraceWidget.replay(path)
    assert all_html(w).count('class="anb-sub"') == 2
    assert "".join(w.section_html(d) for d in sorted(w.state.depths)).count('class="anb-sub"') == 2


def test_the_header_counts_the_inner_runs_model_calls_as_it_counts_their_tool_calls() -> None:
    """The header said "model calls 2 · tool calls 3/10": tool calls and tokens included the
    agents run as tools, model calls did not (the writer, the researcher and the checker made 6)."""
    from agentnb.notebook.trace.header import header_html

    w = TraceWidget()
    result = writer().run("write", on_event=w)
    assert result.tool_calls == 3
    assert "model calls <b>6</b>" in header_html(w.state, None)
    assert w.text().splitlines()[0] == "agentnb trace: answer · 6 model calls · 3/10 tool calls"
    assert re.search(r"agent <code>researcher</code> · answer · (&lt;)?[\d.]+ ms", all_html(w))  # not "0.00 s"
