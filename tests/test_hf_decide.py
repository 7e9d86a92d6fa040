"""The ``tool_choice="auto"`` decision rule (agentnb/providers/guidance/decide.py), without a model."""

from __future__ import annotations

import pytest

from agentnb.providers.guidance.decide import AGREE_RANGE, AGREE_WEIGHT, decide, lacks_numbers

NUMBER = {"properties": {"kg": {"type": "number"}, "note": {"type": "string"}}, "required": ["kg"]}


@pytest.mark.parametrize(
    ("query", "lacks"),
    [
        ("Is BMI a good measure of health?", True),
        ("What does the word 'plenty' mean?", True),
        ("I weigh 70 kg", False),
        ("Roll three dice", False),
        ("a dozen eggs", False),
        ("Twenty-one, please", False),
        ("", True),
    ],
)
def test_a_required_number_the_request_lacks(query: str, lacks: bool) -> None:
    assert lacks_numbers(NUMBER, query) is lacks


def test_only_required_numeric_arguments_count() -> None:
    optional = {"properties": {"kg": {"type": "number"}}, "required": []}
    text = {"properties": {"city": {"type": "string"}}, "required": ["city"]}
    nullable = {"properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"]}
    assert not lacks_numbers(optional, "hello")
    assert not lacks_numbers(text, "hello")
    assert not lacks_numbers({}, "hello")
    assert lacks_numbers(nullable, "hello")


def test_a_missing_number_turns_a_call_into_an_answer() -> None:
    fits = {"calculate_bmi": 0.6}
    assert decide(0.01, fits).action == "call"
    verdict = decide(0.01, fits, missing_numbers=True)
    assert verdict.action == "answer" and "calculate_bmi needs a number the request lacks" in verdict.reason


def test_the_model_is_asked_only_where_its_answer_could_change_the_verdict() -> None:
    asked: list[int] = []

    def ask() -> float:
        asked.append(1)
        return 5.0  # clipped to AGREE_RANGE

    sure = decide(0.5, {"get_weather": 2.0}, agree=ask)  # far above the threshold
    assert sure.action == "call" and not asked and "leans" not in sure.reason
    far = decide(1e-6, {"get_weather": -1.0}, agree=ask)  # far below
    assert far.action == "answer" and not asked
    base = decide(0.001, {"get_weather": 0.0})
    assert abs(base.score) < AGREE_WEIGHT * AGREE_RANGE  # near the line: the model's answer counts
    near = decide(0.001, {"get_weather": 0.0}, agree=ask)
    assert asked == [1] and "the model leans yes (+5.00)" in near.reason
    assert near.score == pytest.approx(base.score + AGREE_WEIGHT * AGREE_RANGE, abs=1e-3)
    no = decide(0.001, {"get_weather": 0.0}, agree=-0.8)
    assert no.score == pytest.approx(base.score - AGREE_WEIGHT * 0.8, abs=1e-3) and "leans no" in no.reason


def test_a_plain_number_for_agree_is_always_used() -> None:
    # a measured value costs nothing more: it counts even far from the line
    assert decide(0.5, {"t": 2.0}, agree=1.0).score > decide(0.5, {"t": 2.0}).score


def test_an_answer_beside_a_fitting_tool_says_how_to_make_it_call() -> None:
    """Issue 26: "What is 37*91?" beside multiply was answered in text with no hint of what to do."""
    near = decide(6.7e-5, {"multiply": 0.22, "add": -0.1}, agree=0.44)
    assert near.action == "answer" and near.reason.endswith('; tool_choice="required" makes it call a tool')
    unfit = decide(9e-6, {"get_weather": -1.76})
    assert unfit.action == "answer" and "required" not in unfit.reason
    called = decide(0.02, {"get_weather": 0.9})
    assert called.action == "call" and "required" not in called.reason
