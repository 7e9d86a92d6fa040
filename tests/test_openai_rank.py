"""OpenAIProvider(rank_tools=...): the tool picked first from a server's prompt log-probabilities.

Against small real HTTP servers on 127.0.0.1: one that answers ``/v1/completions`` with echoed
log-probabilities the way vLLM does (aligned) or llama-cpp-python's server does (shifted by a
token), and agentnb.testing's scripted server, which has no such endpoint. The real
llama-cpp-python server is in tests/test_openai_text_servers.py.
"""

from __future__ import annotations

import pytest
from fake_http import JsonHandler, Served

from agentnb import Agent, tool
from agentnb.errors import UserError
from agentnb.events import CallDecision, ConstraintDropped, ToolStarted
from agentnb.providers import OpenAIProvider
from agentnb.providers.openai.rank import PROBE, TOP_K, query_logprob
from agentnb.testing import ScriptedServer
from agentnb.testing.server import text


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def fake_logprobs(prompt: str, convention: str) -> dict:
    """The echoed prompt, word by word, plus one generated token, with log-probabilities from a
    fake model: each word is its position's top choice at -0.5, except the query's words (after
    the [[pick]] text's last quote), which score -1.0 under a head that mentions "Multiply" and
    -5.0 otherwise (a rival " zzz" at -3.0 is then on top). ``aligned``: each token carries its
    own value and alternatives (vLLM); ``shifted``: each carries the next token's alternatives
    plus its own junk value (llama-cpp-python 0.3.36 without a BOS token)."""
    import re

    tokens = [*re.findall(r"\s*\S+", prompt), "!"]
    offsets = [0]
    for t in tokens[:-1]:
        offsets.append(offsets[-1] + len(t))
    cut = prompt.rfind('"') + 1 if '"' in prompt else len(prompt)
    query = -1.0 if "Multiply" in prompt[:cut] else -5.0
    true = [query if cut <= o < len(prompt) else -0.5 for o in offsets]
    # best first, as servers list them
    tops = [
        dict(sorted({t: v, " zzz": -3.0}.items(), key=lambda kv: -kv[1])) for t, v in zip(tokens, true, strict=True)
    ]
    if convention == "aligned":
        values: list = [None, *true[1:]]
        shown: list = [None, *tops[1:]]
    elif convention == "unreadable":  # values, but no alternatives to tell the alignment by
        values, shown = [None, *true[1:]], [None] * len(tokens)
    else:
        values = [None] + [-7.0] * (len(tokens) - 1)
        shown = [None] + [{**tops[i + 1], tokens[i]: -7.0} for i in range(1, len(tokens) - 1)] + [{"!": -7.0}]
    return {"tokens": tokens, "text_offset": offsets, "token_logprobs": values, "top_logprobs": shown}


class EchoServer(Served):
    """``/v1/completions``: the prompt echoed with log-probabilities (:func:`fake_logprobs`).
    ``/v1/chat/completions``: the queued replies, in order."""

    def __init__(self, convention: str = "aligned") -> None:
        self.convention = convention
        self.completions: list[dict] = []
        self.chats: list[dict] = []
        self.replies: list[str] = []
        outer = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self.read_json()
                if not self.path.startswith("/v1/"):  # no tokenizer endpoint here (llama.cpp's /extras)
                    self.send_error(404)
                    return
                if self.path.endswith("/completions") and not self.path.endswith("/chat/completions"):
                    outer.completions.append(body)
                    prompt = body["prompt"]
                    logprobs = fake_logprobs(prompt, convention)
                    choice = {"index": 0, "text": prompt + "!", "logprobs": logprobs, "finish_reason": "length"}
                    payload = {"id": "c", "object": "text_completion", "created": 0, "model": "m", "choices": [choice]}
                else:
                    outer.chats.append(body)
                    content = outer.replies.pop(0)
                    if body.get("stream"):  # UnTooled streams from the provider: SSE
                        head = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m"}
                        deltas = [({"role": "assistant", "content": content}, None), ({}, "stop")]
                        chunks = [
                            {**head, "choices": [{"index": 0, "delta": d, "finish_reason": f}]} for d, f in deltas
                        ]
                        self.send_sse(chunks)
                        return
                    message = {"role": "assistant", "content": content}
                    choice = {"index": 0, "message": message, "finish_reason": "stop"}
                    payload = {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice]}
                self.send_json(payload)

        self.serve(Handler)


