"""Provider specs: ``"kind:model"`` strings (``"openai:gpt-4o-mini"``, ``"local"``) and the one
provider each builds. A list of specs (a fallback chain) is :func:`agentnb.providers.get_provider`'s
business; this module knows single providers only, so the fallback provider can use it.

>>> parse_spec("openai:gpt-4o-mini")
('openai', 'gpt-4o-mini')

A local server's name stands for the OpenAI-compatible provider at that server's default
address (``base_url=`` moves it):

>>> build_one("ollama:qwen2.5:7b")
OpenAIProvider('qwen2.5:7b', base_url='http://localhost:11434/v1')
"""

from __future__ import annotations

import importlib
from typing import Any

from agentnb.errors import UserError
from agentnb.providers.base import Provider

#: spec prefix -> (module, factory name). The factory takes (model, **options).
SPEC_KINDS: dict[str, tuple[str, str]] = {
    "openai": ("agentnb.providers.openai", "OpenAIProvider"),
    "openai-responses": ("agentnb.providers.openai", "responses_provider"),
    "anthropic": ("agentnb.providers.anthropic", "AnthropicProvider"),
    "hf": ("agentnb.providers.hf", "TransformersProvider"),
    "transformers": ("agentnb.providers.hf", "TransformersProvider"),
    "local": ("agentnb.providers.hf", "local_provider"),
}
#: Local OpenAI-compatible servers, by name: their default addresses (docs/native.md, server by server).
SERVERS: dict[str, str] = {
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llamacpp": "http://localhost:8080/v1",
    "koboldcpp": "http://localhost:5001/v1",
    "vllm": "http://localhost:8000/v1",
    "sglang": "http://localhost:30000/v1",
}


def check_tool_calling(spec: str) -> None:
    """``--tool-calling`` (magics, CLI) is an option of the OpenAI-compatible providers only.

    >>> check_tool_calling("ollama:qwen2.5")
    >>> check_tool_calling("local")
    Traceback (most recent call last):
    agentnb.errors.UserError: --tool-calling applies to 'openai:MODEL' (or a server's) providers, not 'local'
    """
    if spec.strip().partition(":")[0].lower() not in ("openai", *SERVERS):
        raise UserError(f"--tool-calling applies to 'openai:MODEL' (or a server's) providers, not {spec!r}")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"kind:model"`` into its parts; ``"local"`` has no model part."""
    kind, _, model = spec.strip().partition(":")
    kind = kind.lower()
    if kind not in SPEC_KINDS and kind not in SERVERS:
        known = ", ".join(f"'{k}:MODEL'" if k != "local" else "'local'" for k in SPEC_KINDS)
        raise UserError(f"unknown provider spec {spec!r}; use one of {known}, or a server: {', '.join(SERVERS)}")
    if kind == "local" and model:
        raise UserError(
            f"provider spec {spec!r}: 'local' is the embedded model and takes no name; write 'local', "
            "or 'hf:MODEL' for another model"
        )
    if kind != "local" and not model:
        raise UserError(f"provider spec {spec!r} names no model; write '{kind}:MODEL'")
    return kind, (model or None)


def build_one(spec: str | Provider, **options: Any) -> Provider:
    """``spec`` itself if it is a provider, else the provider its spec string names.

    >>> build_one("openai:qwen2.5", base_url="http://127.0.0.1:8000/v1")
    OpenAIProvider('qwen2.5', base_url='http://127.0.0.1:8000/v1')
    """
    if isinstance(spec, Provider):
        return spec
    if not isinstance(spec, str):
        raise UserError(f"expected a Provider or a spec string, got {type(spec).__name__}")
    kind, model = parse_spec(spec)
    if kind in SERVERS:
        options.setdefault("base_url", SERVERS[kind])
        options.setdefault("server", kind)  # its quirks (agentnb.providers.openai.usage)
        kind = "openai"
    module, factory = SPEC_KINDS[kind]
    build = getattr(importlib.import_module(module), factory)
    return build(model, **options) if model is not None else build(**options)  # type: ignore[no-any-return]
