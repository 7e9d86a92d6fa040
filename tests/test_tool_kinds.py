"""Every kind of value passed in ``tools=`` becomes a working tool or one clear error."""

from __future__ import annotations

import asyncio
import functools
import json

import pytest

from agentnb import Agent, ToolDefinitionError, tool
from agentnb.testing import ScriptedProvider, call


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def slow_add(a: int, b: int) -> int:
    """Add two integers, later."""
    await asyncio.sleep(0)
    return a + b


class Box:
    """A box."""

    def __init__(self, size: int) -> None:
        self.size = size

    def grow(self, by: int) -> int:
        """Grow the box."""
        self.size += by
        return self.size


class Multiplier:
    """Multiply by a fixed factor."""

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, x: int) -> int:
        """Multiply x by the factor.

        Args:
            x: the number
        """
        return x * self.factor


class AsyncCounter:
    async def __call__(self, step: int) -> int:
        """Count up by step."""
        return step


def run_one(t: object, name: str, **arguments: object) -> str:
    agent = Agent(ScriptedProvider([call(name, **arguments), "done"]), tools=[t])
    result = agent.run("go")
    assert result.stop_reason == "answer", result
    return result.messages[2].content  # the tool's result as the model read it


def test_an_agent_in_tools_is_a_clear_error_that_suggests_as_tool() -> None:
    inner = Agent(ScriptedProvider(["hi"]))
    with pytest.raises(ToolDefinitionError) as info:
        Agent(ScriptedProvider(["x"]), tools=[inner])
    assert "agent.as_tool(" in str(info.value)
    with pytest.raises(ToolDefinitionError, match="as_tool"):
        tool(inner)
    for method in (inner.run, inner.arun):  # its methods too: one problem, not their signatures
        with pytest.raises(ToolDefinitionError) as info:
            Agent(ScriptedProvider(["x"]), tools=[method])
        assert info.value.problems == [info.value.problems[0]] and "agent.as_tool(" in info.value.problems[0]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (Box, "class Box is not a tool"),
        (json, "module 'json' is not a tool"),
        ("add", "pass the function itself"),
        (None, "None is not a tool"),
        (3, "int value 3 is not a tool"),
        (lambda x: x, "a lambda has no name"),
        (len, "positional-only"),
    ],
    ids=["class", "module", "string", "None", "int", "lambda", "builtin"],
)
def test_values_that_cannot_be_tools_get_one_clear_error(value: object, says: str) -> None:
    with pytest.raises(ToolDefinitionError) as info:
        Agent(ScriptedProvider(["x"]), tools=[value])
    assert says in str(info.value)
    assert len(info.value.problems) == 1


def test_tools_given_as_one_tool_a_string_or_a_dict() -> None:
    # one tool alone is a list of one (it was "TypeError: 'function' object is not iterable")
    model = ScriptedProvider([call("add", a=2, b=3), "5"])
    result = Agent(model, tools=add).run("2+3?")
    assert [m.content for m in model.requests[1].messages if m.role == "tool"] == ["5"]
    assert result.output == "5" and list(Agent(ScriptedProvider(["x"]), tools=Box(1).grow).tools) == ["grow"]
    assert list(Agent(ScriptedProvider(["x"]), tools=None).tools) == []
    # a dict of tools was read as its keys ("'add' is a string, not a tool")
    with pytest.raises(ToolDefinitionError, match=r"not a dict: pass list\(tools.values\(\)\)"):
        Agent(ScriptedProvider(["x"]), tools={"add": add})
    with pytest.raises(ToolDefinitionError, match="not the string 'add'"):
        Agent(ScriptedProvider(["x"]), tools="add")
    spec = {"type": "function", "function": {"name": "f", "description": "F.", "parameters": {"type": "object"}}}
    assert list(Agent(ScriptedProvider(["x"]), tools=spec).tools) == ["f"]  # one OpenAI tool dict


def test_lists_of_lists_bound_methods_partials_and_callable_objects_work() -> None:
    assert run_one([[add]], "add", a=2, b=3) == "5"
    assert run_one(Box(1).grow, "grow", by=4) == "5"
    plus_ten = functools.partial(add, b=10)
    made = tool(plus_ten)
    assert made.name == "add" and made.description == "Add two integers."
    assert list(made.parameters["properties"]) == ["a"]  # b is fixed by the partial
    assert run_one(plus_ten, "add", a=1) == "11"
    triple = tool(Multiplier(3))
    assert triple.name == "multiplier"
    assert triple.parameters["properties"]["x"] == {"type": "integer", "description": "the number"}
    assert run_one(Multiplier(3), "multiplier", x=4) == "12"


def test_async_partials_and_async_callable_objects_are_awaited() -> None:
    assert run_one(functools.partial(slow_add, b=1), "slow_add", a=1) == "2"
    assert run_one(AsyncCounter(), "async_counter", step=7) == "7"


def test_a_named_lambda_with_no_parameters_is_a_tool() -> None:
    made = tool(lambda: "pong", name="ping", description="Answer pong.")
    assert made.name == "ping" and run_one(made, "ping") == "pong"


def numbers(n: int):  # type: ignore[no-untyped-def]
    """Count from 1 to n."""
    yield from range(1, n + 1)


async def later_numbers(n: int):  # type: ignore[no-untyped-def]
    """Count from 1 to n, later."""
    for i in range(1, n + 1):
        await asyncio.sleep(0)
        yield i


class Countdown:
    def __call__(self, n: int):  # type: ignore[no-untyped-def]
        """Count down from n."""
        yield from range(n, 0, -1)


@pytest.mark.parametrize("stream", [False, True])
def test_a_generator_tool_returns_what_it_yields(stream: bool) -> None:
    """The model reads the items, not ``<generator object ...>``; calling the tool in Python
    still gives the generator."""
    tools = [numbers, later_numbers, Countdown(), tool(functools.partial(numbers), name="partial_numbers")]
    calls = [call("numbers", n=3), call("later_numbers", n=2), call("countdown", n=2), call("partial_numbers", n=1)]
    model = ScriptedProvider([*calls, "done"])
    result = Agent(model, tools=tools, tool_timeout=5).run("count", stream=stream)
    assert [m.content for m in result.messages if m.role == "tool"] == ["[1, 2, 3]", "[1, 2]", "[2, 1]", "[1]"]
    assert list(tool(numbers)(n=2)) == [1, 2]


def test_a_generator_tool_that_raises_midway_is_an_error_result() -> None:
    def broken(n: int):  # type: ignore[no-untyped-def]
        """Yield, then fail."""
        yield n
        raise ValueError("no more")

    result = Agent(ScriptedProvider([call("broken", n=1), "done"]), tools=[broken]).run("go")
    assert [m.content for m in result.messages if m.role == "tool"] == ["Error: broken raised ValueError: no more"]
