"""The in-process model as a source of log-probabilities for the guidance.

:class:`InProcessSource` implements :class:`~agentnb.providers.guidance.source.LogprobSource`
for one reply of a :class:`~agentnb.providers.hf.TransformersProvider`:

* scores: :meth:`~agentnb.providers.hf.choose.ToolChoice.rank_tools`, one batched forward pass
  outside the prefix cache (remembered per description and request);
* the next token after the conversation: the logits the prefix cache already computed for the
  reply's first token; after one more user turn (the yes/no probe): the cache runs only the
  question's tokens, then goes back to standing for the reply's prompt;
* the distribution is read over the whole vocabulary (:class:`VocabularyNext`): the call share
  with the call grammar's own masks (which tokens may start a call, which may start prose), the
  yes/no from the first token of each way to write "yes" and "no";
* nothing is too costly: the model runs on this machine, and each measurement is a fraction of
  the reply it guides.

Its methods never wait, so the guidance's coroutines run to the end in the worker thread
(:func:`~agentnb.providers.guidance.source.drive`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from agentnb.providers.guidance.source import Scored


class VocabularyNext:
    """The next token's distribution over the whole vocabulary (torch logits)."""

    def __init__(self, logits: Any, tokenizer: Any, call: Callable[[], tuple[Any, Any]] | None = None) -> None:
        self.logits = logits
        self.tokenizer = tokenizer
        #: The grammar's masks (numpy bool arrays): tokens that may start a call, and prose.
        self.masks = call

    def call_share(self) -> float:
        import torch

        if self.masks is None:
            raise ValueError("no call grammar to tell a call's first token by")
        probs = torch.softmax(self.logits.float(), dim=-1)
        call_mask, text_mask = self.masks()
        call = torch.from_numpy(call_mask).to(probs.device)
        text = torch.from_numpy(text_mask).to(probs.device)
        p_call, p_text = float(probs[call].sum()), float(probs[text & ~call].sum())
        return p_call / (p_call + p_text) if p_call + p_text > 0 else 0.0

    def yes_no(self) -> float:
        import torch

        probs = torch.softmax(self.logits.float(), dim=-1)
        yes, no = answer_ids(self.tokenizer)
        return math.log(float(probs[yes].sum()) + 1e-9) - math.log(float(probs[no].sum()) + 1e-9)


class InProcessSource:
    """The guidance's measurements for one reply of ``provider`` (see the module docstring).

    ``prompt`` is the reply's prompt and ``logits`` the first token's, from the prefix cache;
    ``probe`` gives the prompt with one more user turn; ``masks`` the call grammar's masks for
    the tools on offer.
    """

    via = ""
    can_score = True

    def __init__(
        self,
        provider: Any,
        prompt: list[int],
        logits: Any,
        probe: Callable[[str], list[int]] | None = None,
        masks: Callable[[], tuple[Any, Any]] | None = None,
    ) -> None:
        self.provider = provider
        self.prompt = prompt
        self.logits = logits
        self.probe = probe
        self.masks = masks

    async def scores(self, heads: Sequence[str], text: str) -> list[Scored]:
        tok = self.provider.tokenizer
        size = len(tok.encode(text, add_special_tokens=False))
        return [Scored(s, size) for s in self.provider.rank_tools(list(heads), text)]

    async def next_token(self, follow_up: str | None = None) -> VocabularyNext:
        if follow_up is None:
            return VocabularyNext(self.logits, self.provider.tokenizer, self.masks)
        if self.probe is None:
            raise ValueError("this reply has no conversation to ask a question after")
        cache = self.provider.cache
        # the question shares the prompt's prefix (the conversation): the cache runs only its
        # tokens, then goes back to standing for the prompt
        logits = cache.prefill(self.probe(follow_up))
        cache.rewind(self.prompt)
        return VocabularyNext(logits, self.provider.tokenizer)

    async def too_costly(self, step: str, *, heads: Sequence[str] = (), text: str = "", asks: int = 0) -> None:
        return None


_ANSWERS: dict[int, tuple[Any, list[int], list[int]]] = {}


def answer_ids(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The first token of each way to write "yes" and "no" (per tokenizer, remembered)."""
    entry = _ANSWERS.get(id(tokenizer))
    if entry is None or entry[0] is not tokenizer:

        def first(words: tuple[str, ...]) -> list[int]:
            return sorted({tokenizer.encode(w, add_special_tokens=False)[0] for w in words})

        entry = (tokenizer, first(("Yes", "yes", " Yes", " yes", "YES")), first(("No", "no", " No", " no", "NO")))
        _ANSWERS[id(tokenizer)] = entry
    return entry[1], entry[2]
