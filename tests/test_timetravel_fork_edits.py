"""Fork edits at parallel steps (issue 45): an arguments edit runs only the edited call, a name
two calls share is refused as ambiguous, every bad fork argument is a UserError with its reason,
and the model calls a fork made are counted alike by the header, the text and the RunResult."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from agentnb import Agent, RunResult, UserError, tool
from agentnb.notebook.trace.header import header_html
from agentnb.notebook.trace.state import TraceState
from agentnb.notebook.trace.text import summary_line, trace_text
from agentnb.testing import ScriptedProvider, call

RAN: list[tuple[str, str]] = []


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    RAN.append(("weather", city))
    return {"Paris": "sunny", "Oslo": "snow"}.get(city, "fog")


@tool
def pack(item: str) -> str:
    """Pack an item."""
    RAN.append(("pack", item))
    return f"packed {item}"


@tool
def calc(expr: str) -> str:
    """Evaluate a sum such as 1+1."""
    RAN.append(("calc", expr))
    return str(sum(int(x) for x in expr.split("+")))


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def parallel(*later: Any) -> tuple[ScriptedProvider, RunResult]:
    """[0] weather(Paris) and pack(umbrella) at once  [1] the answer."""
    model = ScriptedProvider([[call("weather", city="Paris"), call("pack", item="umbrella")], "Sunny; packed.", *later])
    result = Agent(model, tools=[weather, pack]).run("Paris, and pack?")
    assert RAN == [("weather", "Paris"), ("pack", "umbrella")]
    RAN.clear()
    return model, result


def same_tool(*later: Any) -> tuple[ScriptedProvider, RunResult]:
    """[0] calc(1+1) and calc(2+2) at once  [1] the answer."""
    model = ScriptedProvider([[call("calc", expr="1+1"), call("calc", expr="2+2")], "2 and 4.", *later])
    result = Agent(model, tools=[calc]).run("1+1 and 2+2?")
    assert RAN == [("calc", "1+1"), ("calc", "2+2")]
    RAN.clear()
    return model, result


def results(run: RunResult) -> list[tuple[str, str]]:
    return [(m.name, m.content) for m in run.messages if m.role == "tool"]


def test_an_arguments_edit_at_a_parallel_step_runs_only_the_edited_call() -> None:
    model, result = parallel("Fog; packed.", "Sunny; hat.")
    n = len(model.requests)
    fork = result.fork(0, arguments={"weather": {"city": "Nice"}})
    assert RAN == [("weather", "Nice")]  # pack kept its recorded result: it did not run again
    assert results(fork) == [("weather", "fog"), ("pack", "packed umbrella")]
    assert len(model.requests) == n + 1 and fork.output == "Fog; packed."
    started = [e.name for e in fork.events if e.kind == "tool_started"]
    finished = [(e.name, e.result) for e in fork.events if e.kind == "tool_finished"]
    assert started == ["weather"] and sorted(finished) == [("pack", "packed umbrella"), ("weather", "fog")]
    assert fork.tool_calls == 2 and fork.events[-1].tool_calls == 2  # both calls handled, as recorded
    assert fork.lineage.edit == {"arguments": {"call": "weather", "arguments": {"city": "Nice"}}}
    said = trace_text(fork.events)
    assert "at step 0: the arguments of weather edited; no step comes before step 0" in said
    assert "its other calls their recorded results (not run again)" in said
    RAN.clear()
    fork = result.fork(0, arguments={"pack": {"item": "hat"}})
    assert RAN == [("pack", "hat")] and results(fork) == [("weather", "sunny"), ("pack", "packed hat")]


def test_an_arguments_edit_of_one_of_two_calls_to_the_same_tool_keeps_the_other() -> None:
    _model, result = same_tool("3 and 4.")
    first, _second = (c.id for c in result.messages[1].tool_calls)
    fork = result.fork(0, arguments={first: {"expr": "1+2"}})
    assert RAN == [("calc", "1+2")]  # the second call, unchanged, was answered from the recording
    assert results(fork) == [("calc", "3"), ("calc", "4")] and fork.output == "3 and 4."
    assert fork.lineage.edit["arguments"] == {"call": "calc", "id": first, "arguments": {"expr": "1+2"}}
    assert fork.lineage.describe() == f"the arguments of calc ({first}) edited"


def test_a_reused_result_is_remembered_so_a_later_repeat_is_not_run() -> None:
    _model, result = parallel(call("pack", item="umbrella"), "Done.")
    fork = result.fork(0, arguments={"weather": {"city": "Nice"}})
    assert RAN == [("weather", "Nice")]  # step 1 repeats pack(umbrella): answered, as in a run
    assert "You already called pack" in results(fork)[-1][1] and fork.output == "Done."


def test_a_name_two_calls_share_is_refused_as_ambiguous_naming_their_ids() -> None:
    model, result = same_tool("5 and 4.")
    first, second = (c.id for c in result.messages[1].tool_calls)
    n = len(model.requests)
    ambiguous = rf"2 calls to 'calc' \(ids {first}, {second}\); name one by its id: \{{'{first}': \.\.\.\}}"
    with pytest.raises(UserError, match=ambiguous):
        result.fork(0, tool_result={"calc": "5"})
    with pytest.raises(UserError, match=ambiguous):
        result.fork(0, arguments={"calc": {"expr": "1+2"}})
    with pytest.raises(UserError, match=r"2 calls \(calc \(call_1\), calc \(call_2\)\); say which"):
        result.fork(0, tool_result="5")
    assert len(model.requests) == n and RAN == []
    fork = result.fork(0, tool_result={second: "5"})
    assert results(fork) == [("calc", "2"), ("calc", "5")] and RAN == []


BAD = [
    (
        dict(at="0", reply="x"),
        r"fork step '0' is a str: a step is an int, as the trace numbers them \(\[0\] to \[1\]\)",
    ),
    (dict(at=True, reply="x"), r"fork step True is a bool: a step is an int"),
    (dict(at=2, reply="x"), r"fork step 2 is out of range: this run has steps 0 to 1"),
    (dict(at=-1, reply="x"), r"fork step -1 is out of range: this run has steps 0 to 1"),
    (dict(at=0, reply=42), r"fork reply= takes a text, or a list of calls .*, not int"),
    (dict(at=0, reply=[]), r"fork reply= takes a text, or a list of calls .*, not an empty list"),
    (dict(at=0, reply=[42]), r"fork reply item 0: a call is a ToolCall or"),
    (
        dict(at=0, arguments={"teleport": {"x": 1}}),
        r"no call to 'teleport' at that step \(its calls: weather \(call_1\), pack",
    ),
    (dict(at=0, arguments={"weather": "Nice"}), r"the arguments of weather are a dict \(a JSON object\), not str"),
    (dict(at=0, tool_result={"pack": 5}), r"the result of pack is text, not int"),
    (dict(at=1, arguments={"city": "Nice"}), r"fork at step 1: the model called no tool at that step"),
    (dict(at=0, system=5), r"fork system= takes the new system prompt as text, not int"),
    (dict(at=0, agent="gpt"), r"fork agent= takes an agentnb Agent, not str"),
    (dict(at=1, reply="x", on_event=5), r"fork on_event= takes a callable that sees each event, not int"),
    (dict(at=1, reply="x", stream="yes"), r"fork stream= takes True, False or None, not str"),
    (dict(at=0, reply="x", system="s", replay="y"), r"fork takes no 'replay': its edits are agent, reply, arguments"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD, ids=[m[:30] for _, m in BAD])
def test_every_bad_fork_argument_is_a_user_error_saying_what_is_wrong(kwargs: dict[str, Any], message: str) -> None:
    model, result = parallel()
    n = len(model.requests)
    at = kwargs.pop("at")
    with pytest.raises(UserError, match=message):
        result.fork(at, **kwargs)
    with pytest.raises(UserError, match=message):
        asyncio.run(result.afork(at, **kwargs))
    assert len(model.requests) == n and RAN == []  # nothing was sent, nothing ran


def header_text(state: TraceState) -> str:
    return re.sub(r"<[^>]+>", "", header_html(state, None))


def counted(fork: RunResult, live: TraceState) -> tuple[int, str, str, str]:
    """RunResult's count, the text summary's, the header's from the events, the header's as fed live."""
    replayed = TraceState()
    for e in fork.events:
        replayed.add(e)
    said = summary_line(fork.events).split(" · ")[1]
    heads = [re.search(r"model calls [^·]*", header_text(s)).group(0).strip() for s in (replayed, live)]  # type: ignore[union-attr]
    return fork.model_calls, said, *heads


def three_steps(*later: Any) -> tuple[ScriptedProvider, RunResult]:
    """[0] weather(Paris)  [1] weather(Oslo)  [2] the answer."""
    script = [call("weather", city="Paris"), call("weather", city="Oslo"), "Sunny, then snow.", *later]
    model = ScriptedProvider(script)
    result = Agent(model, tools=[weather]).run("Paris then Oslo?")
    RAN.clear()
    return model, result


FORKS = [  # (edit at step 1, the replies the live steps get, requests sent, text summary, header)
    (dict(reply="Edited."), (), 0, "0 model calls (+1 recorded, +1 edited)", "model calls 0 (+1 recorded, +1 edited)"),
    (dict(arguments={"city": "Nice"}), ("Fog.",), 1, "1 model call (+1 recorded, +1 edited)",
     "model calls 1 (+1 recorded, +1 edited)"),
    (dict(tool_result="hail"), ("Hail.",), 1, "1 model call (+2 recorded)", "model calls 1 (+2 recorded)"),
    (dict(system="Be brief."), (call("weather", city="Oslo"), "Snow."), 2, "2 model calls (+1 recorded)",
     "model calls 2 (+1 recorded)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "later", "sent", "said", "head"), FORKS, ids=["reply", "arguments", "tool_result", "system"]
)
def test_a_fork_counts_the_model_calls_it_sent_alike_everywhere(
    edit: dict[str, Any], later: tuple[Any, ...], sent: int, said: str, head: str
) -> None:
    model, result = three_steps(*later)
    assert (result.model_calls, summary_line(result.events).split(" · ")[1]) == (3, "3 model calls")
    n = len(model.requests)
    live = TraceState()
    fork = result.fork(1, on_event=live.add, **edit)
    assert len(model.requests) - n == sent
    assert counted(fork, live) == (sent, said, head, head)


def test_a_reply_edit_with_calls_at_step_0_counts_the_live_steps_only() -> None:
    model, result = three_steps("After packing.")
    n = len(model.requests)
    live = TraceState()
    fork = result.fork(0, reply=[{"name": "weather", "arguments": {"city": "Rome"}}], on_event=live.add)
    assert len(model.requests) - n == 1 and RAN == [("weather", "Rome")]
    assert counted(fork, live) == (
        1,
        "1 model call (+1 edited)",
        "model calls 1 (+1 edited)",
        "model calls 1 (+1 edited)",
    )


def test_a_fork_at_step_0_says_no_step_is_the_recording_s() -> None:
    from agentnb.notebook.forks.panel import ForkPanel
    from agentnb.notebook.trace.widget import TraceWidget

    _model, result = three_steps("Edited path.", "After rain.")
    fork = result.fork(0, reply="Edited path.")
    html = TraceWidget.replay(fork).static_html()
    assert "no step comes before step 0; it takes the edited reply (not sent)" in html and "steps before 0" not in html
    panel = ForkPanel(result, TraceWidget, at=0)
    panel.kind.value = "reply"
    panel.editor.value = "Edited path."
    panel.fork()
    title = panel.below.children[0].children[0].value
    assert "it is the first step: no step is taken from the recording" in title and "before it" not in title
    fork = result.fork(0, tool_result="rain")
    html = TraceWidget.replay(fork).static_html()
    assert "step 0 is the recording's (step 0 with its result edited); step 1 on is live" in html


def test_the_fork_editor_at_a_parallel_step_keys_calls_by_name_or_by_id() -> None:
    from agentnb.timetravel.drafts import edit_from_text, prefill

    _, result = same_tool("3 and 4.")
    first, second = (c.id for c in result.messages[1].tool_calls)
    text = prefill(result, 0, "arguments")
    assert text.replace(" ", "").replace("\n", "") == f'{{"{first}":{{"expr":"1+1"}},"{second}":{{"expr":"2+2"}}}}'
    edits = edit_from_text(result, 0, "arguments", text.replace("1+1", "1+2"))
    assert edits == {"arguments": {first: {"expr": "1+2"}}}
    assert result.fork(0, **edits).output == "3 and 4." and RAN == [("calc", "1+2")]
    with pytest.raises(UserError, match=r"change the arguments of one call at a time \(0 changed\)"):
        edit_from_text(result, 0, "arguments", text)
    assert edit_from_text(result, 0, "tool_result", prefill(result, 0, "tool_result").replace('"4"', '"5"')) == {
        "tool_result": {second: "5"}
    }
    RAN.clear()
    _model, result = parallel()
    assert edit_from_text(result, 0, "arguments", '{"weather": {"city": "Oslo"}, "pack": {"item": "umbrella"}}') == {
        "arguments": {"weather": {"city": "Oslo"}}
    }


def test_an_agent_tool_s_model_calls_in_the_recorded_prefix_count_as_recorded() -> None:
    inner = Agent(ScriptedProvider(["inner says hi"]), name="helper")
    outer = Agent(ScriptedProvider([call("helper", prompt="go"), "Done.", "Live again."]), tools=[inner.as_tool()])
    result = outer.run("Ask the helper.")
    assert (result.model_calls, summary_line(result.events).split(" · ")[1]) == (3, "3 model calls")
    live = TraceState()
    fork = result.fork(1, system="Be brief.", on_event=live.add)  # step 0 (and its helper's run) recorded
    assert fork.output == "Live again."
    assert counted(fork, live) == (
        1,
        "1 model call (+2 recorded)",
        "model calls 1 (+2 recorded)",
        "model calls 1 (+2 recorded)",
    )
