"""Model backends behind one interface, and provider specs (``"openai:gpt-4o-mini"``, ``"local"``).

Layer: above :mod:`agentnb.tools` and :mod:`agentnb.output`; may import them, control
(cost), events, messages and errors; never the run (:mod:`agentnb.run`) or a view.

Heavy backends (openai, torch/transformers) are imported only when used.

>>> from agentnb.providers import parse_spec
>>> parse_spec("openai:gpt-4o-mini")
('openai', 'gpt-4o-mini')
"""

from __future__ import annotations

import importlib
from typing import Any

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
from agentnb.providers.spec import SPEC_KINDS, build_one, parse_spec

_LAZY = {
    "OpenAIProvider": "agentnb.providers.openai",
    "AnthropicProvider": "agentnb.providers.anthropic",
    "UnTooled": "agentnb.providers.untooled",
    "FallbackProvider": "agentnb.providers.fallback",
    "TransformersProvider": "agentnb.providers.hf",
    "local_provider": "agentnb.providers.hf",
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
    "SPEC_KINDS",
    "get_provider",
    "parse_spec",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentnb.providers' has no attribute {name!r}")


def get_provider(spec: str | Provider | list[Any] | tuple[Any, ...], **options: Any) -> Provider:
    """Return ``spec`` if it is already a provider, else build one from a spec string.

    ``options`` go to the provider's constructor (e.g. ``base_url=...`` for ``openai:``).
    A list of providers or specs is a :class:`~agentnb.providers.fallback.FallbackProvider`
    (the preferred first; ``options`` go to it).

    >>> get_provider("openai:qwen2.5", base_url="http://127.0.0.1:8000/v1")
    OpenAIProvider('qwen2.5', base_url='http://127.0.0.1:8000/v1')
    >>> get_provider("gpt4")
    Traceback (most recent call last):
    ...
    agentnb.errors.UserError: unknown provider spec 'gpt4'; use one of ...
    """
    if isinstance(spec, (list, tuple)):
        from agentnb.providers.fallback import FallbackProvider

        return FallbackProvider(spec, **options)
    return build_one(spec, **options)
