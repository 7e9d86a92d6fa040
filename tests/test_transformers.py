"""TransformersProvider mechanics on a tiny random Llama: decoding, streaming, constraints, cache."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")

from agentnb import Agent, tool
from agentnb.errors import MissingDependencyError, UserError
from agentnb.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentnb.providers.base import Completion, OutputConstraint, Request, TextChunk
from agentnb.providers.guidance.constraint import bound_schema, grammar_for
from agentnb.providers.hf import TransformersProvider
from agentnb.providers.untooled import UnTooled
from agentnb.providers.untooled.parse import parse_reply
from agentnb.tools import Tool

sys.path.insert(0, str(Path(__file__).parent))
from tiny_model import build_tiny


@tool
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius", days: int = 1) -> str:
    """Current weather for a city.

    Args:
        city: the city name
        unit: temperature unit
        days: forecast days
    """
    return f"Sunny in {city}"


@tool
def add(a: float, b: float, tags: list[str] | None = None) -> float:
    """Add two numbers."""
    return a + b


TOOLS = (get_weather, add)


@pytest.fixture(scope="session")
def tiny() -> tuple[object, object]:
    return build_tiny()


@pytest.fixture
def provider(tiny: tuple[object, object]) -> TransformersProvider:
    model, tokenizer = tiny
    return TransformersProvider(model, tokenizer, max_new_tokens=24)


def ask(provider: TransformersProvider, request: Request) -> Completion:
    return asyncio.run(provider.complete(request))


def test_chat_template_and_usage(provider: TransformersProvider) -> None:
    messages = [SystemMessage("sys"), UserMessage("hi")]
    ids = provider.encode(messages)
    text = provider.tokenizer.decode(ids)
    assert text == "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    completion = ask(provider, Request(messages))
    assert completion.usage.input_tokens == len(ids)
    assert 1 <= completion.usage.output_tokens <= 24
    assert completion.finish_reason in ("stop", "length")


def test_greedy_is_deterministic_and_options_apply(provider: TransformersProvider) -> None:
    request = Request([UserMessage("hello")])
    assert ask(provider, request).text == ask(provider, request).text
    short = ask(provider, Request([UserMessage("hello")], settings={"max_new_tokens": 3}))
    assert short.usage.output_tokens <= 3
    sampled = {
        ask(provider, Request([UserMessage("hello")], settings={"temperature": 1.0, "seed": s})).text for s in range(4)
    }
    assert len(sampled) > 1
    with pytest.raises(UserError, match="unknown generation settings"):
        ask(provider, Request([UserMessage("hello")], settings={"temprature": 1}))


def test_streaming_yields_text_then_the_completion(provider: TransformersProvider) -> None:
    async def collect() -> list[object]:
        return [item async for item in provider.stream(Request([UserMessage("stream please")]))]

    items = asyncio.run(collect())
    chunks = [i.text for i in items if isinstance(i, TextChunk)]
    assert isinstance(items[-1], Completion)
    assert len(chunks) > 1
    assert "".join(chunks) == items[-1].text


def test_bounded_schema_keeps_validity() -> None:
    schema = bound_schema(add.parameters)
    assert schema["properties"]["tags"]["anyOf"][0]["maxItems"] == 32
    assert schema["properties"]["tags"]["anyOf"][0]["items"]["maxLength"] == 200
    assert bound_schema({"type": "string", "enum": ["a"]}) == {"type": "string", "enum": ["a"]}
    assert "start: call" in grammar_for(TOOLS, "call") and "text" not in grammar_for(TOOLS, "call")
    assert grammar_for((), "any").startswith("start: text")


@pytest.mark.parametrize("choice", ["required", "auto", "add"])
def test_constrained_output_always_parses_and_validates(provider: TransformersProvider, choice: str) -> None:
    """Sampling from a random model is the worst case: every call must still be valid."""
    constraint = OutputConstraint(TOOLS, choice)
    calls = texts = 0
    for seed in range(12):
        settings = {"temperature": 1.0, "seed": seed, "max_new_tokens": 400}
        if choice == "auto":  # make both branches happen
            settings["call_threshold"] = 0.0 if seed % 2 else 1.0
        reply = ask(provider, Request([UserMessage(f"request {seed}")], settings=settings, constraint=constraint)).text
        assert reply
        _, parsed = parse_reply(reply, [t.name for t in TOOLS], strict=True)
        if reply[0] in "{[":
            (call,) = parsed
            tool_ = {t.name: t for t in TOOLS}[call.name]
            assert call.parse_error is None and tool_.validate(call.arguments) == []
            assert choice != "add" or call.name == "add"
            assert list(json.loads(reply)) == ["name", "arguments"]
            calls += 1
        else:
            assert choice == "auto" and not parsed and not reply[0].isspace()
            texts += 1
    assert calls > 0 and (choice != "auto" or texts > 0)


@tool
def note(text: str, tags: list[str]) -> str:
    """Keep a note."""
    return text


def test_a_call_is_finished_even_when_the_budget_is_tight(provider: TransformersProvider) -> None:
    """Near the end of max_new_tokens the call is closed, so a random model's long strings still parse."""
    constraint = OutputConstraint((note,), "required")

    def replies(reserve: int) -> list[str]:
        out = []
        for seed in range(8):
            settings = {"temperature": 1.0, "seed": seed, "max_new_tokens": 40, "closing_reserve": reserve}
            request = Request([UserMessage(f"note {seed}")], settings=settings, constraint=constraint)
            completion = ask(provider, request)
            assert completion.usage.output_tokens <= 40 + reserve
            out.append(completion.text or "")
        return out

    cut = [r for r in replies(0) if not r.endswith("}")]
    assert cut, "without closing, some replies should run out of budget (else this test proves nothing)"
    for reply in replies(16):
        call = json.loads(reply)
        assert note.validate(call["arguments"]) == []


