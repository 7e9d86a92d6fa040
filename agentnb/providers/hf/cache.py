"""Prefix KV-cache reuse across the steps of a run.

Every step of an agent run re-sends the whole conversation: the system prompt with the tool
catalogue, then a transcript that only grows. :class:`PrefixCache` keeps the model's key/value
cache of the last sequence it processed together with that sequence's token ids. A new prompt
is compared with those ids; the cache is cropped to the common prefix and only the new tokens
are run through the model.

With ``enabled=False`` every prompt starts from an empty cache (the reference the benchmark and
the tests compare against).
"""

from __future__ import annotations

import inspect
from typing import Any


def common_prefix(a: list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token lists.

    >>> common_prefix([1, 2, 3], [1, 2, 4, 5])
    2
    """
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PrefixCache:
    """A model's KV cache plus the token ids it holds; not thread-safe (the provider locks)."""

    def __init__(self, model: Any, *, enabled: bool = True) -> None:
        self.model = model
        self.enabled = enabled
        self.ids: list[int] = []
        self._cache: Any = None
        #: Tokens of the sequence the cache stands for that the next :meth:`feed` runs first.
        self._pending: list[int] = []
        #: Tokens taken from the cache (not recomputed) by the last :meth:`prefill`.
        self.reused = 0
        # transformers 5.2x calls the argument ``cache``; earlier versions ``past_key_values``.
        params = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"

    def reset(self) -> None:
        self.ids = []
        self._cache = None
        self._pending = []

    def rewind(self, prompt: list[int]) -> None:
        """Stand for ``prompt`` again after a detour (the auto decision's yes/no question).

        The cache is cropped to the prefix it shares with ``prompt``; the rest of ``prompt``
        runs together with the next :meth:`feed`'s tokens, in the same forward pass, so going
        back costs nothing by itself.
        """
        keep = common_prefix(self.ids, prompt) if self._cache is not None else 0
        if keep == 0:
            self.reset()
        elif keep < len(self.ids):
            self._crop(keep)
        self._pending = list(prompt[keep:])

    def prefill(self, prompt: list[int]) -> Any:
        """Make the cache hold ``prompt``; return the logits for the token after it."""
        if not prompt:
            raise ValueError("cannot generate from an empty prompt")
        self._pending = []
        keep = common_prefix(self.ids, prompt) if self.enabled and self._cache is not None else 0
        keep = min(keep, len(prompt) - 1)  # at least one token must run to give logits
        if keep == 0:
            self.reset()
        elif keep < len(self.ids):
            self._crop(keep)
        self.reused = keep
        return self.feed(prompt[keep:])

    def feed(self, tokens: list[int]) -> Any:
        """Run ``tokens`` after what the cache holds; return the logits for the next token."""
        import torch
        from transformers import DynamicCache

        if self._cache is None:
            self._cache = DynamicCache(config=self.model.config)
        tokens, self._pending = self._pending + list(tokens), []
        device = self.model.device
        try:
            with torch.inference_mode():
                out = self.model(
                    input_ids=torch.tensor([tokens], device=device),
                    use_cache=True,
                    logits_to_keep=1,
                    **{self._cache_arg: self._cache},
                )
        except BaseException:
            self.reset()  # an interrupted forward pass may have half-updated the cache
            raise
        self.ids.extend(tokens)
        return out.logits[0, -1].float()

    def _crop(self, keep: int) -> None:
        remove = len(self.ids) - keep
        # transformers 5 removes ``-n`` tokens; a negative value means the same in 4.x.
        self._cache.crop(-remove)
        del self.ids[keep:]
