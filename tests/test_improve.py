"""improve: a scripted student whose answers depend on its texts, a scripted reflector, a held-out
test set with distinctive cases. What the reflector was shown, the student's runs against the
budget, bad input, and a stopped improvement resumed from its log."""

from __future__ import annotations

import io
import itertools
import json

import pytest

from agentnb import Agent, Improvement, UsageLimits, UserError, improve, tool
from agentnb.evaluation.log import read_log
from agentnb.improvement.report import improvement_html
from agentnb.improvement.views import TerminalBar
from agentnb.testing import FunctionProvider, call


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def _operands(text: str) -> tuple[int, int]:
    left, right = text.split("What is ")[1].split("?")[0].split("+")
    return int(left), int(right)


def student_fn(messages, tools):  # type: ignore[no-untyped-def]
    """Uses the tool only when its system prompt (or the tool's description) says so."""
    system = messages[0].content if messages[0].role == "system" else ""
    last = messages[-1]
    if last.role == "tool":
        return f"The answer is {last.content}."
    if "BROKEN" in (system or ""):
        raise RuntimeError("this prompt breaks the model")
    told = "use add" in (system or "").lower() or any("every sum" in t.description for t in tools)
    if told:
        a, b = _operands(last.content)
        return call("add", a=a, b=b)
    return "I think it is 0."


def runs_of(provider: FunctionProvider) -> int:
    """The student's runs: requests that start a run (the last message is the user's question)."""
    return sum(1 for r in provider.requests if r.messages[-1].role == "user")


def data(start: int, n: int, tag: str = "") -> list[dict[str, str]]:
    return [{"input": f"What is {i}+{i + 1}?{tag}", "expected": str(2 * i + 1)} for i in range(start, start + n)]


TRAIN = data(0, 8)
TEST = data(500, 4, " (held-out ZEBRA)")


def replies(*texts: str) -> FunctionProvider:
    """A reflector that answers with these texts in turn (the last one again when they run out)."""
    queue = list(texts)

    def answer(messages, tools):  # type: ignore[no-untyped-def]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return FunctionProvider(answer, name="reflector")


def shown(reflector: FunctionProvider) -> str:
    return "\n".join(str(m.content) for r in reflector.requests for m in r.messages)


def test_the_best_prompt_wins_on_test_and_the_reflector_saw_training_failures_only() -> None:
    student = FunctionProvider(student_fn)
    agent = Agent(student, tools=[add], system="Answer.")
    reflector = replies("```\nAlways use add for sums.\n```")
    imp = improve(agent, TRAIN, ["contains"], reflector=reflector, test=TEST, budget=40, progress=False)

    assert isinstance(imp, Improvement)
    assert imp.best.system == "Always use add for sums." and agent.system == "Answer."
    assert imp.best is not agent and imp.best.tools["add"].fn is agent.tools["add"].fn
    cmp = imp.compare()
    assert (cmp.pairs, cmp.only_a, cmp.only_b) == (4, 0, 4)
    assert "the original passes 0/4, the best 4/4" in imp.verdict
    # The budget holds, and it counts every run, the test comparison's too.
    assert runs_of(student) == imp.spent <= 40
    # The reflector read failing training cases only: never a test case, never a validation case.
    text = shown(reflector)
    assert "ZEBRA" not in text and "What is 50" not in text
    val_inputs = {c.input for c in imp._search.val}
    assert not any(v in text for v in val_inputs)
    for entry in imp.reflections:
        for case in entry["cases"]:
            assert case in {c.id for c in imp._search.train}
            row = imp._search.rows[(entry["parent"], case)][0]
            assert not row["passed"] and row["input"] in entry["prompt"]
            assert f"Expected: {row['expected']}" in entry["prompt"] and "Verdicts: contains = False" in entry["prompt"]
    table = imp.candidates
    assert table["status"].tolist()[:2] == ["seed", "accepted"]
    assert table.loc[1, "parent"] == table.loc[0, "id"] and table.loc[1, "runs"] > 0
    assert set(table.loc[1, "val_scores"]) == {c.id for c in imp._search.val}
    assert "+Always use add for sums." in imp.diffs[0] and "-Answer." in imp.diff()


def test_the_trace_shown_holds_tool_calls_and_their_errors() -> None:
    @tool
    def lookup(word: str) -> str:
        """Look a word up."""
        raise KeyError(f"no entry for {word}")

    def fn(messages, tools):  # type: ignore[no-untyped-def]
        if messages[-1].role == "tool":
            return "not found"
        return call("lookup", word="zebu")

    reflector = replies("```\nSay 'not found' politely.\n```")
    cases = [{"input": f"define zebu {i}", "expected": "sorry"} for i in range(4)]
    improve(Agent(FunctionProvider(fn), tools=[lookup]), cases, ["contains"], reflector=reflector, budget=8,
            progress=False)  # fmt: skip
    text = shown(reflector)
    assert 'call lookup({"word": "zebu"})' in text and "error: KeyError" in text and "no entry for zebu" in text


