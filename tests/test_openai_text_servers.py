"""Text-only models behind real servers, driven through the untooled route.

* llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``) serving the embedded
  SmolLM2-135M-Instruct GGUF: its default chat format has no tool support, and its
  ``response_format`` takes ``json_object`` with a ``schema`` (not ``json_schema``), so the
  provider's first constrained request is refused and it falls back, once.
* ``transformers serve`` serving the SmolLM2 fp32 folder, whose chat template has no tools and
  which ignores ``response_format``: replies are read unconstrained.

Each server is started by the test on 127.0.0.1 and always stopped.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys

import pytest
from server_process import free_port, llama_cpp_server, running

from agentnb import Agent, tool
from agentnb.events import (
    CallDecision,
    CallRepair,
    CallSteered,
    ConstraintDropped,
    ModelRequest,
    RouteSwitched,
    ToolStarted,
    ValidationResult,
)
from agentnb.providers import OpenAIProvider

pytestmark = pytest.mark.slow

SETTINGS = {"max_tokens": 60, "temperature": 0.0, "seed": 0}


@tool(examples=[("What is the weather in Rome?", {"city": "Rome"})])
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: the city name
    """
    return f"It is 18 C and sunny in {city}."


@pytest.fixture(scope="module")
def llama_cpp_url():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (./dev setup builds it)")
    port = free_port()
    with running(llama_cpp_server(port), f"http://127.0.0.1:{port}/v1") as url:
        yield url


def test_llama_cpp_server_constrained_untooled_run(llama_cpp_url):
    p = OpenAIProvider("smollm2", base_url=llama_cpp_url, tool_calling="untooled", settings=SETTINGS, timeout=300)
    agent = Agent(p, [get_weather], max_tool_calls=3)
    r = agent.run("What is the weather in Paris?")
    assert r.error is None, r.error
    # the model called the tool, the call validated, it read the result and answered in text
    assert [(c.name, c.arguments) for c in r.messages[1].tool_calls] == [("get_weather", {"city": "Paris"})]
    assert r.messages[2].content == "It is 18 C and sunny in Paris."
    checks = [e for e in r.events if isinstance(e, ValidationResult)]
    assert checks and all(e.ok for e in checks)
    assert r.stop_reason == "answer" and r.output.strip() and not r.output.lstrip().startswith("{")
    # json_schema was refused once (llama-cpp-python takes json_object + schema), then kept
    dropped = [e for e in r.events if isinstance(e, ConstraintDropped)]
    assert len(dropped) == 1 and "json_object" in dropped[0].reason and p.constraint_format == "json_object"
    # a second run, streamed: no more refusals, and the calls still validate
    again = agent.run("What is the weather in Madrid?", stream=True)
    assert again.error is None and not any(isinstance(e, ConstraintDropped) for e in again.events)
    assert all(e.ok for e in again.events if isinstance(e, ValidationResult))
    assert again.messages[1].tool_calls and again.messages[1].tool_calls[0].name == "get_weather"


def test_llama_cpp_server_auto_route_switches_when_tools_are_ignored(llama_cpp_url):
    # llama-cpp-python's default chat format drops `tools` silently (no error, a prose reply).
    # The prompt it reports is as long with them as without: `auto` sees that and switches, once.
    # That is found before any request with tools (two one-token probes): no reply is written
    # with the tools the model never sees.
    p = OpenAIProvider("smollm2", base_url=llama_cpp_url, settings={**SETTINGS, "max_tokens": 20}, timeout=300)
    posted, post = [], p._post
    p._post = lambda kwargs: posted.append(kwargs) or post(kwargs)  # type: ignore[method-assign]
    r = Agent(p, [get_weather], max_tool_calls=1).run("What is the weather in Paris?")
    assert r.error is None, r.error
    switches = [e for e in r.events if isinstance(e, RouteSwitched)]
    assert len(switches) == 1 and "ignored `tools`" in switches[0].reason and p.route == "untooled"
    assert posted and not any("tools" in kwargs for kwargs in posted)
    # the step went again through UnTooled: the model called the tool and read its result
    started = [e for e in r.events if isinstance(e, ToolStarted)]
    assert [e.name for e in started] == ["get_weather"] and "paris" in str(started[0].arguments).lower()
    assert sum(isinstance(e, ModelRequest) for e in r.events) >= 2


@tool
def binomial_probability(trials: int, successes: int, p: float) -> float:
    """Probability of exactly k successes in n independent trials.

    Args:
        trials: Number of trials n.
        successes: Number of successes k.
        p: Probability of success in one trial, between 0 and 1.
    """
    from math import comb

    return round(comb(trials, successes) * p**successes * (1 - p) ** (trials - successes), 4)


