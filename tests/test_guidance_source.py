"""The guidance written once against a LogprobSource (agentnb/providers/guidance/source.py): the
tool ranking, the call-or-answer decision and the call bias, over scripted sources, and the two
real sources (in-process, server) as implementations of the interface."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from agentnb.events import CallDecision, ConstraintDropped, GuidanceSkipped
from agentnb.providers.guidance.call_bias import CallBias
from agentnb.providers.guidance.call_or_answer import ASK_STEP, FIT_STEP, Rules, call_or_answer
from agentnb.providers.guidance.decide import PROBE
from agentnb.providers.guidance.lists import RepeatedItems
from agentnb.providers.guidance.optional import NamedOptionals
from agentnb.providers.guidance.rank import RANK_STEP, pick_tool, tool_fits
from agentnb.providers.guidance.source import (
    Alternatives,
    LogprobSource,
    Scored,
    UnavailableError,
    drive,
)
from agentnb.providers.guidance.steer import CopyBias, TokenTable
from agentnb.tools import tool


@tool
def get_weather(city: str) -> str:
    """Current weather in a city."""
    return "sunny"


@tool
def bmi(kg: float, m: float) -> float:
    """Body mass index from weight and height."""
    return kg / m / m


PICK = {
    "query": "Weather in Oslo?",
    "prompts": {"get_weather": "weather:", "bmi": "bmi:"},
    "none": "none:",
}


class Scripted:
    """A source with fixed scores and next-token alternatives; records what it was asked."""

    via = "scripted"

    def __init__(
        self,
        scores: dict[str, float],
        first: dict[str, float],
        answer: dict[str, float] | None = None,
        *,
        fail: Sequence[str] = (),
        skip: Sequence[str] = (),
    ) -> None:
        self.table, self.first, self.answer = scores, first, answer or {"Yes": -0.1, "No": -2.5}
        self.fail, self.skip = set(fail), set(skip)
        self.asked: list[Any] = []
        self.can_score = True

    async def scores(self, heads: Sequence[str], text: str) -> list[Scored]:
        self.asked.append(("scores", tuple(heads)))
        if "scores" in self.fail:
            raise UnavailableError("no echo", ConstraintDropped(0, "s", "tool ranking", "no echo"))
        return [Scored(self.table[h], 4) for h in heads]

    async def next_token(self, follow_up: str | None = None) -> Alternatives:
        self.asked.append(("next", follow_up))
        if ("next" if follow_up is None else "probe") in self.fail:
            raise UnavailableError("no logprobs")
        return Alternatives(self.first if follow_up is None else self.answer)

    async def too_costly(self, step: str, *, heads: Sequence[str] = (), text: str = "", asks: int = 0) -> Any:
        if step in self.skip:
            return GuidanceSkipped(0, "s", step, "too slow here", 9.0, 5.0)
        return None


LEANS_CALL = {'{"': -3.0, "It": -0.1}  # share ~0.05
SCORES = {"weather:": -6.0, "bmi:": -18.0, "none:": -14.0}


def test_both_sources_implement_the_interface() -> None:
    from agentnb.providers.hf.source import InProcessSource
    from agentnb.providers.openai.source import ServerSource

    assert isinstance(Scripted(SCORES, LEANS_CALL), LogprobSource)
    assert isinstance(InProcessSource(object(), [], None), LogprobSource)
    from agentnb.providers.openai.rank import ToolRanker

    server = ServerSource(SimpleNamespace(_ranker=ToolRanker(False)), None)  # type: ignore[arg-type]
    assert isinstance(server, LogprobSource) and not server.can_score


def test_fits_are_per_request_token_against_no_tool_and_one_scoring_call() -> None:
    source = Scripted(SCORES, LEANS_CALL)
    assert drive(tool_fits(source, [get_weather, bmi], PICK)) == {"get_weather": 2.0, "bmi": -1.0}
    assert source.asked == [("scores", ("weather:", "bmi:", "none:"))]
    assert drive(tool_fits(source, [get_weather], {**PICK, "prompts": {}})) is None


def test_a_required_call_goes_to_the_best_tool_and_the_ranking_is_an_event() -> None:
    tools, events = drive(pick_tool(Scripted(SCORES, LEANS_CALL), [bmi, get_weather], PICK))
    assert [t.name for t in tools] == ["get_weather"]
    (event,) = events
    assert isinstance(event, CallDecision) and event.tool == "get_weather"
    assert event.ranking == (("get_weather", -1.5), ("bmi", -4.5)) and event.reason.endswith("(scripted)")


def test_ranking_skipped_for_cost_or_unavailable_keeps_every_tool_and_says_why() -> None:
    tools, events = drive(pick_tool(Scripted(SCORES, LEANS_CALL, skip=[RANK_STEP]), [bmi, get_weather], PICK))
    assert len(tools) == 2 and [e.step for e in events] == [RANK_STEP]
    tools, events = drive(pick_tool(Scripted(SCORES, LEANS_CALL, fail=["scores"]), [bmi, get_weather], PICK))
    assert len(tools) == 2 and [type(e) for e in events] == [ConstraintDropped]


def test_the_decision_calls_the_best_fitting_tool_and_asks_only_where_it_matters() -> None:
    source = Scripted(SCORES, LEANS_CALL)
    choice = drive(call_or_answer(source, [get_weather, bmi], PICK, Rules()))
    assert (
        choice.action == "call" and choice.picked == "get_weather" and [t.name for t in choice.tools] == ["get_weather"]
    )
    assert choice.verdict is not None and choice.verdict.score > 1.15  # far from the threshold: not asked
    assert ("next", PROBE) not in source.asked
    # a weak fit: the score is near the threshold, so the model's yes/no is asked
    weak = Scripted({**SCORES, "weather:": -13.9}, LEANS_CALL)
    choice = drive(call_or_answer(weak, [get_weather, bmi], PICK, Rules()))
    assert ("next", PROBE) in weak.asked and "leans yes" in choice.events[-1].reason


def test_without_fits_the_share_decides_and_after_results_against_its_own_bar() -> None:
    skipped = Scripted(SCORES, LEANS_CALL, skip=[FIT_STEP])
    choice = drive(call_or_answer(skipped, [get_weather, bmi], PICK, Rules()))
    assert choice.action == "call" and choice.verdict is None and len(choice.tools) == 2
    assert [type(e) for e in choice.events] == [GuidanceSkipped, CallDecision]
    ranked = drive(call_or_answer(Scripted(SCORES, LEANS_CALL), [get_weather, bmi], None, Rules(rank_call=True)))
    assert ranked.action == "call" and len(ranked.tools) == 2  # no pick hint: nothing to rank by
    after = Scripted(SCORES, LEANS_CALL)
    choice = drive(call_or_answer(after, [get_weather, bmi], PICK, Rules(call_threshold=0.9), after_results=True))
    assert choice.action == "answer" and choice.events[-1].reason.startswith("after tool results, call share")
    assert [a[0] for a in after.asked] == ["next"]  # no scores after tool results


def test_unavailable_measurements_leave_the_decision_to_what_remains() -> None:
    no_scores = Scripted(SCORES, LEANS_CALL, fail=["scores"])
    choice = drive(call_or_answer(no_scores, [get_weather], PICK, Rules()))
    assert choice.verdict is None and "call share" in choice.events[-1].reason  # the share alone
    no_probe = Scripted({**SCORES, "weather:": -13.9}, LEANS_CALL, fail=["probe"])
    choice = drive(call_or_answer(no_probe, [get_weather, bmi], PICK, Rules()))
    assert ("next", PROBE) in no_probe.asked and "leans" not in choice.events[-1].reason
    with pytest.raises(UnavailableError):
        drive(call_or_answer(Scripted(SCORES, LEANS_CALL, fail=["next"]), [get_weather], PICK, Rules()))
    skip_ask = Scripted({**SCORES, "weather:": -13.9}, LEANS_CALL, skip=[ASK_STEP])
    choice = drive(call_or_answer(skip_ask, [get_weather, bmi], PICK, Rules()))
    assert ("next", PROBE) not in skip_ask.asked and ASK_STEP in [e.step for e in choice.events[:-1]]


class _Tok:
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def batch_decode(self, ids: list[list[int]]) -> list[str]:
        return [self.texts[i[0]] for i in ids]


@tool
def loan(principal: float, years: int = 30, rate: float = 5.0) -> float:
    """A loan's monthly payment."""
    return principal