@pytest.mark.parametrize("budget", range(12, 31, 3))
def test_the_budget_holds(budget: int) -> None:
    student = FunctionProvider(student_fn)
    counter = itertools.count()
    reflector = FunctionProvider(lambda m, t: f"```\nAnswer carefully, take {next(counter)}.\n```")
    imp = improve(Agent(student, tools=[add]), TRAIN, ["contains"], reflector=reflector, test=TEST[:2],
                  budget=budget, progress=False)  # fmt: skip
    assert runs_of(student) == imp.spent <= budget
    assert imp.reason.startswith("budget") or "in a row" in imp.reason


def test_bad_input_is_refused_before_any_run() -> None:
    student = FunctionProvider(student_fn)
    reflector = replies("x")
    agent = Agent(student, tools=[add])
    with pytest.raises(UserError, match="the dataset is empty"):
        improve(agent, [], ["contains"], reflector=reflector, progress=False)
    overlap = [TRAIN[3], *TEST]
    with pytest.raises(UserError, match=r"test= shares 1 case\(s\) with the training data: .*What is 3\+4"):
        improve(agent, TRAIN, ["contains"], reflector=reflector, test=overlap, progress=False)
    with pytest.raises(UserError, match=r"budget=9 cannot score even one candidate.*need 12 runs"):
        improve(agent, TRAIN, ["contains"], reflector=reflector, test=TEST, budget=9, progress=False)
    with pytest.raises(UserError, match="test= is empty"):
        improve(agent, TRAIN, ["contains"], reflector=reflector, test=[], progress=False)
    with pytest.raises(UserError, match="unknown target 'tool:nope'"):
        improve(agent, TRAIN, ["contains"], reflector=reflector, targets="tool:nope", progress=False)
    with pytest.raises(UserError, match="needs reflector="):
        improve(agent, TRAIN, ["contains"], progress=False)
    assert student.requests == [] and reflector.requests == []


def test_a_reflector_with_nothing_usable_skips_visibly() -> None:
    student = FunctionProvider(student_fn)
    reflector = replies("", "```\nAnswer.\n```", "I cannot help with that.")
    agent = Agent(student, tools=[add], system="Answer.")
    imp = improve(agent, TRAIN, ["contains"], reflector=reflector, budget=40, progress=False)
    table = imp.candidates
    skipped = table[table["status"] == "skipped"]
    assert "the reflector replied with no text" in skipped["reason"].tolist()
    assert "the reflector gave the same text back" in skipped["reason"].tolist()
    assert imp.best.system in ("Answer.", "I cannot help with that.")
    assert "in a row" in imp.reason or imp.reason.startswith("budget")


def test_a_candidate_whose_runs_all_fail_is_scored_not_fatal() -> None:
    student = FunctionProvider(student_fn)
    reflector = replies("```\nBROKEN\n```", "```\nUse add for every question.\n```")
    imp = improve(Agent(student, tools=[add]), TRAIN, ["contains"], reflector=reflector, budget=40, progress=False)
    table = imp.candidates
    broken = table[table["text"] == "BROKEN"].iloc[0]
    assert broken["status"] == "rejected" and broken["child_minibatch"] == 0 and broken["runs"] > 0
    assert all(imp.run(broken["id"], c).stop_reason == "error" for c in imp.runs_of(broken["id"]))
    assert imp.best.system == "Use add for every question."


def test_tool_descriptions_are_targets_and_the_tools_stay_as_they_were() -> None:
    student = FunctionProvider(student_fn)
    agent = Agent(student, tools=[add])
    reflector = replies("```\nAdds two numbers: call it for every sum.\n```")
    imp = improve(agent, TRAIN, ["contains"], reflector=reflector, test=TEST, targets="tool:add", budget=40,
                  progress=False)  # fmt: skip
    assert imp.best.tools["add"].description == "Adds two numbers: call it for every sum."
    assert agent.tools["add"].description == "Add two numbers." and add.description == "Add two numbers."
    assert imp.best.tools["add"].fn is add.fn and imp.best.system is None
    assert imp.compare().only_b == 4
    assert "the description of the tool 'add'" in shown(reflector)


def test_reflector_limits_apply() -> None:
    reflector = replies("```\nAlways use add for sums.\n```")
    imp = improve(Agent(FunctionProvider(student_fn), tools=[add]), TRAIN, ["contains"], reflector=reflector,
                  reflector_limits=UsageLimits(requests=0), budget=30, progress=False)  # fmt: skip
    reasons = imp.candidates["reason"].dropna().tolist()
    assert reasons and all("limit" in r for r in reasons), reasons
    assert reflector.requests == []


