"""Cost-aware guidance on a server, and usage counted where the server reports none.

The fast part checks the cost model, the event and its views; the slow part runs against a
real llama-cpp-python server serving the embedded SmolLM2-135M (started here on 127.0.0.1,
always stopped), whose streams carry no usage and whose log-probabilities are slow.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import urllib.request

import pytest
from server_process import free_port, llama_cpp_server, running

from agentnb import Agent, tool
from agentnb.errors import UserError
from agentnb.events import CallSteered, GuidanceSkipped, ModelResponse, event_from_dict, event_to_dict
from agentnb.messages import UserMessage
from agentnb.notebook.trace.notes import skipped_html
from agentnb.printer import format_event
from agentnb.providers import OpenAIProvider, Request
from agentnb.providers.openai.cost import FLOOR, GuidanceCost, GuidanceTimeError

SETTINGS = {"max_tokens": 60, "temperature": 0.0, "seed": 0}


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: the city name
    """
    return f"It is 18 C and sunny in {city}."


# -- the cost model -------------------------------------------------------------------------


def test_a_step_is_skipped_only_once_its_price_is_known_and_past_the_budget() -> None:
    cost = GuidanceCost("auto")
    cost.begin_step()
    assert cost.skip("tool ranking", cost.estimate(echo=500), "x") is None  # price unknown: it runs
    cost.observe("echo", tokens=50, seconds=1.0)  # 20 ms per echoed token
    cost.begin_step()
    assert cost.skip("tool ranking", cost.estimate(echo=200), "x") is None  # 4 s < FLOOR
    event = cost.skip("tool ranking", cost.estimate(echo=400), "2 scoring requests")
    assert isinstance(event, GuidanceSkipped) and event.estimate == 8.0 and event.budget == FLOOR
    assert "20 ms per echoed token" in event.reason and "2 scoring requests" in event.reason
    cost.observe("plain", tokens=1, seconds=30.0)  # a slow plain request: the guidance may take as long
    assert cost.skip("tool ranking", cost.estimate(echo=400), "x") is None
    assert GuidanceCost(None).skip("s", 1e9, "x") is None
    fixed = GuidanceCost(0.5)
    fixed.observe("ask", tokens=1, seconds=1.0)
    fixed.begin_step()
    assert fixed.skip("yes/no", fixed.estimate(ask=1), "one request") is not None


def test_the_spending_of_a_step_counts_against_its_budget() -> None:
    cost = GuidanceCost(2.0)
    cost.begin_step()
    cost.observe("echo", tokens=100, seconds=1.5)
    assert cost.skip("steering", cost.estimate(echo=40), "a call") is not None  # 1.5 spent + 0.6 > 2
    cost.begin_step()
    assert cost.skip("steering", cost.estimate(echo=40), "a call") is None


def test_a_guidance_request_runs_under_what_is_left_of_the_budget() -> None:
    # A stand-in for a slow server's request (a long echo with log-probabilities): it is cut
    # off when the step's budget runs out, its time counts, and it prices its kind.
    cost = GuidanceCost(0.3)
    cost.begin_step()
    cost.names = "slow-server"
    started = asyncio.Event()

    async def slow_echo() -> str:
        started.set()
        await asyncio.Event().wait()  # never answers
        return "never"

    async def run() -> GuidanceTimeError:
        with pytest.raises(GuidanceTimeError) as caught, cost.timing("echo") as counts:
            counts["tokens"] = 10
            await cost.within("scoring by echoed log-probabilities", slow_echo())
        return caught.value

    error = asyncio.run(run())
    assert started.is_set()
    event = error.event
    assert isinstance(event, GuidanceSkipped) and event.provider == "slow-server" and event.budget == 0.3
    assert event.step == "scoring by echoed log-probabilities" and event.reason.startswith("cut off after 0.3 s")
    assert 0.29 <= cost.spent < 0.5  # the time it took counts against the step, once (not 0.6)
    assert cost.estimate(echo=10) is not None and cost.estimate(echo=10) >= 0.29  # and prices an echo
    # nothing left: the next request is never sent (its coroutine is closed, never awaited)
    sent = []

    async def never_sent() -> None:
        sent.append(1)

    with pytest.raises(GuidanceTimeError, match="not sent"):
        asyncio.run(cost.within("next-token alternatives", never_sent()))
    assert sent == []
    # a new step starts with the whole budget again; a request no timing block counts is
    # counted by within itself; without a budget nothing is cut
    cost.begin_step()
    asyncio.run(cost.within("finding the server's chat template", asyncio.sleep(0.05)))
    assert 0.05 <= cost.spent < 0.3
    cost.begin_step()
    assert asyncio.run(cost.within("x", asyncio.sleep(0, "done"))) == "done"
    assert asyncio.run(GuidanceCost(None).within("x", asyncio.sleep(0.01, "done"))) == "done"


