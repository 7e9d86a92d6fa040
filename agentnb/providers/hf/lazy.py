"""An in-process model's tokenizer and weights, each loaded on first use, once.

Building a provider costs nothing: ``Agent("local")`` and a notebook whose every call is answered
from a cassette never load the weights (11-14 s for SmolLM2 on two busy cores). The first request
that reaches the model loads them; counting a prompt's tokens (a token budget) loads the tokenizer
alone. A lock makes each load happen once, however many threads ask at the same time; a load that
fails is tried again by the next request that needs it.

>>> calls = []
>>> lazy = LazyModel(lambda tok: calls.append("weights") or "weights", lambda: calls.append("tokenizer") or "tok")
>>> lazy.loaded, calls
(False, [])
>>> lazy.tokenizer, lazy.loaded, calls
('tok', False, ['tokenizer'])
>>> lazy.model, lazy.model, lazy.loaded, calls   # loaded once
('weights', 'weights', True, ['tokenizer', 'weights'])
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from time import perf_counter
from typing import Any

from agentnb.providers.window import Window, config_window, source_window, unknown

_UNSET: Any = object()


class LazyModel:
    """A model's weights, loaded by ``load_weights(tokenizer)`` on first use, and its tokenizer,
    by ``load_tokenizer()`` (alone: counting tokens needs no weights).

    Several providers may share one (the ``"local"`` model's variants with other options do):
    the weights are loaded once for all of them.
    """

    __slots__ = ("_load_weights", "_load_tokenizer", "_lock", "_model", "_tokenizer", "label", "where")

    def __init__(
        self,
        load_weights: Callable[[Any], Any],
        load_tokenizer: Callable[[], Any],
        *,
        label: str = "",
        where: tuple[str, str | None] | None = None,
    ) -> None:
        self._load_weights = load_weights
        self._load_tokenizer = load_tokenizer
        self._lock = threading.RLock()
        self._model: Any = _UNSET
        self._tokenizer: Any = _UNSET
        #: What the model is called where its loading is said.
        self.label = label
        #: ``(source, gguf_file)`` the weights load from, where known: their window is read
        #: there without loading them (:mod:`agentnb.providers.window`).
        self.where = where

    @classmethod
    def ready(cls, model: Any, tokenizer: Any, label: str = "") -> LazyModel:
        """A model already in memory.

        >>> LazyModel.ready("weights", "tokenizer").loaded
        True
        """
        lazy = cls(lambda tok: model, lambda: tokenizer, label=label)
        lazy._model, lazy._tokenizer = model, tokenizer
        return lazy

    def __repr__(self) -> str:
        return f"LazyModel({self.label!r}, loaded={self.loaded})"

    @property
    def loaded(self) -> bool:
        """Whether the weights are in memory."""
        return self._model is not _UNSET

    @property
    def model(self) -> Any:
        """The weights (loaded now if they are not yet: seconds)."""
        if self._model is _UNSET:
            self.load()
        return self._model

    @property
    def tokenizer(self) -> Any:
        """The tokenizer (loaded now, without the weights, if it is not yet)."""
        if self._tokenizer is _UNSET:
            with self._lock:
                if self._tokenizer is _UNSET:
                    self._tokenizer = self._load_tokenizer()
        return self._tokenizer

    def load(self) -> None:
        """Load the tokenizer and the weights, once (a second caller waits for the first)."""
        with self._lock:
            if self._model is _UNSET:
                self._model = self._load_weights(self.tokenizer)


class LoadsOnUse:
    """The part of :class:`~agentnb.providers.hf.TransformersProvider` that holds its model:
    ``weights`` (a :class:`LazyModel`) and what is derived from them (the prefix cache, the end
    tokens, the vocabulary size), made on first use."""

    weights: LazyModel
    name: str
    _prefix_cache: bool
    _made: tuple[Any, frozenset[int], int] | None
    _making: threading.Lock

    @property
    def loads_on_request(self) -> bool:
        """Whether the next request loads the weights first (then it says so as it waits)."""
        return not self.weights.loaded

    @property
    def model(self) -> Any:
        """The transformers model (its weights are loaded now if they are not yet)."""
        return self.weights.model

    @property
    def tokenizer(self) -> Any:
        """The tokenizer (loaded now, without the weights, if it is not yet)."""
        return self.weights.tokenizer

    async def find_context_window(self) -> Window:
        """The model's window: from its config when the weights are in memory, else from its
        GGUF header or config file alone (the weights stay unloaded)."""
        if self.weights.loaded:
            return config_window(getattr(self.weights.model, "config", None))
        if self.weights.where is None:
            return unknown(f"{self.name} does not say where its weights load from")
        return await asyncio.to_thread(source_window, *self.weights.where)

    @property
    def cache(self) -> Any:
        """The prefix KV cache (:mod:`agentnb.providers.hf.cache`)."""
        return self._derived()[0]

    @property
    def eos_ids(self) -> frozenset[int]:
        """The tokens that end a reply."""
        return self._derived()[1]

    @property
    def vocab_size(self) -> int:
        """The number of logits the model gives."""
        return self._derived()[2]

    def _derived(self) -> tuple[Any, frozenset[int], int]:
        made = self._made
        if made is None:
            with self._making:
                if self._made is None:
                    from agentnb.providers.hf.cache import PrefixCache

                    model, tokenizer = self.weights.model, self.weights.tokenizer
                    cache = PrefixCache(model, enabled=self._prefix_cache)
                    self._made = (cache, eos_ids(model, tokenizer), vocab_size(model))
                made = self._made
        return made  # type: ignore[return-value]

    def load_for_request(self, say: Callable[[Any], None]) -> None:
        """Load the weights for a request that needs them (blocking: from a worker thread),
        saying so with :class:`~agentnb.events.ModelLoading` events as the load begins and ends."""
        if self.weights.loaded:
            return
        from agentnb.events import ModelLoading

        say(ModelLoading(0, self.name))
        start = perf_counter()
        self.weights.load()
        say(ModelLoading(0, self.name, round(perf_counter() - start, 3)))


def vocab_size(model: Any) -> int:
    """The number of logits the model gives (a quantized head's weight is a method)."""
    weight = model.get_output_embeddings().weight
    return int((weight() if callable(weight) else weight).shape[0])


def eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """The token ids that end a reply: the generation config's and the tokenizer's."""
    ids: set[int] = set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return frozenset(ids)
