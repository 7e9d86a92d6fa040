"""The embedded model's pure-Python steering parts: grounded answers, argument values, the
auto decision, named optional parameters, thread choice (no model needed)."""

from __future__ import annotations

import pytest

from agentnb.events import CallDecision, event_from_dict
from agentnb.notebook.trace.render import depth_html
from agentnb.notebook.trace.state import TraceState
from agentnb.printer import format_event
from agentnb.providers.guidance.decide import decide
from agentnb.providers.guidance.ground import ResultBias, content_words
from agentnb.providers.guidance.optional import NamedOptionals, named_optionals
from agentnb.providers.guidance.steer import CopyBias, TokenTable, _goes_on, numeric_forms, spans
from agentnb.providers.hf.threads import choose_threads, default_threads

CALL = '{"name": "f", "arguments": '


class Tok:
    """A tokenizer whose tokens are the given strings."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def batch_decode(self, ids: list[list[int]]) -> list[str]:
        return [self.texts[i[0]] for i in ids]


def table(*texts: str) -> TokenTable:
    return TokenTable(Tok(list(texts)), len(texts))


# --- answers grounded in tool results ----------------------------------------------------


def test_content_words_keep_numbers_whole_and_skip_function_words() -> None:
    assert content_words("42 km = 26.0976 mi") == ["42", "km", "26.0976", "mi"]
    assert content_words("The date is 2000-01-01, a Saturday.") == ["date", "2000-01-01", "Saturday"]


def test_result_bias_starts_result_words_then_follows_them_to_their_end() -> None:
    t = table("The", " answer", " Sat", "urday", " 2000", "Sat", " 26", ".09", "76", ".1")
    bias = ResultBias(["Saturday", "42 km = 26.0976 mi"], t, 4.0)
    start = bias.bonus("The answer is")
    assert start[2] == 2.0 and start[6] == 2.0 and 4 not in start  # " Sat", " 26": not the request's " 2000"
    assert bias.bonus("It is Sat") == {3: 4.0}
    assert bias.bonus("It is 26")[7] == 4.0 and 9 not in bias.bonus("It is 26")  # ".09", not ".1"
    assert 5 in bias.bonus('It is "')  # after a quote a word starts without a space
    assert bias.bonus("Saturday, and 42 km is 26.0976 mi.") == {}  # all written: no more pull


def test_result_bias_ignores_empty_results() -> None:
    assert ResultBias(["", "  "], table("a"), 4.0).bonus("x") == {}


# --- argument values ---------------------------------------------------------------------


def test_scale_words_are_copied_as_digits() -> None:
    assert numeric_forms("213 million people") == ["213 million people", "213000000 people"]
    assert numeric_forms("a 1.2M loan, 2.5k steps, 5 km, 1.4 billion") == [
        "a 1.2M loan, 2.5k steps, 5 km, 1.4 billion",
        "a 1200000 loan, 2500 steps, 5 km, 1400000000",
    ]
    t = table("000", "000000", " million", "5", '"', "}")
    bias = CopyBias("a population of 213 million", t, 6.0)
    going = bias.bonus(CALL + '{"population": 213')
    assert going[1] == 6.0 and going[5] == -6.0  # more zeros; closing now would drop the scale
    assert bias.bonus(CALL + '{"population": 213000000')[5] == 6.0  # the whole number: close
    assert 5 not in CopyBias("12 people", t, 6.0).bonus(CALL + '{"n": 12')  # no scale: left alone


def test_expressions_are_copied_whole() -> None:
    t = table('"', "^", "2", "+")
    bias = CopyBias("Find the area under y=x^2 from x=1", t, 6.0)
    assert bias.bonus(CALL + '{"function": "x') == {1: 6.0}  # not closed after "x"
    assert _goes_on("^2 from") and _goes_on("+2 between")


def test_every_number_of_a_range_is_followed() -> None:
    assert _goes_on(" to x=3.", "list") and _goes_on(" and 4", "list") and not _goes_on(" from biggest", "list")
    t = table("3", "1", "]", ", ")
    bias = CopyBias("area under y=x^2 from x=1 to x=3", t, 6.0)
    assert spans(bias.source, "1, ", numeric=True) == []
    after_comma = bias.bonus(CALL + '{"interval": [1, ')
    assert after_comma.get(0) == 3.0  # a new item may start on the request's next number


def test_strings_close_where_a_new_phrase_starts() -> None:
    t = table('"', " to", " Francisco", '",')
    bias = CopyBias("Flights from San Francisco to Boston on 2025-06-12", t, 6.0)
    at_end = bias.bonus(CALL + '{"origin": "San Francisco')
    assert 1 not in at_end and at_end[0] == 3.0  # no pull into "to Boston"; closing gets a weak bonus
    assert bias.bonus(CALL + '{"origin": "San')[2] == 3.0  # "San" goes on into "Francisco"


def test_named_optional_parameters_keep_the_call_open() -> None:
    schema = {
        "type": "object",
        "required": ["city"],
        "properties": {
            "city": {"type": "string"},
            "compounds_per_year": {"type": "integer"},
            "method": {"enum": ["trapezoid", "simpson"]},
            "days": {"type": "integer"},
        },
    }
    assert named_optionals(schema, "Paris, compounded monthly, simpson please") == ["compounds_per_year", "method"]
    assert named_optionals(schema, "a 3-day forecast for Paris") == ["days"]
    assert named_optionals(schema, "Paris") == []
    t = table("}", '"}', ", ", "days", '":', "x")
    n = NamedOptionals(["days"], t, 5.0)
    assert n.bonus(CALL + '{"city": "Paris"') == {0: -5.0, 1: -5.0}
    assert n.bonus(CALL + '{"city": "Paris", "') == {3: 5.0}
    assert n.bonus(CALL + '{"city": "Paris", "days": 3') == {}


# --- the auto decision -------------------------------------------------------------------


def test_decision_weighs_tool_fit_against_call_share() -> None:
    fits = {"get_weather": 0.8, "add": -0.4}
    call = decide(0.01, fits)
    assert call.action == "call" and call.tool_ranking == (("get_weather", 0.8), ("add", -0.4))
    assert "get_weather fits the request better than no tool" in call.reason
    # the same share with no tool fitting: an answer
    assert decide(0.01, {"get_weather": -0.5}).action == "answer"
    # a higher threshold calls less
    assert decide(0.01, fits, threshold=call.score + 1).action == "answer"


def test_call_decision_event_round_trips_and_is_shown() -> None:
    e = CallDecision(2, "answer", "no tool fits", 1.5, 0.0, 0.001, (("add", -0.7), ("get_weather", -0.9)), None)
    assert event_from_dict(e.to_dict()) == e
    line = format_event(e)
    assert line is not None and line.startswith("  [2] answer in text: no tool fits") and "add -0.70" in line
    state = TraceState()
    state.add(e)
    html = depth_html(state.depths[2])
    assert "Why it answered in text" in html and "no tool fits" in html and "<code>add</code>" in html


# --- threads -----------------------------------------------------------------------------


def test_thread_count_leaves_busy_cores_alone_and_can_be_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert default_threads(cpus=2, load=3.9) == 1
    assert default_threads(cpus=2, load=0.0) == 2
    assert default_threads(cpus=64, load=0.0) == 4
    monkeypatch.setenv("AGENTNB_THREADS", "3")
    assert choose_threads() == 3
    assert choose_threads(1) == 1
    monkeypatch.setenv("AGENTNB_THREADS", "many")
    with pytest.raises(Exception, match="AGENTNB_THREADS must be a whole number"):
        choose_threads()
    monkeypatch.delenv("AGENTNB_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert choose_threads() is None  # torch follows OMP_NUM_THREADS itself
    with pytest.raises(Exception, match="at least 1"):
        choose_threads(0)