def test_copy_bias_keeps_values_on_the_request(provider: TransformersProvider) -> None:
    """With a strong copy bias even a random model copies its string argument from the request."""
    source = "weather in Zanzibar please"
    constraint = OutputConstraint((get_weather,), "required")

    def city(bias: float) -> str:
        settings = {"copy_bias": bias, "max_new_tokens": 200}
        reply = ask(provider, Request([UserMessage(source)], settings=settings, constraint=constraint)).text
        return json.loads(reply or "")["arguments"]["city"]

    copied = city(50.0)
    assert copied.strip() and (source.startswith(copied) or f" {copied}" in source)  # a span from a word start
    assert city(0.0) not in source  # the random model alone writes noise


def test_prose_that_loops_is_stopped(provider: TransformersProvider) -> None:
    """A random model's greedy prose repeats itself; the reply stops when a run comes back."""
    request = Request([UserMessage("hello")], settings={"max_new_tokens": 300, "loop_window": 0})
    endless = ask(provider, request)
    assert endless.usage.output_tokens == 300 and endless.finish_reason == "length"
    request = Request([UserMessage("hello")], settings={"max_new_tokens": 300, "loop_window": 8})
    stopped = ask(provider, request)
    assert stopped.finish_reason == "repetition" and stopped.usage.output_tokens < 300
    assert endless.text and stopped.text and endless.text.startswith(stopped.text)


def test_none_choice_gives_text_only(provider: TransformersProvider) -> None:
    for seed in range(4):
        settings = {"temperature": 1.0, "seed": seed}
        reply = ask(
            provider, Request([UserMessage("x")], settings=settings, constraint=OutputConstraint(TOOLS, "none"))
        )
        assert reply.text and reply.text[0] not in "{[" and not reply.text[0].isspace()


def test_parallel_constraint_allows_an_array(provider: TransformersProvider) -> None:
    seen_array = False
    for seed in range(10):
        settings = {"temperature": 1.0, "seed": seed, "max_new_tokens": 600}
        reply = ask(
            provider,
            Request([UserMessage("x")], settings=settings, constraint=OutputConstraint(TOOLS, "required", True)),
        )
        _, calls = parse_reply(reply.text or "", ["get_weather", "add"], strict=True)
        assert calls and all(c.parse_error is None for c in calls)
        seen_array |= (reply.text or "").startswith("[")
    assert seen_array


def growing_conversation(depth: int) -> list:
    messages: list = [SystemMessage("You call tools."), UserMessage("weather in many cities")]
    for i in range(depth):
        call = ToolCall(f"c{i}", "get_weather", {"city": f"City{i}"})
        messages += [AssistantMessage(None, (call,)), ToolMessage(call.id, call.name, f"Sunny in City{i}")]
    return messages


def test_prefix_cache_gives_the_same_tokens_as_no_reuse(tiny: tuple[object, object]) -> None:
    model, tokenizer = tiny
    reuse = UnTooled(TransformersProvider(model, tokenizer, max_new_tokens=16, prefix_cache=True))
    fresh = UnTooled(TransformersProvider(model, tokenizer, max_new_tokens=16, prefix_cache=False))
    for depth in range(5):
        for choice in ("required", "auto"):
            request = Request(growing_conversation(depth), TOOLS, choice)
            a, b = asyncio.run(reuse.complete(request)), asyncio.run(fresh.complete(request))
            assert (a.text, [(c.name, c.arguments) for c in a.tool_calls]) == (
                b.text,
                [(c.name, c.arguments) for c in b.tool_calls],
            )
        assert fresh.inner.cache.reused == 0  # type: ignore[attr-defined]
        if depth:
            # everything up to this step's new turn came from the cache
            assert (
                reuse.inner.cache.reused
                > len(reuse.inner.encode(reuse.render(Request(growing_conversation(depth - 1), TOOLS)))) - 8
            )  # type: ignore[attr-defined]


def test_agent_runs_a_tool_on_the_tiny_model(tiny: tuple[object, object]) -> None:
    model, tokenizer = tiny
    provider = TransformersProvider(model, tokenizer, max_new_tokens=300)
    # required forces the first call; a threshold of 1 makes auto answer in text afterwards
    agent = Agent(provider, tools=[get_weather], tool_choice="required", settings={"call_threshold": 1.0})
    result = agent.run("weather?")
    assert result.tool_calls == 1
    assert result.messages[2].role == "tool" and result.messages[2].content.startswith("Sunny in")
    assert result.stop_reason == "answer"


