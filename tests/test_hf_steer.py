"""Steering a call as it is decoded (agentnb.providers.guidance.steer): the pure-Python parts."""

from __future__ import annotations

import pytest

from agentnb.providers.guidance.steer import CopyBias, TokenTable, spans, value_so_far

CALL = '{"name": "f", "arguments": '


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (CALL + '{"city": "Bro', ("Bro", "string")),
        (CALL + '{"city": "', ("", "string")),
        (CALL + '{"city": ', ("", "start")),
        (CALL + '{"n": 25', ("25", "number")),
        (CALL + '{"xs": [10, 12', ("10, 12", "list")),
        (CALL + '{"xs": ["apple", "pe', ("apple, pe", "list-string")),
        (CALL + '{"xs": ["apple", ', ("apple, ", "list")),
        (CALL + '{"ci', None),
        (CALL + '{"city": "Paris", ', None),
        (CALL + '{"city": "Paris"', None),
        (CALL + '{"n": 25, "m', None),
        (CALL + '{"opt": {"deep": "va', ("va", "string")),
        (CALL + '{"q": "say \\"hi', ("say \\hi", "string")),
        ('{"na', None),
    ],
)
def test_value_so_far(written: str, expected: tuple[str, str] | None) -> None:
    assert value_so_far(written) == expected


def test_spans_start_at_word_boundaries_and_drop_thousands_separators_in_numbers() -> None:
    source = "Bought for $2,500, worth 3,100 now; split 1,2"
    assert spans(source, "2", numeric=True) == ["500, worth 3100 now; split 1,2", ""]  # "1,2" is not a thousand
    assert spans(source, "25", numeric=True) == ["00, worth 3100 now; split 1,2"]
    assert spans(source, "25", numeric=False) == []
    assert spans(source, "orth", numeric=False) == []  # not at a word start
    assert spans("a b", "", numeric=False) == ["a b", "b"]
    assert spans("came to 86.40, 4 people", "4", numeric=True) == [" people"]  # not the 40 of 86.40


class FakeTokenizer:
    """Token i decodes to VOCAB[i]."""

    VOCAB = ["Bro", "oklyn", "o", "Bl", '"', '",', '"}', "]", "?", "x", "0", "00", "5", ",", " oklyn"]

    def batch_decode(self, ids: list[list[int]]) -> list[str]:
        return [self.VOCAB[i[0]] for i in ids]


def ids(*texts: str) -> set[int]:
    return {FakeTokenizer.VOCAB.index(t) for t in texts}


def favoured(bias: CopyBias, written: str) -> set[int]:
    return set(bias.bonus(CALL + written))


def test_copy_bias_continues_a_span_and_closes_it_where_it_ends() -> None:
    table = TokenTable(FakeTokenizer(), len(FakeTokenizer.VOCAB))
    bias = CopyBias("Any thai places in Brooklyn?", table, 3.0)
    assert favoured(bias, '{"city": "Bro') == ids("oklyn", "o")
    assert favoured(bias, '{"city": "Brooklyn') == ids('"', '",', '"}')  # the span ends with "?"
    assert favoured(bias, '{"city": "Bl') == set()  # off the text: no opinion
    assert favoured(bias, '{"ci') == set()  # keys are not copied
    assert ids("Bro") <= favoured(bias, '{"city": ')  # a value may start at any word
    quoted = CopyBias("Is 'Racecar' a palindrome? Don't guess", table, 3.0)
    assert ids('"') <= favoured(quoted, '{"text": "Racecar')
    assert not ids('"') & favoured(quoted, '{"text": "Don')  # "Don't" goes on


def test_copy_bias_in_numbers_reads_through_thousands_separators_and_ends_lists() -> None:
    table = TokenTable(FakeTokenizer(), len(FakeTokenizer.VOCAB))
    bias = CopyBias("It cost $2,500 for 5, 5", table, 3.0)
    assert favoured(bias, '{"cost": 2') == ids("5")  # "2,500" reads as "2500"; "," not favoured
    assert favoured(bias, '{"cost": 25') == ids("0", "00")
    assert favoured(bias, '{"xs": [5, 5') == ids("]")  # the request's list ends here
    assert ids(",") <= favoured(bias, '{"xs": [5')


def test_copy_bias_never_favours_leaving_a_string_or_number_to_go_on_with_the_request() -> None:
    table = TokenTable(FakeTokenizer(), len(FakeTokenizer.VOCAB))
    bias = CopyBias("cities Paris, Oslo, 5, 500", table, 3.0)
    assert favoured(bias, '{"city": "Paris') == ids(",")  # not '",': it would end the string
    assert favoured(bias, '{"n": 5') == ids("0", "00")  # from 500; not the "," of "5, 500": it ends the number
    assert ids('",') <= favoured(bias, '{"xs": ["Paris')  # in a list of strings it goes on