@pytest.fixture(params=["aligned", "shifted"])
def echo(request):
    with EchoServer(request.param) as s:
        yield s


def provider(url: str, **options) -> OpenAIProvider:
    # steering (tests/test_openai_steer.py) would add its own /v1/completions requests
    options.setdefault("steer", False)
    options.setdefault("guidance_budget", None)  # the cost of ranking: tests/test_openai_guidance_cost.py
    return OpenAIProvider("m", base_url=url, tool_calling="untooled", max_retries=0, timeout=20, **options)


def scoring_requests(echo: EchoServer) -> list[dict]:
    return [b for b in echo.completions if b["prompt"] != PROBE]


@pytest.mark.parametrize("rank_tools", [True, "auto"])
def test_the_best_ranked_tool_is_alone_in_the_envelope_and_the_ranking_is_an_event(echo, rank_tools):
    echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42."]
    p = provider(echo.url, rank_tools=rank_tools)
    r = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("What is 6 times 7?")
    assert r.error is None and r.output == "42."
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"a": 6, "b": 7}]
    # one probe, then one scoring request per tool: the query after each tool's [[pick]] text, echoed
    assert [b["prompt"] for b in echo.completions[:1]] == [PROBE]
    scored = scoring_requests(echo)
    assert len(echo.completions) == 3 and len(scored) == 2 and all(b["echo"] for b in echo.completions)
    assert all(b["prompt"].endswith('"What is 6 times 7?') for b in scored)
    # a shifted server is asked for the next token's alternatives, to read each token's own value
    assert {b["logprobs"] for b in scored} == {1 if echo_convention(echo) == "aligned" else TOP_K}
    schema = echo.chats[0]["response_format"]["json_schema"]["schema"]
    assert "anyOf" not in schema and schema["properties"]["name"] == {"const": "mul"}
    decisions = [e for e in r.events if isinstance(e, CallDecision)]
    assert len(decisions) == 1 and decisions[0].tool == "mul"
    # the query's four tokens after the quote (the generated token left out; the same either way):
    # -4 and -20 in all, reported per token as in-process (agentnb.providers.guidance.rank)
    assert decisions[0].ranking == (("mul", -1.0), ("add", -5.0))
    # UnTooled's hints (the pick texts, the results after a call) never reach the server
    assert not [k for b in echo.chats for k in b if k.startswith("untooled")]
    # the same request again: the scores are remembered, and the probe is not sent again
    echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42."]
    Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("What is 6 times 7?")
    assert len(echo.completions) == 3
    echo.replies += ['{"name": "add", "arguments": {"a": 6, "b": 7}}', "13."]
    Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("And 6 plus 7?")
    assert len(echo.completions) == 5 and sum(b["prompt"] == PROBE for b in echo.completions) == 1


def echo_convention(echo: EchoServer) -> str:
    return echo.convention


def test_without_rank_tools_or_with_one_tool_nothing_is_scored(echo):
    echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42.", '{"name": "mul", "arguments": {}}']
    p = provider(echo.url, rank_tools=False)
    r = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("6 times 7?")
    assert r.error is None and not echo.completions
    assert "anyOf" in echo.chats[0]["response_format"]["json_schema"]["schema"]
    Agent(provider(echo.url), [mul], tool_choice="required", max_tool_calls=1).run("6 x 7?")
    assert not echo.completions


def test_under_auto_tool_choice_nothing_is_scored(echo):
    echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42."]
    r = Agent(provider(echo.url), [add, mul], max_tool_calls=1).run("6 times 7?")
    assert r.error is None and not echo.completions


