"""In-process models load their weights on the first request that needs them (issue 45 item 6):
building a provider loads nothing, a replay from a cassette never loads them, and the first live
request loads them once and says so in the trace while it waits."""

from __future__ import annotations

import asyncio
import io
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

import agentnb
from agentnb import Agent, TextPrinter, UsageLimits, tool
from agentnb.events import ModelLoading, ModelRequest, ModelResponse
from agentnb.notebook.trace.render import depth_html
from agentnb.notebook.trace.state import TraceState
from agentnb.providers.hf import TransformersProvider, local
from agentnb.providers.hf import loading as hf_loading
from agentnb.providers.hf.lazy import LazyModel
from agentnb.testing import ScriptedProvider

sys.path.insert(0, str(Path(__file__).parent))
from tiny_model import build_tiny


@tool
def weather(city: str) -> str:
    """The current weather in a city."""
    return f"sunny in {city}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, tokenizer = build_tiny()
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)  # type: ignore[attr-defined]
    tokenizer.save_pretrained(path)  # type: ignore[attr-defined]
    return path


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every load of weights (and of a tokenizer alone) from a folder, counted."""
    seen: list[str] = []
    weights, tokenizer = hf_loading.load_weights, hf_loading.load_tokenizer

    def counted_weights(*args: Any, **kwargs: Any) -> Any:
        seen.append("weights")
        return weights(*args, **kwargs)

    def counted_tokenizer(*args: Any, **kwargs: Any) -> Any:
        seen.append("tokenizer")
        return tokenizer(*args, **kwargs)

    monkeypatch.setattr(hf_loading, "load_weights", counted_weights)
    monkeypatch.setattr(hf_loading, "load_tokenizer", counted_tokenizer)
    return seen


def test_building_a_provider_and_an_agent_loads_nothing(folder: Path, loads: list[str]) -> None:
    provider = TransformersProvider(str(folder), device="cpu", max_new_tokens=4)
    agent = Agent(provider, tools=[weather])
    assert loads == [] and not provider.weights.loaded
    assert provider.name == f"hf:{folder}" and agent.provider.inner is provider  # type: ignore[attr-defined]
    # a path that is not there is still said at once
    with pytest.raises(agentnb.UserError, match="cannot load the model"):
        TransformersProvider(str(folder / "missing"))


def test_a_replay_from_a_cassette_never_loads_the_weights(folder: Path, loads: list[str], tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    with agentnb.cassette(path, mode="record"):  # recorded live: the first request loads the model
        live = Agent(TransformersProvider(str(folder), device="cpu", max_new_tokens=6)).run("hi")
    assert loads.count("weights") == 1
    loads.clear()
    fresh = TransformersProvider(str(folder), device="cpu", max_new_tokens=6)
    with agentnb.cassette(path, mode="replay"):
        again = Agent(fresh).run("hi")
        budgeted = Agent(fresh, limits=UsageLimits(total_tokens=10_000)).run("hi")
    assert again.output == live.output == budgeted.output
    assert loads == [] and not fresh.weights.loaded
    assert not any(isinstance(e, ModelLoading) for e in again.events)


def test_the_local_model_replayed_from_a_cassette_never_loads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A notebook replayed in CI: ``Agent("local")`` and every call from the cassette."""

    def refuse(*args: Any) -> Any:
        raise AssertionError("the weights were loaded")

    monkeypatch.setattr(local, "_LOCAL", None)
    monkeypatch.setattr(local, "smollm2_path", lambda: Path("model.gguf"))
    monkeypatch.setattr(local, "smollm2_weights", refuse)
    monkeypatch.setattr(local, "smollm2_tokenizer", refuse)
    path = tmp_path / "calls.jsonl"
    # the calls as UnTooled over the in-process model sends them, recorded from a scripted text model
    scripted = ScriptedProvider(['{"name": "weather", "arguments": {"city": "Paris"}}', "Sunny."], native_tools=False)
    with agentnb.cassette(path, mode="record"):
        recorded = Agent(scripted, tools=[weather], tool_choice="required").run("Weather in Paris?")
    with agentnb.cassette(path, mode="replay"):
        replayed = Agent("local", tools=[weather], tool_choice="required").run("Weather in Paris?")
    assert replayed.output == recorded.output == "Sunny." and replayed.tool_calls == 1
    assert not local.local_provider().weights.loaded


