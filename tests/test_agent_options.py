"""Agent options of the wrong kind are a clear error when the agent is made (not mid-run)."""

from __future__ import annotations

import pytest

from agentnb import Agent, UserError
from agentnb.testing import ScriptedProvider


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"max_tool_calls": True}, "max_tool_calls must be a whole number"),
        ({"max_tool_calls": 2.0}, "max_tool_calls must be a whole number"),
        ({"tool_timeout": 0}, "tool_timeout must be a number of seconds > 0"),  # was: no timeout at all
        ({"tool_timeout": -1}, "tool_timeout must be a number of seconds > 0"),  # was: every call timed out
        ({"tool_timeout": "5"}, "tool_timeout must be a number of seconds > 0"),
        ({"settings": [("temperature", 0)]}, "settings must be a dict"),  # was: a failure at the first request
        ({"system": 5}, "system must be a string"),
        ({"max_result_chars": 0}, "max_result_chars must be a whole number >= 1"),
        ({"max_output_retries": -1}, "max_output_retries must be a whole number >= 0"),
    ],
    ids=lambda v: str(v)[:40],
)
def test_options_of_the_wrong_kind(options: dict, says: str) -> None:
    with pytest.raises(UserError, match=says):
        Agent(ScriptedProvider(["x"]), **options)


def test_options_of_the_right_kind() -> None:
    agent = Agent(ScriptedProvider(["x"]), tool_timeout=0.5, settings={"temperature": 0}, system="Be brief.")
    assert agent.run("hi").output == "x" and agent.tool_timeout == 0.5
