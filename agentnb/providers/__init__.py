"""Model backends behind one interface, and provider specs (``"openai:gpt-4o-mini"``, ``"local"``).

Heavy backends (openai, torch/transformers) are imported only when used.

>>> from agentnb.providers import parse_spec
>>> parse_spec("openai:gpt-4o-mini")
('openai', 'gpt-4o-mini')
"""

from __future__ import annotations

import importlib
from typing import Any

from agentnb.errors import UserError
from agentnb.providers.base import (
    Chunk,
    Completion,
    CompletionAssembler,
    OutputConstraint,
    Provider,
    Request,
    TextChunk,
    ToolCallChunk,
    ToolChoice,
)

_LAZY = {
    "OpenAIProvider": "agentnb.providers.openai",
    "AnthropicProvider": "agentnb.providers.anthropic",
    "UnTooled": "agentnb.providers.untooled",
    "TransformersProvider": "agentnb.providers.hf",
    "local_provider": "agentnb.providers.hf",
}

#: spec prefix -> (module, factory name). The factory takes (model, **options).
SPEC_KINDS: dict[str, tuple[str, str]] = {
    "openai": ("agentnb.providers.openai", "OpenAIProvider"),
    "openai-responses": ("agentnb.providers.openai", "responses_provider"),
    "anthropic": ("agentnb.providers.anthropic", "AnthropicProvider"),
    "hf": ("agentnb.providers.hf", "TransformersProvider"),
    "transformers": ("agentnb.providers.hf", "TransformersProvider"),
    "local": ("agentnb.providers.hf", "local_provider"),
}

__all__ = [
    "Chunk",
    "Completion",
    "CompletionAssembler",
    "OutputConstraint",
    "Provider",
    "Request",
    "TextChunk",
    "ToolCallChunk",
    "ToolChoice",
    "get_provider",
    "parse_spec",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentnb.providers' has no attribute {name!r}")


def parse_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"kind:model"`` into its parts; ``"local"`` has no model part."""
    kind, _, model = spec.strip().partition(":")
    kind = kind.lower()
    if kind not in SPEC_KINDS:
        known = ", ".join(f"'{k}:MODEL'" if k != "local" else "'local'" for k in SPEC_KINDS)
        raise UserError(f"unknown provider spec {spec!r}; use one of {known}")
    if kind != "local" and not model:
        raise UserError(f"provider spec {spec!r} names no model; write '{kind}:MODEL'")
    return kind, (model or None)


def get_provider(spec: str | Provider, **options: Any) -> Provider:
    """Return ``spec`` if it is already a provider, else build one from a spec string.

    ``options`` go to the provider's constructor (e.g. ``base_url=...`` for ``openai:``).

    >>> get_provider("openai:qwen2.5", base_url="http://127.0.0.1:8000/v1")
    OpenAIProvider('qwen2.5', base_url='http://127.0.0.1:8000/v1')
    >>> get_provider("gpt4")
    Traceback (most recent call last):
    ...
    agentnb.errors.UserError: unknown provider spec 'gpt4'; use one of ...
    """
    if isinstance(spec, Provider):
        return spec
    if not isinstance(spec, str):
        raise UserError(f"expected a Provider or a spec string, got {type(spec).__name__}")
    kind, model = parse_spec(spec)
    module, factory = SPEC_KINDS[kind]
    build = getattr(importlib.import_module(module), factory)
    return build(model, **options) if model is not None else build(**options)  # type: ignore[no-any-return]