class StopAfterAccepted:
    """A view that presses Stop once a candidate is accepted (a killed improvement, half done)."""

    def start(self, stopper):  # type: ignore[no-untyped-def]
        self.stopper = stopper

    def event(self, e):  # type: ignore[no-untyped-def]
        if e.kind == "candidate_done" and e.record["status"] == "accepted":
            self.stopper.stop()

    def finish(self, imp):  # type: ignore[no-untyped-def]
        pass


def test_a_stopped_improvement_resumes_from_its_log_without_repeating_runs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def reflector_fn():  # type: ignore[no-untyped-def]
        def answer(messages, tools):  # type: ignore[no-untyped-def]
            current = messages[-1].content.split("Current text:\n```\n")[1].split("\n```")[0]
            return "```\n" + {"": "Always use add for sums."}.get(current, "x") + "\n```"

        return FunctionProvider(answer)

    args = {"test": TEST, "budget": 45, "minibatch": 2}
    fresh_student, fresh_reflector = FunctionProvider(student_fn), reflector_fn()
    fresh = improve(Agent(fresh_student, tools=[add]), TRAIN, ["contains"], reflector=fresh_reflector,
                    progress=False, **args)  # fmt: skip

    log = str(tmp_path / "improve.jsonl")
    first_student, first_reflector = FunctionProvider(student_fn), reflector_fn()
    first = improve(Agent(first_student, tools=[add]), TRAIN, ["contains"], reflector=first_reflector, log=log,
                    progress=[StopAfterAccepted()], **args)  # fmt: skip
    assert first.stopped and first.test is None and first.reason.startswith("stopped")
    assert runs_of(first_student) > 0 and len(first_reflector.requests) > 0
    second_student, second_reflector = FunctionProvider(student_fn), reflector_fn()
    second = improve(Agent(second_student, tools=[add]), TRAIN, ["contains"], reflector=second_reflector,
                     log=log, progress=False, **args)  # fmt: skip

    assert runs_of(second_student) > 0 and second.best.system == "Always use add for sums."
    assert runs_of(first_student) + runs_of(second_student) == runs_of(fresh_student)
    assert len(first_reflector.requests) + len(second_reflector.requests) == len(fresh_reflector.requests)
    assert second.best_texts == fresh.best_texts and second.spent == fresh.spent
    assert second.candidates["id"].tolist() == fresh.candidates["id"].tolist()
    keys = [row["key"] for row, _ in read_log(log)]
    assert len(keys) == len(set(keys))
    # What improve writes reads back equal: each proposal line holds the reflection as it was.
    logged = {row["key"]: row for row, _ in read_log(log) if row.get("improve") == "proposal"}
    for entry in first.reflections:
        assert json.loads(json.dumps(entry)) == logged[entry["key"]]


def test_views_escape_untrusted_text() -> None:
    evil = "<script>alert(1)</script> use add"
    reflector = replies(f"```\n{evil}\n```")
    stream = io.StringIO()
    imp = improve(Agent(FunctionProvider(student_fn), tools=[add]), TRAIN, ["contains"], reflector=reflector,
                  budget=30, progress=[TerminalBar(stream)])  # fmt: skip
    assert imp.best.system == evil
    html = improvement_html(imp)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    out = stream.getvalue()
    assert f"runs {imp.spent}/30" in out and "Improvement" in out and "accepted" in out


def test_the_live_widget_shows_candidates_escaped_and_its_stop_keeps_the_best_so_far() -> None:
    from agentnb.improvement.views import ImproveWidget

    widget = ImproveWidget()
    evil = "<img src=x onerror=alert(1)> use add"
    asked = 0

    def reflect(messages, tools):  # type: ignore[no-untyped-def]
        nonlocal asked
        asked += 1
        if asked == 2:
            widget.stop_button.click()  # as a user would, while the search runs
        return f"```\n{evil} ({asked})\n```"

    hard = TRAIN + [{"input": f"What is {i}+{i + 1}?", "expected": "never"} for i in range(50, 54)]  # so it goes on
    imp = improve(Agent(FunctionProvider(student_fn), tools=[add]), hard, ["contains"],
                  reflector=FunctionProvider(reflect), test=TEST, budget=60, progress=widget)  # fmt: skip
    assert imp.stopped and imp.reason.startswith("stopped") and imp.best.system == f"{evil} (1)"
    assert widget.stop_button.disabled and widget.bar.value == imp.spent and widget.bar.max == 60
    assert "&lt;img src=x onerror=alert(1)&gt;" in widget.table.value and "<img" not in widget.table.value
    assert "accepted" in widget.table.value and f"best {imp.best_id}" in widget.line.value
    assert imp.verdict.startswith("The search was stopped before the test comparison")
    assert imp.compare().only_b == 4  # the comparison runs on demand, inside the budget
    assert imp.spent <= 60


