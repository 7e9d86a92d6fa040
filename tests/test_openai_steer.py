"""OpenAIProvider(steer=...): a required call decoded token by token on a server, with the
in-process steering, from ``/v1/completions``'s streamed alternatives.

Against a small real HTTP server on 127.0.0.1 that plays a model (:class:`StepServer`): it
counts prompt tokens the same way on both endpoints for ChatML (so the template check passes),
and on ``/v1/completions`` it streams a fixed draft call one character-token at a time, with
alternatives, the way llama.cpp's servers stream ``logprobs``. The real llama-cpp-python server
is in tests/test_openai_text_servers.py.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fake_http import JsonHandler, Served

from agentnb import Agent, tool
from agentnb.errors import UserError
from agentnb.events import CallDecision, CallSteered, ConstraintDropped, ToolStarted
from agentnb.notebook.trace.notes import note_html
from agentnb.printer import format_event
from agentnb.providers import OpenAIProvider
from agentnb.providers.guidance.byteguide import ByteGuide
from agentnb.providers.guidance.constraint import grammar_for
from agentnb.providers.openai.decide import call_share, yes_no
from agentnb.providers.openai.logprobs import alternatives as _alternatives
from agentnb.providers.openai.steer import TOP, Steerer, choose
from agentnb.providers.openai.templates import TEMPLATES
from agentnb.testing import ScriptedServer
from agentnb.testing.server import text


@tool
def loan_payment(principal: float, years: int) -> float:
    """Monthly payment of a loan."""
    return round(principal / (12 * years), 2)


QUERY = "Monthly payment on a $250k loan over 30 years?"
#: What the fake model writes: the principal copied short, as SmolLM2 does ("250" for "$250k").
DRAFT = '{"name": "loan_payment", "arguments": {"principal": 250, "years": 30}}'
SHORT = DRAFT[: DRAFT.index("250") + 3]


def count(text: str) -> int:
    """The fake tokenizer's count: special tokens and words."""
    return len(re.findall(r"<\|[a-z_]+\|>|\S+", text))


#: ... and a call to the weather tool.
WEATHER = '{"name": "weather", "arguments": {"city": "Oslo"}}'


def model(written: str, zurich: bool = False) -> list[tuple[str, dict[str, float]]]:
    """The fake model's greedy continuation of ``written`` (the reply so far), a character per
    token, each with its alternatives: the draft's own character first, then a "0" or a "}".
    A conversation about "Zürich" gets the token ``""`` where the name starts (llama-cpp-python's
    text for part of a character written over several tokens)."""
    if zurich and written.endswith('"city": "'):
        return [("", {"": -0.1})]
    draft = next((d for d in (DRAFT, WEATHER) if d.startswith(written)), None)
    if draft is not None:
        rest = draft[len(written) :]
    elif written.startswith(SHORT) and written[len(SHORT) :].isdigit():
        rest = DRAFT[len(SHORT) :]  # once the number went on, the call goes on as drafted
    else:
        rest = ""
    out = []
    for ch in rest:
        top = {ch: -0.2, "0": -1.5, "}": -2.5}
        top[ch] = -0.2
        out.append((ch, dict(sorted(top.items(), key=lambda kv: -kv[1]))))
    return out