binomial_probability.parameters["properties"]["trials"].update(minimum=1, maximum=50)
binomial_probability.parameters["properties"]["successes"].update(minimum=0)
binomial_probability.parameters["properties"]["p"].update(minimum=0, maximum=1)


def test_llama_cpp_server_bounded_parameters_validate(llama_cpp_url):
    # llama-cpp-python's grammar skips minimum/maximum. trials (1..50) goes out as an enum; p's
    # bounds cannot, and SmolLM2 writes p=1.5 here: the call is asked for again, once, with p
    # narrowed to values that validate, and the loop gets a call that validates. (Without
    # steering: a steered call keeps the bounds itself; see the next test.)
    settings = {**SETTINGS, "max_tokens": 96}
    p = OpenAIProvider(
        "smollm2", base_url=llama_cpp_url, tool_calling="untooled", settings=settings, timeout=300, steer=False
    )
    agent = Agent(p, [binomial_probability], max_tool_calls=1, tool_choice="required")
    r = agent.run("If I flip a fair coin 10 times, what's the chance of exactly 3 heads?")
    assert r.error is None, r.error
    checks = [e for e in r.events if isinstance(e, ValidationResult)]
    assert checks and all(e.ok for e in checks)
    ran = [e.arguments for e in r.events if isinstance(e, ToolStarted)]
    assert len(ran) == 1 and 1 <= ran[0]["trials"] <= 50 and 0 <= ran[0]["p"] <= 1
    fixes = [e for e in r.events if isinstance(e, CallRepair)]
    assert len(fixes) == 1 and fixes[0].repaired and fixes[0].rejected["p"] > 1  # what was measured here
    assert "p: numbers 0 to 1" in fixes[0].detail


def test_llama_cpp_server_steered_calls_keep_bounds_and_copy_the_request(llama_cpp_url):
    # steer="auto" (the default): a required call is decoded token by token from the server's
    # streamed alternatives, under the call's grammar (bounds included) and the copy bias
    settings = {**SETTINGS, "max_tokens": 96}
    p = OpenAIProvider(
        "smollm2", base_url=llama_cpp_url, tool_calling="untooled", settings=settings, timeout=300, guidance_budget=None
    )
    agent = Agent(p, [binomial_probability], max_tool_calls=1, tool_choice="required")
    r = agent.run("If I flip a fair coin 10 times, what's the chance of exactly 3 heads?")
    assert r.error is None, r.error
    assert p._steering.works and p._steering.template.name == "chatml"
    [steered] = [e for e in r.events if isinstance(e, CallSteered)]
    assert steered.name == "binomial_probability" and steered.requests >= 1
    assert not any(isinstance(e, CallRepair) for e in r.events)  # nothing to repair: p stayed within 0..1
    [ran] = [e.arguments for e in r.events if isinstance(e, ToolStarted)]
    assert 1 <= ran["trials"] <= 50 and ran["successes"] >= 0 and 0 <= ran["p"] <= 1
    # SmolLM2 on its own writes 250 for "$250k" here (steer=False); steered, the value is copied
    loan = Agent(p, [loan_monthly_payment], max_tool_calls=1, tool_choice="required")
    r = loan.run("Monthly payment on a $250k mortgage at 6.5% over 30 years?")
    assert r.error is None, r.error
    [ran] = [e.arguments for e in r.events if isinstance(e, ToolStarted)]
    assert ran == {"principal": 250000, "annual_rate_percent": 6.5, "years": 30}
    plain = OpenAIProvider("smollm2", base_url=llama_cpp_url, tool_calling="untooled", settings=settings, steer=False)
    r = Agent(plain, [loan_monthly_payment], max_tool_calls=1, tool_choice="required").run(
        "Monthly payment on a $250k mortgage at 6.5% over 30 years?"
    )
    [ran] = [e.arguments for e in r.events if isinstance(e, ToolStarted)]
    assert ran["principal"] != 250000  # what was measured here: 250


@tool
def loan_monthly_payment(principal: float, annual_rate_percent: float, years: int) -> float:
    """Monthly payment of a fixed-rate loan.

    Args:
        principal: The amount borrowed.
        annual_rate_percent: The yearly interest rate in percent.
        years: The term in years.
    """
    rate, months = annual_rate_percent / 1200, years * 12
    return round(principal * rate / (1 - (1 + rate) ** -months), 2)


