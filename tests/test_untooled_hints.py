"""agentnb.providers.untooled.hints: what the server route says in the schema and the prompt."""

from __future__ import annotations

from agentnb import tool
from agentnb.providers.untooled.hints import require_named, tighten


@tool
def interest(principal: float, rate: float, compounds_per_year: int = 1, currency: str = "USD") -> float:
    """Compound interest."""
    return principal


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