@pytest.mark.parametrize("bad", [-1, "fast", True, [1]])
def test_a_bad_budget_is_a_user_error(bad: object) -> None:
    with pytest.raises(UserError, match="guidance_budget"):
        OpenAIProvider("m", base_url="http://127.0.0.1:1/v1", guidance_budget=bad)


def test_the_event_is_shown_saved_and_escaped() -> None:
    event = GuidanceSkipped(1, "smollm2", "tool ranking", "~40 s <script>x</script>", 40.0, 5.0)
    assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event
    line = format_event(event)
    assert line is not None and "skipped tool ranking" in line and "~40 s" in line
    html = skipped_html(event)
    assert "<script>" not in html and "&lt;script&gt;" in html and "tool ranking" in html


# -- against llama-cpp-python ---------------------------------------------------------------


@pytest.fixture(scope="module")
def llama_url():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (./dev setup builds it)")
    port = free_port()
    with running(llama_cpp_server(port), f"http://127.0.0.1:{port}/v1") as url:
        yield url


def server_count(url: str, text: str) -> int:
    body = json.dumps({"input": text}).encode()
    root = url[: -len("/v1")]
    req = urllib.request.Request(root + "/extras/tokenize/count", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as reply:
        return int(json.load(reply)["count"])


@pytest.mark.slow
def test_llama_cpp_guidance_past_its_budget_is_skipped_and_said(llama_url: str) -> None:
    # A zero budget holds: no guidance request is sent at all (not even the ones that would
    # measure a price), each guidance step that would have run says so, and the step still
    # ends in a reply of the plain route.
    p = OpenAIProvider("smollm2", base_url=llama_url, tool_calling="untooled", settings=SETTINGS, timeout=300,
                       guidance_budget=0.0)  # fmt: skip
    p._cost.observe("stream", tokens=10, seconds=0.5)  # as if a call had been steered before
    r = Agent(p, [get_weather], max_tool_calls=1).run("What is the weather in Paris?")
    assert r.error is None, r.error
    skipped = [e for e in r.events if isinstance(e, GuidanceSkipped)]
    steps = {e.step for e in skipped}
    assert steps and steps <= {"finding the server's chat template", "token-by-token steering"}, steps
    assert all(e.budget == 0 for e in skipped)
    assert all("not sent" in e.reason or "ms per streamed token" in e.reason for e in skipped), skipped
    assert p._cost.spent == 0.0 and not p._cost.known("ask") and not p._cost.known("echo")
    assert not any(isinstance(e, CallSteered) for e in r.events)
    assert not any(e.kind == "call_decision" for e in r.events)


@pytest.mark.slow
def test_llama_cpp_default_guidance_holds_its_budget(llama_url: str) -> None:
    # The defaults on a fresh provider: whatever the guidance does in the first step (measure,
    # decide, rank, steer, or skip what its measured prices say would not fit), the time its
    # requests took stays within the step's budget (5 s: no plain request was timed yet).
    p = OpenAIProvider("smollm2", base_url=llama_url, tool_calling="untooled", settings=SETTINGS, timeout=300)
    cost, steps = p._cost, []
    begin = cost.begin_step

    def each_step() -> None:  # what the step before spent, and the budget it had
        steps.append((cost.spent, cost.limit()))
        begin()

    cost.begin_step = each_step  # type: ignore[method-assign]
    r = Agent(p, [get_weather], max_tool_calls=1).run("What is the weather in Paris?")
    assert r.error is None, r.error
    steps.append((cost.spent, cost.limit()))
    assert len(steps) >= 2 and steps[0] == (0.0, FLOOR)  # (steps[0]: before the first step)
    assert all(spent <= limit + 0.5 for spent, limit in steps[1:]), steps


@pytest.mark.slow
def test_llama_cpp_steered_calls_and_streams_report_usage(llama_url: str) -> None:
    # steered: tool_choice="required", one tool, no budget: the call is decoded token by token
    p = OpenAIProvider("smollm2", base_url=llama_url, tool_calling="untooled", settings=SETTINGS, timeout=300,
                       guidance_budget=None)  # fmt: skip
    request = Request([UserMessage("What is the weather in Paris?")], [get_weather], tool_choice="required")
    done = asyncio.run(p.untooled().complete(request))
    assert any(isinstance(e, CallSteered) for e in done.events)
    steered = next(e for e in done.events if isinstance(e, CallSteered))
    assert done.usage.input_tokens > 50 and 0 < done.usage.output_tokens <= steered.tokens + 30
    # a streamed reply (no steering): llama-cpp-python sends no usage; counted by its tokenizer
    q = OpenAIProvider("smollm2", base_url=llama_url, tool_calling="untooled", settings=SETTINGS, timeout=300,
                       steer=False)  # fmt: skip
    r = Agent(q, [get_weather], max_tool_calls=1).run("What is the weather in Paris?", stream=True)
    assert r.error is None, r.error
    responses = [e for e in r.events if isinstance(e, ModelResponse)]
    assert responses and all(e.usage.input_tokens > 0 and e.usage.output_tokens > 0 for e in responses)
    assert r.usage.total_tokens == sum(e.usage.total_tokens for e in responses) > 0
    answer = r.messages[-1].content
    assert isinstance(answer, str) and answer
    # the last reply was the envelope {"answer": ...}: its count is the tokenizer's, not a guess
    assert responses[-1].usage.output_tokens >= server_count(llama_url, answer)


# -- who is asked to count tokens -----------------------------------------------------------


class _Client:
    """The parts of the SDK client the token counter uses, recording what it is asked."""

    def __init__(self, owned_by: str, count: int = 7) -> None:
        self.calls: list[tuple[str, str]] = []
        self.owned_by, self.count = owned_by, count
        self.models = self

    def with_options(self, **_: object) -> _Client:
        return self

    async def list(self) -> object:
        self.calls.append(("GET", "/v1/models"))
        model = type("Model", (), {"owned_by": self.owned_by})()
        return type("Page", (), {"data": [model]})()

    async def post(self, url: str, *, body: dict, cast_to: object) -> object:
        import httpx

        self.calls.append(("POST", url))
        return httpx.Response(200, json={"count": self.count})


class _Provider:
    def __init__(self, server: str | None, owned_by: str = "vllm") -> None:
        self.server, self.base_url, self.model = server, "http://127.0.0.1:9/v1", "m"
        self.client = _Client(owned_by)
        self._cost = GuidanceCost(None)


@pytest.mark.parametrize(
    ("server", "owned_by", "asked"),
    [
        ("ollama", "me", False),  # a named server that is not llama-cpp-python: never asked
        (None, "vllm", False),  # an unnamed server that does not say it is llama-cpp-python
        ("llamacpp", "vllm", True),  # the llamacpp: profile
        (None, "me", True),  # llama-cpp-python's model list says so
    ],
)
def test_only_a_llama_cpp_server_is_asked_to_count_tokens(server: str | None, owned_by: str, asked: bool) -> None:
    from agentnb.providers.openai.usage import TokenCounter

    p, counter = _Provider(server, owned_by), TokenCounter()
    counted = [asyncio.run(counter.count(p, "some text")) for _ in range(2)]
    posts = [c for c in p.client.calls if c[0] == "POST"]
    if asked:
        assert counted == [7, 7] and posts == [("POST", "http://127.0.0.1:9/extras/tokenize/count")] * 2
    else:
        assert counted == [None, None] and posts == []
    # the model list is read at most once per provider, and only for a server not named
    assert p.client.calls.count(("GET", "/v1/models")) == (1 if server is None else 0)


def test_a_llamacpp_spec_names_its_server() -> None:
    from agentnb.providers.spec import build_one

    assert build_one("llamacpp:smollm2").server == "llamacpp"
    assert build_one("ollama:qwen2.5").server == "ollama"
    assert build_one("openai:gpt-4o-mini", api_key="sk-test").server is None