def test_going_on_into_the_next_word_is_a_weaker_hint_than_finishing_this_one() -> None:
    table = TokenTable(FakeTokenizer(), len(FakeTokenizer.VOCAB))
    bias = CopyBias("flights Bro oklyn", table, 4.0)
    assert bias.bonus(CALL + '{"city": "Bro') == {i: 2.0 for i in ids(" oklyn")}
    assert bias.bonus(CALL + '{"city": "Br') == {i: 4.0 for i in ids("o")}
    start = {i: v for i, v in bias.bonus(CALL + '{"city": ').items() if v > 0}  # leaks aside (below)
    assert start == {i: 2.0 for i in ids("Bro", "o", "oklyn") | ids('"')}


def test_a_list_of_numbers_ends_where_the_numbers_in_the_request_end() -> None:
    table = TokenTable(FakeTokenizer(), len(FakeTokenizer.VOCAB))
    bias = CopyBias("Sort 5, 5, 500 from biggest", table, 3.0)
    assert ids(",") <= favoured(bias, '{"xs": [5')  # ", 5, 500" goes on
    assert ids("]") <= favoured(bias, '{"xs": [5, 5, 500')  # " from biggest" does not


def test_a_string_value_may_not_start_with_the_prompts_format_syntax() -> None:
    # issue 26 item 11: '{"expression": "}} 12345678 ...' - the format line's "}}" leaked into a value
    class Tok:
        def batch_decode(self, ids):
            return [["}}", '"}', '"', "3", " {", "What"][i[0]] for i in ids]

    table = TokenTable(Tok(), 6)
    bias = CopyBias("What is 37*91?", table, 6.0)
    inside = bias.bonus('{"name": "calculator", "arguments": {"expression": "')
    assert inside[0] < -50 and inside[4] < -50 and inside[3] > 0  # "}}", " {" banned; "3" copies
    before = bias.bonus('{"name": "calculator", "arguments": {"expression": ')
    assert before[1] < -50 and 0 not in before  # the quote-and-brace token; a bare "}}" is the grammar's
    assert CopyBias("f({x})", table, 6.0).bonus('{"name": "f", "arguments": {"e": "').get(4, 0) >= 0  # in the request


def test_values_copy_the_users_request_not_the_layers_format_hint() -> None:
    from agentnb.messages import UserMessage
    from agentnb.providers.guidance.steer import request_text

    hinted = [UserMessage("What is 37*91?\n(Reply with a function call, as JSON.)")]
    assert request_text({"query": "What is 37*91?"}, hinted) == "What is 37*91?"
    assert request_text(None, hinted).startswith("What is 37*91?")


def test_a_value_does_not_open_on_punctuation_in_the_quotes_token() -> None:
    # '{"expression": ",' then ' 12 + 7 = 19, 19 + 7 = ...': the model wrote '",' (closing a value
    # it never wrote, then the next key's comma) and the grammar made it the value's first character
    class Tok:
        def batch_decode(self, ids):
            return [['",', '".', '"', '"(', "(", "12", '")', '"12'][i[0]] for i in ids]

    table = TokenTable(Tok(), 8)
    bias = CopyBias("Compute (12+7)*3", table, 6.0)
    before = bias.bonus('{"name": "calculator", "arguments": {"expression": ')
    assert before[0] < -50 and before[1] < -50 and before[6] < -50  # '",' '".' '")'
    assert before[2] > 0 and before[3] > 0 and before[7] > 0  # the quote alone; with "(" or "12" after it
    inside = bias.bonus('{"name": "calculator", "arguments": {"expression": "')
    assert inside[4] > 0 and inside[5] > 0  # a value may start on "(" before a number, as on the number


@pytest.mark.parametrize(
    ("source", "starts"),
    [
        ("Compute (12+7)*3", ["(12+7)*3", "12+7)*3"]),
        ("Set it to -40 now", ["-40 now", "40 now"]),
        ("Open ./data.csv please", ["./data.csv please", "data.csv please"]),
        ("Post in #general", ["#general"]),
    ],
)
def test_a_value_may_start_on_an_opening_sign_before_a_word(source: str, starts: list[str]) -> None:
    got = spans(source, "", numeric=False)
    assert all(s in got for s in starts), got
    assert not any(s[:1] in " -" and not s[1:2].isalnum() for s in got)  # never on a bare dash or space


def test_a_percent_goes_on_in_a_string_but_not_in_a_number() -> None:
    class Tok:
        def batch_decode(self, ids):
            return [["%", '"', ",", " of"][i[0]] for i in ids]

    table = TokenTable(Tok(), 4)
    bias = CopyBias("What's 15% of 380?", table, 6.0)
    assert bias.bonus('{"name": "f", "arguments": {"e": "15').get(0) == 6.0  # "15%" is copied whole
    number = bias.bonus('{"name": "f", "arguments": {"rate": 15')
    assert 0 not in number  # the number 15 ends there (numbers end by themselves: no bonus to go on)