@pytest.mark.parametrize(
    "written",
    [
        '{"name": "loan", "arguments": {"principal": 25',
        '{"name": "loan", "arguments": {"principal": 250000',
        '{"name": "loan", "arguments": {"principal": 250000, "rate": 4.5',
        '{"name": "f", "arguments": {"xs": [1, 2, 2',
    ],
)
def test_the_call_bias_is_the_sum_of_the_three_biases(written: str) -> None:
    texts = ["0", "00", ",", "}", "]", '"', " years", "ye", "2", ", 2", "x"]
    table = TokenTable(_Tok(texts), len(texts))
    source = "a $250k loan over 20 years at 4.5%, ids 1, 2"
    parts = [
        CopyBias(source, table, 6.0),
        NamedOptionals(["years"], table, 6.0),
        RepeatedItems(source, table, 6.0),
    ]
    expected: dict[int, float] = {}
    for part in parts:
        for k, v in part.bonus(written).items():
            expected[k] = expected.get(k, 0.0) + v
    bias = CallBias(source, [loan], table, 6.0, named=["years"])
    assert bias.bonus(written) == expected
    assert CallBias(source, [loan], table, 0.0).bonus(written) == {}


class _Suspends:
    def __await__(self):  # type: ignore[no-untyped-def]
        yield


async def _waits() -> None:
    await _Suspends()


def test_drive_refuses_a_coroutine_that_waits() -> None:
    with pytest.raises(RuntimeError, match="synchronous"):
        drive(_waits())