def test_llama_cpp_server_ranks_the_tools_from_its_shifted_echo(llama_cpp_url):
    # llama-cpp-python 0.3.36 gives each echoed prompt token the log-probability of the row after
    # it (SmolLM2 has no BOS token): one probe per provider finds that, and the ranking reads
    # each token's value among the previous token's alternatives (agentnb.providers.openai.rank)
    settings = {**SETTINGS, "max_tokens": 96}
    p = OpenAIProvider(
        "smollm2", base_url=llama_cpp_url, tool_calling="untooled", settings=settings, timeout=300, guidance_budget=None
    )
    tools = [get_weather, binomial_probability]
    agent = Agent(p, tools, max_tool_calls=1, tool_choice="required")
    r = agent.run("If I flip a fair coin 10 times, what's the chance of exactly 3 heads?")
    assert r.error is None, r.error
    assert p._ranker.convention == "shifted" and p._ranker.works
    [decision] = [e for e in r.events if isinstance(e, CallDecision)]
    assert decision.tool == "binomial_probability" and {n for n, _ in decision.ranking} == {t.name for t in tools}
    assert [e.name for e in r.events if isinstance(e, ToolStarted)] == ["binomial_probability"]
    weather = agent.run("What is the weather in Oslo right now?")
    assert weather.error is None, weather.error
    [decision] = [e for e in weather.events if isinstance(e, CallDecision)]
    assert decision.tool == "get_weather"
    assert [e.arguments for e in weather.events if isinstance(e, ToolStarted)] == [{"city": "Oslo"}]


@pytest.fixture(scope="module")
def serve_url():
    for module in ("fastapi", "uvicorn"):
        pytest.importorskip(module, reason="needs transformers[serving]")
    from agentnb.providers.hf import smollm2_path
    from agentnb.providers.hf.loading import CACHE_NAME, cache_dir, load_smollm2

    folder = cache_dir() / CACHE_NAME
    if not (folder / "model.safetensors").is_file():
        load_smollm2(smollm2_path())  # writes the fp32 folder
    exe = shutil.which("transformers", path=os.path.dirname(sys.executable))
    assert exe, "the transformers CLI is not installed next to this Python"
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [exe, "serve", str(folder), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    with running(cmd, f"http://127.0.0.1:{port}/v1", env=env) as url:
        yield url, str(folder)


def test_transformers_serve_text_only_model_through_untooled(serve_url):
    url, model = serve_url
    p = OpenAIProvider(model, base_url=url, tool_calling="untooled", settings=SETTINGS, timeout=600)
    # Unconstrained, a 135M model answers in prose unless told to call; "required" tells it
    # (first step only). What it then writes is its own affair: measured here, it names the
    # city instead of the tool ({"name": "Paris", ...}), which the loop reports back to it.
    # Constrained decoding (the llama.cpp test above) is what makes such a model's calls right.
    agent = Agent(p, [get_weather], max_tool_calls=1, tool_choice="required")
    r = agent.run("What is the weather in Paris?")
    assert r.error is None, r.error
    assert r.tool_calls == 1 and r.messages[1].tool_calls  # the reply was read as a call attempt
    handled = [e for e in r.events if e.kind in ("validation", "unknown_tool", "tool_finished")]
    assert handled  # ... which the loop checked, and answered with a result or an error
    assert r.stop_reason == "limit" and r.output.strip()  # then it answered in text
    # no request carried tools; the catalogue was in the prompt
    bodies = [e for e in r.events if isinstance(e, ModelRequest)]
    assert len(bodies) == 2
    # the server ignores response_format: the provider noticed once and stopped sending it
    dropped = [e for e in r.events if isinstance(e, ConstraintDropped)]
    assert len(dropped) == 1 and "ignored" in dropped[0].reason and p.constraint_format is None


def test_transformers_serve_auto_route_switches_for_a_template_without_tools(serve_url):
    # The chat template has no place for tools: the server takes them and drops them. `auto`
    # measures the prompt with and without them, finds them equal, and goes untooled.
    url, model = serve_url
    p = OpenAIProvider(model, base_url=url, settings={**SETTINGS, "max_tokens": 24}, timeout=600)
    r = Agent(p, [get_weather], max_tool_calls=1, tool_choice="required").run("What is the weather in Paris?")
    assert r.error is None, r.error
    switches = [e for e in r.events if isinstance(e, RouteSwitched)]
    assert len(switches) == 1 and "ignored `tools`" in switches[0].reason and p.route == "untooled"
    assert r.messages[1].tool_calls  # the untooled reply was read as a call attempt
