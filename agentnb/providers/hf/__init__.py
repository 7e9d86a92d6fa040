"""The in-process backend: HuggingFace ``transformers`` models on this machine.

:mod:`.provider` (generation, the call/answer decision), :mod:`.constraint` (llguidance
grammars), :mod:`.steer` (copy bias, closing, loop guard), :mod:`.cache` (prefix KV cache),
:mod:`.loading` (model loading, the SmolLM2 fp32 cache) and :mod:`.local` (the embedded
``"local"`` model). torch and transformers are imported only when a model is used.
"""

from agentnb.providers.hf.loading import load_model, smollm2_path
from agentnb.providers.hf.local import local_provider
from agentnb.providers.hf.provider import GenerationOptions, TransformersProvider

__all__ = ["GenerationOptions", "TransformersProvider", "load_model", "local_provider", "smollm2_path"]