class StepServer(Served):
    """``/v1/chat/completions``: a prompt-token count (the template check), else the queued
    replies; ``/v1/completions``: a count, or the fake model's tokens streamed with
    ``logprobs`` (:func:`model`)."""

    def __init__(self, template: str = "chatml", form: str = "legacy") -> None:
        self.template = TEMPLATES[template]
        self.form = form
        #: A reply's first token and its alternatives, for one-token requests with ``logprobs``
        #: (the call-or-answer decision), or a function of the prompt that gives them; None: no
        #: log-probabilities there.
        self.first_token: Any = None
        self.chats: list[dict] = []
        self.completions: list[dict] = []
        self.replies: list[str] = []
        outer = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self.read_json()
                if not self.path.startswith("/v1/"):  # no tokenizer endpoint here (llama.cpp's /extras)
                    self.send_error(404)
                    return
                if self.path.endswith("/chat/completions"):
                    outer.chats.append(body)
                    if body.get("max_tokens") == 1:  # the template check
                        n = count(outer.template.render(body["messages"]))
                        self.send_json(outer.body("chat.completion", n, message={"role": "assistant", "content": "x"}))
                    elif body.get("stream"):
                        reply = outer.chunk("chat.completion.chunk", delta={"content": outer.replies.pop(0)})
                        self.send_sse([reply, outer.chunk("chat.completion.chunk", delta={}, finish_reason="stop")])
                    else:
                        content = outer.replies.pop(0)
                        self.send_json(
                            outer.body("chat.completion", 9, message={"role": "assistant", "content": content})
                        )
                    return
                outer.completions.append(body)
                if not body.get("stream"):
                    first = outer.first_token if body.get("logprobs") else None
                    first = first(body["prompt"]) if callable(first) else first
                    logprobs = outer.logprobs(max(first, key=first.get), first) if first else None
                    self.send_json(outer.body("text_completion", count(body["prompt"]), text="x", logprobs=logprobs))
                    return
                written = body["prompt"].split("<|im_start|>assistant\n")[-1]
                tokens = model(written, "Zürich" in body["prompt"])[: body["max_tokens"]]
                chunks = [outer.chunk("text_completion", text=t, logprobs=outer.logprobs(t, top)) for t, top in tokens]
                self.send_sse([*chunks, outer.chunk("text_completion", text="", finish_reason="length")])

        self.serve(Handler)

    def logprobs(self, token: str, top: dict[str, float]) -> dict:
        """One token's log-probabilities: llama-cpp-python's and vLLM's form, or llama-server's."""
        if self.form == "legacy":
            return {"tokens": [token], "top_logprobs": [top]}
        alternatives = [{"token": t, "logprob": v, "bytes": list(t.encode())} for t, v in top.items()]
        return {"content": [{"token": token, "logprob": top[token], "top_logprobs": alternatives}]}

    @staticmethod
    def body(kind: str, prompt_tokens: int, **choice: object) -> dict:
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1}
        return {"id": "x", "object": kind, "created": 0, "model": "m", "usage": usage,
                "choices": [{"index": 0, "finish_reason": "stop", **choice}]}  # fmt: skip

    @staticmethod
    def chunk(kind: str, **choice: object) -> dict:
        return {"id": "x", "object": kind, "created": 0, "model": "m",
                "choices": [{"index": 0, "finish_reason": None, **choice}]}  # fmt: skip


@pytest.fixture(params=["legacy", "content"])
def server(request):
    with StepServer(form=request.param) as s:
        yield s


def provider(url: str, **options) -> OpenAIProvider:
    options.setdefault("guidance_budget", None)  # the cost of steering: tests/test_openai_guidance_cost.py
    return OpenAIProvider("m", base_url=url, tool_calling="untooled", max_retries=0, timeout=20, **options)


def run(p: OpenAIProvider, query: str = QUERY):
    return Agent(p, [loan_payment], tool_choice="required", max_tool_calls=1).run(query)


def test_a_required_call_is_steered_onto_the_request_and_says_so(server):
    server.replies.append("About 694 a month.")
    r = run(provider(server.url))
    assert r.error is None and r.output == "About 694 a month."
    # the model wrote 250; steering took the alternative "0" three times along "$250k" -> 250000
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"principal": 250000, "years": 30}]
    steered = [e for e in r.events if isinstance(e, CallSteered)]
    assert len(steered) == 1
    e = steered[0]
    assert (e.name, e.changed, e.requests) == ("loan_payment", 3, 4)
    assert e.detail == "principal: '0' not ','; principal: '0' not ','; principal: '0' not ','"
    # the name and the first key were forced (not read); then "250", three changes, and the rest
    assert e.tokens == 3 + 1 + 1 + 1 + len(', "years": 30}}')
    # the template was checked once (a one-token chat and a one-token completion), then every
    # decoding request streamed alternatives, without a repetition penalty
    steps = [b for b in server.completions if b.get("stream")]
    assert len(steps) == 4 and all(b["logprobs"] == TOP and b["repeat_penalty"] == 1.0 for b in steps)
    assert [b.get("max_tokens") for b in server.chats] == [1, None]  # the check, then the answer
    assert "response_format" not in server.chats[1]
    # each request went on from the call written so far, in the server's template
    assert steps[1]["prompt"].endswith("<|im_start|>assistant\n" + SHORT + "0")
    assert format_event(e).strip() == (
        f"[0] m: call to loan_payment steered token by token in 4 requests; steering chose 3 of 21 tokens ({e.detail})"
    )
    assert "call steered" in note_html(e) and "loan_payment" in note_html(e)