def test_the_result_view_opens_any_runs_trace(capsys: pytest.CaptureFixture[str]) -> None:
    imp = improve(Agent(FunctionProvider(student_fn), tools=[add], system="Answer."), TRAIN, ["contains"],
                  reflector=replies("```\nAlways use add for sums.\n```"), test=TEST, budget=40,
                  progress=False)  # fmt: skip
    view = imp.view()
    assert view.candidate.value == imp.best_id and imp.best_id in view.candidate.options
    assert set(view.case.options) == set(imp.runs_of(imp.best_id)) and len(view.case.options) >= 8
    view.case.value = view.case.options[0]
    view.show()  # outside a kernel the Output widget does not capture: the trace prints
    assert "agentnb trace: answer · 2 model calls · 1/10 tool calls" in capsys.readouterr().out
    bundle, _ = view._repr_mimebundle_()
    assert bundle["text/plain"].startswith("Improvement")
    result = imp.run(imp.best_id, view.case.options[0])
    assert result.tool_calls == 1 and result.stop_reason == "answer"


CHILD = """
import asyncio, sys
from agentnb import Agent, improve, tool
from agentnb.testing import FunctionProvider, call

@tool
def add(a: int, b: int) -> int:
    '''Add two numbers.'''
    return a + b

DELAY = float(sys.argv[2])

async def student(messages, tools):
    await asyncio.sleep(DELAY)
    system = messages[0].content if messages[0].role == "system" else ""
    last = messages[-1]
    if last.role == "tool":
        return f"The answer is {last.content}."
    if "use add" in (system or "").lower():
        left, right = last.content.split("What is ")[1].split("?")[0].split("+")
        return call("add", a=int(left), b=int(right))
    return "0"

def reflect(messages, tools):
    current = messages[-1].content.split("Current text:\\n```\\n")[1].split("\\n```")[0]
    asked = sorted(line for line in messages[-1].content.splitlines() if line.startswith("Input: "))
    new = "Always use add for sums." if "Input: What is 4+5?" in asked else f"Check {asked[0][7:]}"
    return "```\\n" + new + "\\n```"

data = [{"input": f"What is {i}+{i + 1}?", "expected": str(2 * i + 1) if i % 3 else "never"} for i in range(12)]
test = [{"input": f"What is {i}+{i + 1}?", "expected": str(2 * i + 1)} for i in range(300, 304)]
imp = improve(Agent(FunctionProvider(student), tools=[add]), data, ["contains"], reflector=FunctionProvider(reflect),
              test=test, budget=70, minibatch=2, concurrency=2, log=sys.argv[1] if sys.argv[1] != "-" else None,
              progress=False)
print("RESULT", imp.spent, len(imp.reflections), imp.best_id, sorted(imp.best_texts.items()), imp.candidates["id"].tolist())
"""


def _lines(path):  # type: ignore[no-untyped-def]
    rows = []
    for line in path.read_bytes().splitlines():
        try:
            rows.append(json.loads(line)["row"])
        except ValueError:  # the torn line a kill left
            pass
    return rows


def test_a_killed_improvement_resumes_from_its_log_without_repeating_runs_or_reflections(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import random
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", "")}
    fresh = subprocess.run([sys.executable, str(script), "-", "0"], env=env, capture_output=True, text=True,
                           timeout=120)  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr[-2000:]
    log = tmp_path / "improve.jsonl"
    proc = subprocess.Popen([sys.executable, str(script), str(log), "0.02"], env=env, start_new_session=True)
    target = random.Random().randint(5, 40)
    try:
        deadline = time.monotonic() + 120
        while (not log.exists() or log.read_bytes().count(b"\n") < target) and proc.poll() is None:
            assert time.monotonic() < deadline, "the child logged too slowly"
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed mid-search, not finished
    before = _lines(log)
    runs_before = sum(1 for r in before if "improve" not in r)
    reflections_before = sum(1 for r in before if r.get("improve") == "proposal")

    resumed = subprocess.run([sys.executable, str(script), str(log), "0"], env=env, capture_output=True, text=True,
                             timeout=120)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert resumed.stdout.split("RESULT")[1] == fresh.stdout.split("RESULT")[1]  # same spend, best, candidates
    after = _lines(log)
    keys = [r["key"] for r in after]
    assert len(keys) == len(set(keys)), "no case run and no reflection twice in the log"
    fresh_runs = int(fresh.stdout.split("RESULT")[1].split()[0])
    fresh_reflections = int(fresh.stdout.split("RESULT")[1].split()[1])
    assert sum(1 for r in after if "improve" not in r) == fresh_runs  # every run once: before the kill or after
    assert sum(1 for r in after if r.get("improve") == "proposal") == fresh_reflections  # every reflection once
    assert runs_before > 0 or reflections_before > 0