def test_the_first_live_request_loads_once_and_says_so_while_it_waits(folder: Path, loads: list[str]) -> None:
    provider = TransformersProvider(str(folder), device="cpu", max_new_tokens=4)
    agent = Agent(provider)
    out = io.StringIO()
    first = agent.run("hi", on_event=TextPrinter(out))
    kinds = [e.kind for e in first.events]
    begun, done = (e for e in first.events if isinstance(e, ModelLoading))
    assert kinds.index("model_request") < kinds.index("model_loading") < kinds.index("model_response")
    assert begun.seconds is None and done.seconds is not None and done.seconds >= 0
    assert begun.provider == f"hf:{folder}"
    assert "loading the model's weights (its first request)" in out.getvalue()
    assert "model's weights loaded in" in out.getvalue()
    again = agent.run("hi again")
    assert not any(isinstance(e, ModelLoading) for e in again.events) and loads.count("weights") == 1
    # a stream's consumer sees the load too, before the reply it waits for
    other = Agent(TransformersProvider(str(folder), device="cpu", max_new_tokens=4))

    async def consume() -> list[Any]:
        return [e async for e in other.stream("hi")]

    kinds = [e.kind for e in asyncio.run(consume()) if hasattr(e, "kind")]
    assert kinds.index("model_request") < kinds.index("model_loading") < kinds.index("model_response")


def test_threads_asking_at_once_load_once() -> None:
    count: list[int] = []
    release = threading.Event()

    def slow(tokenizer: Any) -> object:
        count.append(1)
        release.wait(60)
        return object()

    lazy = LazyModel(slow, lambda: "tok")
    got: list[object] = []
    threads = [threading.Thread(target=lambda: got.append(lazy.model)) for _ in range(4)]
    for t in threads:
        t.start()
    release.set()
    for t in threads:
        t.join(60)
    assert len(count) == 1 and len(got) == 4 and len({id(g) for g in got}) == 1


def test_a_failed_load_is_tried_again() -> None:
    tries: list[int] = []

    def flaky(tokenizer: Any) -> str:
        tries.append(1)
        if len(tries) == 1:
            raise OSError("disk hiccup")
        return "weights"

    lazy = LazyModel(flaky, lambda: "tok")
    with pytest.raises(OSError):
        lazy.load()
    assert not lazy.loaded and lazy.model == "weights" and len(tries) == 2


def test_the_trace_says_loading_while_it_waits_then_how_long_it_took() -> None:
    state = TraceState()
    for e in (ModelRequest(0, 1, (), "none"), ModelLoading(0, "local")):
        state.add(e)
    html = depth_html(state.depths[0])
    assert "loading the model" in html and "(its first request)…" in html
    assert "waiting for the model" not in html
    state.add(ModelLoading(0, "local", 11.25))
    html = depth_html(state.depths[0])
    assert "waiting for the model…" in html and "loaded in 11.2 s" in html
    state.add(ModelResponse(0, "hi", (), agentnb.Usage(3, 1), 12.0))
    assert "loaded in 11.2 s" in depth_html(state.depths[0])


def test_an_evaluation_gates_an_unloaded_model_without_loading_it(folder: Path, loads: list[str]) -> None:
    from agentnb.evaluation.executors import in_process_model

    a = local_like = TransformersProvider(str(folder), device="cpu")
    b = TransformersProvider(a.weights, name="other options")  # shares the weights
    assert in_process_model(Agent(a).provider) is in_process_model(Agent(b).provider) is a.weights
    assert loads == [] and local_like.weights is b.weights


def test_the_provider_says_nothing_of_a_load_where_nobody_listens(folder: Path) -> None:
    from agentnb.messages import UserMessage
    from agentnb.providers.base import Request

    provider = TransformersProvider(str(folder), device="cpu", max_new_tokens=3)
    completion = asyncio.run(provider.complete(Request([UserMessage("hi")])))
    assert provider.weights.loaded and not any(isinstance(e, ModelLoading) for e in completion.events)


def test_a_call_loads_the_model_when_the_cassette_misses(folder: Path, loads: list[str], tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    scripted = ScriptedProvider(['{"name": "weather", "arguments": {"city": "Oslo"}}', "Snow."], native_tools=False)
    with agentnb.cassette(path, mode="record"):
        Agent(scripted, tools=[weather]).run("Weather in Oslo?")
    fresh = TransformersProvider(str(folder), device="cpu", max_new_tokens=4)
    with agentnb.cassette(path, mode="new"):  # recorded calls replay; a new one goes to the model
        Agent(fresh, tools=[weather]).run("Weather in Oslo?")
        assert loads == []
        Agent(fresh).run("something else")
    assert loads.count("weights") == 1