def test_loads_a_saved_folder(tiny: tuple[object, object], tmp_path: Path) -> None:
    model, tokenizer = tiny
    model.save_pretrained(tmp_path)  # type: ignore[attr-defined]
    tokenizer.save_pretrained(tmp_path)  # type: ignore[attr-defined]
    provider = TransformersProvider(str(tmp_path), device="cpu", max_new_tokens=5)
    assert provider.name == f"hf:{tmp_path}"
    request = Request([UserMessage("hi")])
    assert ask(provider, request).text == ask(TransformersProvider(model, tokenizer, max_new_tokens=5), request).text


def test_missing_model_and_missing_dependencies(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match="cannot load the model"):
        TransformersProvider("/nonexistent/model-folder")
    import agentnb.providers.hf as hf

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"agentnb\[hf\]"):
        hf.local_provider()
    with pytest.raises(MissingDependencyError):
        Agent("local")


def test_import_agentnb_does_not_import_torch() -> None:
    code = "import sys, agentnb, agentnb.providers; print('torch' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_tool_from_plain_schema_is_bounded_for_the_grammar(provider: TransformersProvider) -> None:
    free = Tool("note", "Write a note.", {"type": "object", "properties": {"text": {"type": "string"}}})
    settings = {"temperature": 1.0, "seed": 3, "max_new_tokens": 400}
    reply = ask(
        provider, Request([UserMessage("x")], settings=settings, constraint=OutputConstraint((free,), "note"))
    ).text
    call = json.loads(reply or "")
    assert call["name"] == "note" and set(call["arguments"]) <= {"text"}
    assert len(call["arguments"].get("text", "")) <= 200


def test_picking_the_tool_first_narrows_the_call(provider: TransformersProvider) -> None:
    prompts = {t.name: f"Function: {t.name}\nDescription: {t.description}\nRequest: " for t in TOOLS}
    scores = provider.rank_tools(list(prompts.values()), "weather in Oslo")
    assert len(scores) == 2 and all(s < 0 for s in scores)
    best = TOOLS[max(range(2), key=scores.__getitem__)].name
    pick = {"query": "weather in Oslo", "prompts": prompts}
    for seed in range(4):
        settings = {"temperature": 1.0, "seed": seed, "max_new_tokens": 400, "untooled_pick": pick}
        request = Request([UserMessage("x")], settings=settings, constraint=OutputConstraint(TOOLS, "required"))
        reply = ask(provider, request).text or ""
        assert json.loads(reply)["name"] == best
        assert provider.last_decision is not None and provider.last_decision.tool == best
    # switched off, the hint is ignored and the grammar offers every tool
    names = set()
    for seed in range(12):
        settings = {"temperature": 1.0, "seed": seed, "max_new_tokens": 400, "untooled_pick": pick}
        settings["pick_tool_first"] = False
        request = Request([UserMessage("x")], settings=settings, constraint=OutputConstraint(TOOLS, "required"))
        names.add(json.loads(ask(provider, request).text or "")["name"])
    assert names == {t.name for t in TOOLS}


def test_rank_tools_cache_stays_bounded_and_answers_when_full(provider: TransformersProvider) -> None:
    heads = [f"Function: f{i}\nRequest: " for i in range(3)]
    first = provider.rank_tools(heads[:2], "weather in Oslo")
    # a full cache is emptied before new scores go in; the scores known before still answer
    provider._rankings.update({(f"filler {i}", "other"): 0.0 for i in range(256 - len(provider._rankings))})
    again = provider.rank_tools(heads, "weather in Oslo")
    assert again[:2] == pytest.approx(first) and len(again) == 3
    assert len(provider._rankings) <= 256


def test_after_a_detour_the_cache_stands_for_the_prompt_again(tiny: tuple[object, object]) -> None:
    """rewind() crops to the shared prefix; the rest runs with the next feed, same logits as fresh."""
    import torch

    from agentnb.providers.hf.cache import PrefixCache

    model, _ = tiny
    prompt, detour, token = [5, 6, 7, 8, 9, 10], [5, 6, 7, 20, 21, 22, 23], 11
    cache = PrefixCache(model)
    cache.prefill(prompt)
    cache.prefill(detour)
    cache.rewind(prompt)
    assert cache.ids == [5, 6, 7]  # the rest of the prompt waits for the next feed
    after = cache.feed([token])
    assert cache.ids == [*prompt, token]
    fresh = PrefixCache(model, enabled=False).prefill([*prompt, token])
    assert torch.allclose(after, fresh, atol=1e-4)
    cache.rewind([99, 98])  # nothing shared: starts over
    assert cache.ids == [] and torch.allclose(cache.feed([97]), PrefixCache(model).prefill([99, 98, 97]), atol=1e-4)