def test_the_template_is_checked_once_per_provider(server):
    server.replies += ["A.", "B."]
    p = provider(server.url)
    run(p)
    run(p, "And a $250k loan over 30 years?")
    assert sum(b.get("max_tokens") == 1 for b in server.chats) == 1


def test_steer_false_asks_for_the_call_as_usual(server):
    server.replies += [DRAFT, "About 0.69 a month."]
    r = run(provider(server.url, steer=False))
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"principal": 250, "years": 30}]
    assert not server.completions and not any(isinstance(e, CallSteered) for e in r.events)
    assert "response_format" in server.chats[0]


def test_a_server_whose_token_counts_match_no_template_is_asked_as_usual():
    with StepServer("phi3") as s:  # the chat endpoint counts like phi3; chatml is the one named
        s.replies += [DRAFT, "A."]
        p = provider(s.url, chat_template="chatml")
        r = run(p)
        assert r.error is None and [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [
            {"principal": 250, "years": 30}
        ]
        assert not any(isinstance(e, CallSteered) for e in r.events)
        assert p._steering.works is False and "template" in p._steering.failure
        s.replies += [DRAFT, "B."]
        before = (len(s.chats), len(s.completions))
        run(p)  # not tried again: just the two chat requests of the run
        assert (len(s.chats), len(s.completions)) == (before[0] + 2, before[1])


def test_without_a_completions_endpoint_nothing_is_lost():
    # agentnb.testing's scripted server has no /v1/completions: the first request of the check
    # fails, before any chat request is spent on it
    with ScriptedServer() as s:
        s.script(text(DRAFT), text("Done."))
        r = run(provider(s.url))
        assert r.error is None and r.output == "Done."
        assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"principal": 250, "years": 30}]
        assert len(s.requests) == 2


def test_options_are_checked_at_construction():
    with pytest.raises(UserError, match="steer must be True, False or 'auto'"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", steer="yes")
    with pytest.raises(UserError, match="chat_template must be one of"):
        OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", chat_template="vicuna")


def test_choose_keeps_to_the_grammar_and_favours_copies():
    guide = ByteGuide(grammar_for([loan_payment], "call"))
    assert guide.forced() == '{"name": "loan_payment", "arguments": {"principal": '
    guide.take(guide.forced() + "25")
    written = '{"name": "loan_payment", "arguments": {"principal": 25'
    steer = Steerer("a $250k loan", [loan_payment])
    # the server's own token "}" is likelier, but "0" goes on along "250000"
    assert choose(guide, steer, written, ",", {",": -0.2, "0": -1.5}) == "0"
    # a token the grammar refuses is never taken, however likely ("x" is no digit, and the
    # call needs "years" before it closes)
    assert choose(guide, steer, written, "x", {"x": -0.1, "}": -0.2, ",": -3.0}) == ","
    assert choose(guide, steer, written, "x", {"x": -0.1, " a": -0.2}) is None
    # without a request to copy from, the likeliest allowed token wins
    assert choose(guide, Steerer("", [loan_payment]), written, ",", {",": -0.2, "0": -1.5}) == ","


def test_after_tool_results_a_call_the_envelope_writes_is_decoded_again_steered(server):
    # step 1 is decided here (a call, by the call share: no echo on this server, so no fits)
    # and steered; after its result the call share (0.99 >= 0.9) says "call", the envelope
    # picks the tool (it leaves loan_payment out), and the weather call it writes is decoded
    # again, steered; after the second result the share says "answer"
    results = [0]

    def first(prompt: str) -> dict:
        results[0] = prompt.count("Result of")
        return {1: SURE_CALL, 2: LEANS_TEXT}.get(results[0], LEANS_CALL)

    server.first_token = first
    server.replies += [WEATHER, '{"answer": "Done."}']
    r = Agent(provider(server.url), [loan_payment, weather], max_tool_calls=3).run(QUERY + " And the weather in Oslo?")
    assert r.error is None and r.output == "Done."
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [
        {"principal": 250000, "years": 30},
        {"city": "Oslo"},
    ]
    assert [e.name for e in r.events if isinstance(e, CallSteered)] == ["loan_payment", "weather"]
    decisions = [e for e in r.events if isinstance(e, CallDecision)]
    assert [e.action for e in decisions] == ["call", "call", "answer"]
    assert decisions[1].reason.startswith("after tool results, call share 0.99 >= 0.9")
    envelope = server.chats[1]["response_format"]["json_schema"]["schema"]
    assert "loan_payment" not in json.dumps(envelope) and "weather" in json.dumps(envelope)
    answer_only = server.chats[2]["response_format"]["json_schema"]["schema"]
    assert "anyOf" not in answer_only and "answer" in answer_only["properties"]


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


def test_a_character_the_stream_cannot_give_leaves_that_call_to_the_usual_request(server):
    server.replies += ['{"name": "weather", "arguments": {"city": "Zürich"}}', "Sunny.", DRAFT, "A."]
    p = provider(server.url)
    r = Agent(p, [weather], tool_choice="required", max_tool_calls=1).run("Weather in Zürich?")
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"city": "Zürich"}]
    assert not any(isinstance(e, CallSteered) for e in r.events) and "response_format" in server.chats[-2]
    # steering stays on for the next call
    r = run(p)
    assert [e.changed for e in r.events if isinstance(e, CallSteered)] == [3]


