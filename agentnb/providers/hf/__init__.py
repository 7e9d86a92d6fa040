"""The in-process backend: HuggingFace ``transformers`` models on this machine.

:mod:`.provider` (generation), :mod:`.source` (the model as the guidance's source of
log-probabilities), :mod:`.choose` (the grammar branch the guidance's decision picks, and the
batched scoring of a request under each tool's description), :mod:`.steering` (the guidance's
bonuses applied to logits), :mod:`.cache` (prefix KV cache), :mod:`.loading` (model loading, the SmolLM2 fp32 cache)
and :mod:`.local` (the embedded ``"local"`` model). The guidance itself (grammar, ranking, the
decision, the copy bias) is :mod:`agentnb.providers.guidance`, shared with the server route. torch and
transformers are imported only when a model is used.
"""

from agentnb.providers.hf.loading import load_model, smollm2_path
from agentnb.providers.hf.local import local_provider
from agentnb.providers.hf.provider import GenerationOptions, TransformersProvider

__all__ = ["GenerationOptions", "TransformersProvider", "load_model", "local_provider", "smollm2_path"]
