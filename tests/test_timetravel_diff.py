"""Diff (issue 38): two runs to their first divergence; its text and HTML views."""

from __future__ import annotations

import agentnb
from agentnb import Agent, RunDiff, tool
from agentnb.testing import ScriptedProvider, call
from tests.untrusted_payloads import PAYLOADS, check_html


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return "sunny"


def run(replies: list, prompt: str = "Weather?", system: str | None = None):
    return Agent(ScriptedProvider(replies), tools=[lookup], system=system).run(prompt)


def test_the_same_run_twice_has_no_divergence_ids_and_times_ignored() -> None:
    script = [call("lookup", city="Paris", id="a1"), "Sunny."]
    a = run(script)
    b = run([call("lookup", city="Paris", id="zz"), "Sunny."])
    d = agentnb.diff(a, b)
    assert isinstance(d, RunDiff) and d.first_divergence is None and d.same
    assert a.run_id != b.run_id
    assert "the same run" in str(d)


def test_runs_made_to_diverge_at_known_steps() -> None:
    base = [call("lookup", city="Paris"), call("lookup", city="Oslo"), "Done."]
    cases = {
        0: ([call("lookup", city="Rome"), call("lookup", city="Oslo"), "Done."], "calls"),
        1: ([call("lookup", city="Paris"), call("lookup", city="Oslo", extra=1), "Done."], "calls"),
        2: ([call("lookup", city="Paris"), call("lookup", city="Oslo"), "Finished."], "reply"),
    }
    for step, (other, field) in cases.items():
        d = agentnb.diff(run(base), run(other))
        assert (d.first_divergence, d.field) == (step, field)
    d = agentnb.diff(run(base), run([*base[:1], "Short."]))
    assert (d.first_divergence, d.field) == (1, "reply")
    d = agentnb.diff(run(["Hi."]), run(["Hi."], system="Be brief."))
    assert (d.first_divergence, d.field) == (0, "system")
    d = agentnb.diff(run(["Hi."]), run(["Hi."], prompt="Other?"))
    assert (d.first_divergence, d.field) == (0, "prompt")
    d = agentnb.diff(run(["Hi."]), run([call("lookup", city="Paris"), "Hi."]))
    assert (d.first_divergence, d.field) == (0, "reply")  # a text, then no text and a call
    d = agentnb.diff(run([call("lookup", city="Paris"), "Hi."]), run([call("lookup", city="Paris"), "Hi.", "x"]))
    assert d.first_divergence is None


def test_a_fork_and_its_parent_differ_at_the_fork_step(tmp_path) -> None:
    parent = run([call("lookup", city="Paris"), call("lookup", city="Oslo"), "Done.", "Other.", "Third."])
    assert agentnb.diff(parent, parent.fork(1, tool_result="rain")).first_divergence == 1
    assert agentnb.diff(parent, parent.fork(2, reply="Edited.")).first_divergence == 2
    d = agentnb.diff(parent, parent.fork(1, system="New prompt."))
    assert (d.first_divergence, d.field) == (1, "system")
    parent.save(tmp_path / "p.json")
    assert agentnb.diff(tmp_path / "p.json", parent).same  # a path reads as its transcript


def test_the_text_view_shows_the_steps_side_by_side_and_the_answers_diff() -> None:
    a = run([call("lookup", city="Paris"), "Sunny in Paris.\nBring glasses."])
    b = run([call("lookup", city="Paris"), "Rain in Paris.\nBring glasses."])
    text = str(agentnb.diff(a, b, labels=("old", "new")))
    assert text.splitlines()[0] == "old and new differ first at step 1 (reply)"
    assert "  [0] same" in text and "old: says: Sunny in Paris." in text and "new: says: Rain in Paris." in text
    assert "  - Sunny in Paris." in text and "  + Rain in Paris." in text and "    Bring glasses." in text
    evil = agentnb.diff(a, run([call("lookup", city="Paris"), "red \x1b[31mtext"]))
    assert "\x1b" not in str(evil) and "\\x1b[31m" in str(evil)


def test_the_html_view_shows_hostile_text_as_text() -> None:
    for payload in PAYLOADS:
        a = run([call("lookup", city=payload), payload])
        b = run([call("lookup", city="Paris"), payload + " (b)"])
        html = agentnb.diff(a, b, labels=(payload, "b"))._repr_html_()
        problems, visible = check_html(html)
        assert problems == [], (payload, problems)
        assert payload[:20] in visible


def test_an_evaluation_comparing_two_agents_diffs_a_case() -> None:
    agents = {
        "old": Agent(ScriptedProvider([call("lookup", city="Paris"), "4"] * 2), tools=[lookup]),
        "new": Agent(ScriptedProvider([call("lookup", city="Paris"), "5"] * 2), tools=[lookup]),
    }
    cases = [{"input": "2 + 2?", "expected": "4", "id": "sum"}, {"input": "3 + 1?", "expected": "4", "id": "sum2"}]
    ev = agentnb.evaluate(agents, cases, scorers=["exact"], progress=False)
    changed = ev.compare().changed
    assert list(changed["case"]) == ["sum", "sum2"]
    d = ev.diff("sum")
    assert d.labels == ("old", "new") and (d.first_divergence, d.field) == (1, "reply")
    assert d.a.output == "4" and d.b.output == "5"
    assert ev.diff(1, "new", "old").labels == ("new", "old")


def test_the_comparison_view_opens_the_diff_of_a_changed_case(monkeypatch) -> None:
    agents = {
        "old": Agent(ScriptedProvider(["4", "4"]), tools=[lookup]),
        "new": Agent(ScriptedProvider(["5", "4"]), tools=[lookup]),
    }
    cases = [{"input": "2 + 2?", "expected": "4", "id": "sum"}, {"input": "1 + 3?", "expected": "4", "id": "same"}]
    view = agentnb.evaluate(agents, cases, scorers=["exact"], progress=False).view()
    assert list(view.changed.options) == ["sum"] and not view.diff_button.disabled
    shown: list = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    view.diff_button.click()
    (d,) = shown
    assert isinstance(d, RunDiff) and d.labels == ("old", "new") and (d.first_divergence, d.field) == (0, "reply")