def test_steer_true_says_when_the_server_cannot():
    with ScriptedServer() as s:
        s.script(text(DRAFT), text("Done."))
        r = run(provider(s.url, steer=True))
        assert r.error is None and r.output == "Done."
        dropped = [e for e in r.events if isinstance(e, ConstraintDropped)]
        assert [e.mechanism for e in dropped] == ["token-by-token steering"]
        assert "response_format" in dropped[0].reason


def test_alternatives_in_the_chat_form_are_read_too():
    assert _alternatives([{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -1.0}]) == {"a": -0.5, "b": -1.0}
    assert _alternatives({"a": -0.5}) == {"a": -0.5} and _alternatives(None) == {}


#: A first token that starts a call with some probability (a share of about 0.052) ...
LEANS_CALL = {"The": -0.1, '{"': -3.0, **{f"w{i}": -6.0 - i for i in range(18)}}
#: ... one that all but starts a call (a share of 0.99) ...
SURE_CALL = {'{"': -0.01, "The": -5.0, **{f"w{i}": -8.0 - i for i in range(18)}}
#: ... and one where no call-starting token is among the 20 likeliest (a share under 1e-4).
LEANS_TEXT = {"The": -0.1, "I": -1.0, **{f"w{i}": -6.0 - i for i in range(18)}}


def test_under_auto_the_server_decides_as_in_process_and_says_why(server):
    # no echo on this server, so no fits: the call share decides (as in-process without a ranking)
    server.first_token = LEANS_CALL
    server.replies.append("About 1389 a month.")
    r = Agent(provider(server.url), [loan_payment], max_tool_calls=1).run(QUERY)
    assert r.error is None and r.output == "About 1389 a month."
    [decision] = [e for e in r.events if isinstance(e, CallDecision)]
    assert decision.action == "call" and 0.04 < decision.call_share < 0.06
    assert "call share" in decision.reason and "server logprobs" in decision.reason
    # the call was decoded steered, with no envelope request at all
    assert [e.arguments for e in r.events if isinstance(e, ToolStarted)] == [{"principal": 250000, "years": 30}]
    assert not any("response_format" in b for b in server.chats[:-1])


def test_under_auto_an_answer_verdict_leaves_the_tools_out_of_the_envelope(server):
    server.first_token = LEANS_TEXT
    server.replies.append('{"answer": "Ask a bank."}')
    r = Agent(provider(server.url), [loan_payment], max_tool_calls=1).run("Should I take a mortgage?")
    assert r.error is None and r.output == "Ask a bank." and r.tool_calls == 0
    [decision] = [e for e in r.events if isinstance(e, CallDecision)]
    assert decision.action == "answer" and decision.call_share < 1e-4
    assert not any(b.get("stream") for b in server.completions)  # nothing decoded token by token
    schema = server.chats[-1]["response_format"]["json_schema"]["schema"]
    assert "anyOf" not in schema and "answer" in schema["properties"]
    assert not [k for b in server.chats for k in b if k.startswith("untooled")]


def test_call_share_and_yes_no_from_alternatives():
    assert call_share(LEANS_CALL) == pytest.approx(0.052, abs=0.001)
    assert call_share(LEANS_TEXT) < 1e-4 and call_share({}) == 0.0
    assert yes_no({"Yes": -0.1, " no": -2.5}) == pytest.approx(2.4, abs=1e-6)
