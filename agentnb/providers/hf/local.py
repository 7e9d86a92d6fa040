"""The embedded default model (``"local"``): SmolLM2-135M-Instruct, loaded once per process."""

from __future__ import annotations

import importlib.util
import threading
from typing import Any

from agentnb.errors import MissingDependencyError
from agentnb.providers.hf.loading import load_smollm2, smollm2_path
from agentnb.providers.hf.provider import TransformersProvider

_LOCAL: TransformersProvider | None = None
_LOCAL_LOCK = threading.Lock()


def local_provider(**options: Any) -> TransformersProvider:
    """The embedded default model, SmolLM2-135M-Instruct, loaded once per process.

    ``options`` (generation settings, ``prefix_cache``, ``constrained``) give a new provider
    that shares the loaded weights.
    """
    for module in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError("the local model", "hf")
    global _LOCAL
    with _LOCAL_LOCK:
        if _LOCAL is None:
            model, tokenizer = load_smollm2(smollm2_path())
            _LOCAL = TransformersProvider(model, tokenizer, name="local")
    if not options:
        return _LOCAL
    return TransformersProvider(_LOCAL.model, _LOCAL.tokenizer, name=options.pop("name", "local"), **options)
