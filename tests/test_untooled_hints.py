"""agentnb.providers.untooled.hints: what the server route says in the schema and the prompt."""

from __future__ import annotations

from agentnb import UnTooled, tool
from agentnb.messages import UserMessage
from agentnb.providers.base import Request
from agentnb.providers.untooled.hints import plain_numbers, require_named, tighten
from agentnb.testing import ScriptedProvider


@tool
def interest(principal: float, rate: float, compounds_per_year: int = 1, currency: str = "USD") -> float:
    """Compound interest."""
    return principal


def test_plain_numbers_drops_separators_and_writes_scales_as_digits():
    assert plain_numbers("I put $10,000 in at 5%") == "I put $10000 in at 5%"
    assert plain_numbers("a $250k mortgage, 2.5k steps, 213 million people") == (
        "a $250000 mortgage, 2500 steps, 213000000 people"
    )
    assert plain_numbers("86.40 for 4 people, tip 20%") is None  # nothing a JSON number cannot copy
    assert plain_numbers("on 2025-07-04 at 10:30") is None


def test_require_named_only_grows_required():
    schema = interest.parameters
    tightened = require_named(schema, "10,000 at 5%, compounded monthly")
    assert tightened["required"] == ["principal", "rate", "compounds_per_year"]
    assert tightened["properties"] == schema["properties"]  # every value allowed before still is
    assert schema["required"] == ["principal", "rate"]  # the tool's own schema is untouched
    assert require_named(schema, "10,000 at 5%") is schema
    assert require_named({"type": "string"}, "compounded") == {"type": "string"}


def test_tighten_keeps_tools_that_need_no_change():
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    out = tighten([interest, ping], "compounded monthly")
    assert out[1] is ping and out[0] is not interest
    assert out[0].name == "interest" and out[0].parameters["required"][-1] == "compounds_per_year"


def test_the_numbers_hint_is_off_by_default_and_goes_under_the_latest_request():
    query = "What do $10,000 earn at 5%?"
    default = UnTooled(ScriptedProvider([], native_tools=False)).render(Request([UserMessage(query)], [interest]))
    assert "plain numbers" not in default[-1].content  # the in-process prompt is unchanged
    hinted = UnTooled(ScriptedProvider([], native_tools=False), value_hints=True)
    messages = [UserMessage("Earlier: $5,000?"), UserMessage(query)]
    rendered = hinted.render(Request(messages, [interest], "required"))
    text = rendered[-1].content
    assert "(The same with plain numbers: What do $10000 earn at 5%?)" in text
    assert "$5000" not in text  # only the latest request
    assert "plain numbers" not in hinted.render(Request([UserMessage(query)], []))[-1].content  # no tools: no hint
