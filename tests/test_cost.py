"""Cost: every model call priced from genai-prices; unknown is None, never a guess."""

from __future__ import annotations

import io
import subprocess
import sys

import genai_prices
import pytest

from agentnb import Agent, TextPrinter, Usage, tool
from agentnb.control.cost import format_cost, price
from agentnb.events import ModelResponse
from agentnb.providers import OpenAIProvider, Provider
from agentnb.providers.base import Completion
from agentnb.testing.server import Reply, ScriptedServer, text, tool_calls


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def table(model: str, inputs: int, outputs: int) -> float:
    usage = genai_prices.Usage(input_tokens=inputs, output_tokens=outputs)
    return float(genai_prices.calc_price(usage, model, provider_id="openai").total_price)


@pytest.fixture(scope="module")
def server():
    with ScriptedServer() as s:
        yield s


def test_each_response_and_the_run_are_priced(server: ScriptedServer) -> None:
    server.reset()
    server.script(
        Reply(tool_calls=[{"id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'}], usage=(1200, 30)),
        text("5", usage=(1300, 5)),
    )
    provider = OpenAIProvider("gpt-4o-mini", base_url=server.url, tool_calling="native")
    provider.price_as = "openai"  # the scripted server serves a model the table knows
    out = io.StringIO()
    result = Agent(provider, tools=[add]).run("2+3?", on_event=TextPrinter(out))
    costs = [e.usage.cost for e in result.events if isinstance(e, ModelResponse)]
    tokens = [(e.usage.input_tokens, e.usage.output_tokens) for e in result.events if isinstance(e, ModelResponse)]
    assert costs == [pytest.approx(table("gpt-4o-mini", *t)) for t in tokens]
    assert result.cost == pytest.approx(sum(costs)) and result.usage.cost == result.cost
    assert f"cost {format_cost(result.cost)}" in out.getvalue()


def test_unknown_model_or_server_costs_none(server: ScriptedServer) -> None:
    server.reset()
    server.script(text("hi", usage=(100, 5)), text("hi", usage=(100, 5)))
    local = OpenAIProvider("gpt-4o-mini", base_url=server.url)  # not the OpenAI API: unknown
    assert Agent(local).run("hi").cost is None
    unknown = OpenAIProvider("no-such-model-xyz", base_url=server.url)
    unknown.price_as = "openai"
    result = Agent(unknown).run("hi")
    assert result.cost is None and result.usage.total_tokens == 105


def test_in_process_models_cost_nothing() -> None:
    class Local(Provider):
        in_process = True
        supports_native_tools = False
        model = "gpt-4o"  # a known name: still free, it runs here

        async def complete(self, request):
            return Completion("hello", usage=Usage(500, 20))

    result = Agent(Local()).run("hi")  # through the UnTooled layer
    assert result.cost == 0.0 and price(Local(), Usage(10, 1)) == 0.0


def test_widget_header_shows_cost_or_unknown(server: ScriptedServer) -> None:
    from agentnb.notebook.trace.widget import TraceWidget

    server.reset()
    server.script(text("hi", usage=(100, 5)))
    w = TraceWidget()
    Agent(OpenAIProvider("m", base_url=server.url)).run("hi", on_event=w)
    assert "cost <b>unknown</b>" in w.header_html


def test_import_agentnb_does_not_load_the_price_table() -> None:
    code = "import sys, agentnb, agentnb.control.cost; print('genai_prices' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tool_calls_helper_still_prices(server: ScriptedServer) -> None:
    server.reset()
    server.script(tool_calls(("add", {"a": 1, "b": 1})), text("2"))
    provider = OpenAIProvider("gpt-4o", base_url=server.url, tool_calling="native")
    provider.price_as = "openai"
    result = Agent(provider, tools=[add]).run("1+1")
    assert result.cost is not None and result.cost > 0