@pytest.mark.parametrize(
    ("value", "source", "run"),
    [
        ("1998_1999_1999_1999", "who won the 1998 world cup", "_1999"),
        ("best pizza pizza pizza ", "best pizza", "pizza "),
        ("ab_19_19_19", "", "_19"),
        ("1998_1999_1999", "who won the 1998 world cup", None),  # twice is not yet a loop
        ("ha ha ha ha", "laugh: ha ha  ha ha", None),  # the request writes it so: a copy
        ("1000000000", "", None),  # one character again and again: a number
        ("Mississippi", "", None),
        ("abab", "", None),  # too short to tell
    ],
)
def test_a_loop_is_a_run_three_times_over_that_the_request_does_not_hold(
    value: str, source: str, run: str | None
) -> None:
    from agentnb.providers.guidance.loops import looping_run

    assert looping_run(value, source) == run


def test_a_looping_string_value_gets_its_closing_tokens_favoured() -> None:
    from agentnb.providers.guidance.loops import LoopingStrings

    loops = LoopingStrings("who won the 1998 world cup", TokenTable(FakeTokenizer(), len(FakeTokenizer.VOCAB)), 6.0)
    assert loops.bonus(CALL + '{"q": "1998_1999_1999_1999') == dict.fromkeys(ids('"', '",', '"}'), 12.0)
    assert loops.bonus(CALL + '{"q": "1998_1999_1999') == {}
    assert loops.bonus(CALL + '{"xs": [1999, 1999, 1999, 1999') == {}  # numbers: RepeatedItems' business


def test_a_required_free_text_string_may_not_be_empty_in_a_constrained_call() -> None:
    """The call's grammar is built from call_schema: "" for a required free-text string is out."""
    import jsonschema

    from agentnb.providers.guidance.constraint import call_schema
    from agentnb.tools import Tool

    schema = {
        "type": "object",
        "required": ["expression", "unit", "code"],
        "properties": {
            "expression": {"type": "string"},
            "unit": {"enum": ["", "cm"]},  # an enum keeps its own values, "" included
            "code": {"type": "string", "pattern": "^[A-Z]*$"},  # so does a pattern
            "note": {"type": "string"},  # optional: may stay empty
        },
    }
    tool = Tool("calc", "Calculate.", schema)
    validator = jsonschema.Draft202012Validator(call_schema(tool))

    def allowed(**arguments: str) -> bool:
        return validator.is_valid({"name": "calc", "arguments": arguments})

    assert allowed(expression="2+2", unit="", code="")
    assert allowed(expression="2+2", unit="cm", code="AB", note="")
    assert not allowed(expression="", unit="cm", code="AB")
    assert tool.validate({"expression": "", "unit": "cm", "code": ""}) == []  # the tool itself is unchanged


def test_prose_that_counts_on_is_stopped_sooner_when_nobody_asked_for_numbers() -> None:
    """Issue 26's "Print the numbers" sibling: after a call, the embedded model counted "1. 2. 3.
    ..." to the 512-token cap (27 s). A run of numbers that keeps its shape is a loop, soon when
    neither the request nor the results hold a number, much later when they do."""
    from agentnb.providers.guidance.loops import RepeatGuard, asks_numbers

    digits = {i: str(i) for i in range(10)}  # token i is the digit i; 10 is " ", 11 is "."
    counting = []
    for n in range(1, 100):
        counting += [10, *(int(d) for d in str(n)), 11]

    def stops_at(guard: RepeatGuard) -> int | None:
        return next((i for i, t in enumerate(counting) if guard.looping(t)), None)

    unasked = stops_at(RepeatGuard(numeric=digits))
    asked = stops_at(RepeatGuard(numeric=digits, numbers_asked=True))
    assert unasked is not None and unasked < 70
    assert asked is not None and asked > 150  # "list 1 to 30" (about 120 tokens) stays whole
    assert stops_at(RepeatGuard()) is None  # without knowing the numbers: exact repeats only
    assert not asks_numbers("open config/app_settings.yaml", ["Result of read_file: ok"])
    assert asks_numbers("open the file", ["3 rows"]) and asks_numbers("count to twenty")


@pytest.mark.parametrize(
    ("source", "value", "goes_on"),
    [
        ("send a note to jane.doe@corp.io saying hi", "jane.doe", "@corp"),
        ("Look up the account alice_smith please", "alice", "_smith"),
    ],
)
def test_a_copied_span_goes_on_through_at_signs_and_underscores(source: str, value: str, goes_on: str) -> None:
    """The span "jane.doe@corp.io" was cut to "jane.doe": the span ended at "@" and closing was favoured."""

    class Tok:
        VOCAB = ['"', '",', goes_on, "x"]

        def batch_decode(self, ids: list[list[int]]) -> list[str]:
            return [self.VOCAB[i[0]] for i in ids]

    bias = CopyBias(source, TokenTable(Tok(), 4), 6.0)
    assert bias.bonus(CALL + '{"to": "' + value) == {2: 6.0}  # going on, and no bonus for closing