def test_an_echo_that_follows_no_convention_is_not_used():
    with EchoServer("unreadable") as echo:
        echo.replies += ['{"name": "mul", "arguments": {"a": 6, "b": 7}}', "42."]
        r = Agent(provider(echo.url, rank_tools=True), [add, mul], tool_choice="required", max_tool_calls=1).run(
            "6 times 7?"
        )
        assert r.error is None and r.output == "42."
        dropped = [e for e in r.events if isinstance(e, ConstraintDropped)]
        assert len(dropped) == 1 and "neither" in dropped[0].reason
        assert [b["prompt"] for b in echo.completions] == [PROBE]  # the probe only
        assert "anyOf" in echo.chats[0]["response_format"]["json_schema"]["schema"]


def test_a_server_without_prompt_logprobs_is_asked_once_and_every_tool_stays():
    with ScriptedServer() as server:  # no /v1/completions: 404
        p = provider(server.url, rank_tools=True)
        server.script(text('{"name": "mul", "arguments": {"a": 6, "b": 7}}'), text("42."))
        r = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("6 times 7?")
        assert r.error is None and r.output == "42."
        dropped = [e for e in r.events if isinstance(e, ConstraintDropped)]
        assert len(dropped) == 1 and dropped[0].mechanism == "tool ranking by prompt logprobs"
        assert "anyOf" in server.bodies[0]["response_format"]["json_schema"]["schema"]
        server.script(text('{"name": "add", "arguments": {"a": 1, "b": 2}}'), text("3."))
        again = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run("1 plus 2?")
        assert not any(isinstance(e, ConstraintDropped) for e in again.events)
        assert sum(r.path.endswith("/completions") and "chat" not in r.path for r in server.requests) == 0


def test_by_default_a_server_without_prompt_logprobs_costs_one_request_and_no_event():
    with ScriptedServer() as server:
        p = provider(server.url)  # rank_tools="auto"
        asked: list[str] = []
        echo = p._ranker._echo

        async def counted(prov, prompt, top):
            asked.append(prompt)
            return await echo(prov, prompt, top)

        p._ranker._echo = counted  # the scripted server does not record the 404s it answers
        for query in ("6 times 7?", "1 plus 2?"):
            server.script(text('{"name": "mul", "arguments": {"a": 6, "b": 7}}'), text("42."))
            r = Agent(p, [add, mul], tool_choice="required", max_tool_calls=1).run(query)
            assert r.error is None and r.output == "42."
            assert not any(isinstance(e, (ConstraintDropped, CallDecision)) for e in r.events)
        assert asked == [PROBE] and p._ranker.works is False  # the one probe, answered 404


def test_rank_tools_takes_true_false_or_auto():
    with pytest.raises(UserError, match="rank_tools"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", rank_tools="yes")


def test_shifted_reading_recovers_a_value_a_same_text_twin_overwrote():
    # measured on llama-cpp-python 0.3.36 (SmolLM2, "10, 12, 23"): after ",", the space token is
    # the top choice (in-process: -0.13), but a less likely token that also reads " " came later
    # in its top 400 and overwrote it (-10.87), so " -" looked best
    data = {
        "tokens": ["1", "2", ",", " ", "2"],
        "text_offset": [0, 1, 2, 3, 4],
        "top_logprobs": [
            None,
            {",": -0.5, ".": -1.5},
            {" ": -10.87, " -": -2.5, " and": -3.0, ",": -0.4},  # "," is the token's own entry
            {"2": -1.8, "1": -2.0},
            {},
        ],
    }
    value = query_logprob(data, head=3, end=5, shifted=True)
    # " ": at most what " -" and " and" leave of the mass, at least " -": log(1 - e^-2.5 - e^-3) = -0.1414
    assert value == pytest.approx(-0.1414 - 1.8, abs=1e-3)
    # no overwrite: read as it is; not among the alternatives: the least of them
    assert query_logprob(data, head=4, end=5, shifted=True) == -1.8
    missing = {**data, "tokens": ["1", "2", ",", " x", "2"]}
    # (the twin's -10.87 is the value of a token among the alternatives: the least is an upper bound)
    assert query_logprob(missing, head=3, end=4, shifted=True) == -10.87
