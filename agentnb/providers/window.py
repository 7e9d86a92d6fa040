"""A model's context window: how many tokens one request may hold, and where that was read.

Found without the user's help, once per provider, on first need (never when a provider is made,
never per step): the in-process model's GGUF header or config (its weights stay unloaded), a
local server's own answer (llama.cpp ``/props``, vLLM ``/v1/models``, Ollama ``/api/show``:
:mod:`agentnb.providers.openai.window`), else the maintained genai-prices table for hosted
models. ``Agent(..., context_window=N)`` overrides them all. A window that cannot be found is
``Window(None, "unknown: <why>")``: never a guess.

>>> Window(128_000, "table:genai-prices")
Window(tokens=128000, source='table:genai-prices')
>>> str(Window(8192, "gguf")), str(unknown("the server did not say"))
('8,192 tokens (gguf)', 'unknown: the server did not say')
>>> check_context_window(0)
Traceback (most recent call last):
agentnb.errors.UserError: context_window must be a whole number of tokens >= 1 or None, not 0
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentnb.errors import UserError

#: How long the server questions of one provider may take together, in seconds (then: unknown).
PROBE_TIMEOUT = 3.0
#: The config fields that hold a model's window, most usual first.
_CONFIG_FIELDS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx")


@dataclass(frozen=True)
class Window:
    """A context window: ``tokens`` (None: unknown) and ``source``, where it was read:
    ``"user"``, ``"config"``, ``"gguf"``, ``"server:/props"``, ``"server:/v1/models"``,
    ``"server:/api/show"``, ``"table:genai-prices"``, or ``"unknown: <why>"``."""

    tokens: int | None
    source: str

    @property
    def known(self) -> bool:
        """Whether the window is known."""
        return self.tokens is not None

    def __str__(self) -> str:
        return f"{self.tokens:,} tokens ({self.source})" if self.tokens is not None else self.source


def unknown(why: str) -> Window:
    """An unknown window that says why."""
    return Window(None, f"unknown: {why}")


def check_context_window(value: Any) -> int | None:
    """``value`` as a window the user gives (a whole number >= 1, or None); else a :class:`UserError`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"context_window must be a whole number of tokens >= 1 or None, not {value!r}")
    return value


def tokens_of(value: Any) -> int | None:
    """``value`` when it is a plausible window (a whole number from 1 to 2**31), else None.

    >>> tokens_of(4096), tokens_of("4096"), tokens_of(-1), tokens_of(True), tokens_of(1e9)
    (4096, None, None, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 2**31:
        return None
    return value


def table_window(provider: Any) -> Window:
    """The window the genai-prices table gives ``provider``'s model (priced as in
    :mod:`agentnb.control.cost`), else unknown.

    >>> from agentnb.providers import OpenAIProvider
    >>> table_window(OpenAIProvider("gpt-4o-mini", api_key="sk-none-0000", base_url="https://api.openai.com/v1"))
    Window(tokens=128000, source='table:genai-prices')
    """
    from agentnb.control.cost import price_ref

    ref = price_ref(provider)
    if ref is None or ref == "free":
        return unknown(f"{getattr(provider, 'name', 'the provider')} does not say its window")
    provider_id, api_url, model = ref
    try:
        from genai_prices import data_snapshot
    except ImportError:
        return unknown(f"{model!r}: the genai-prices table is not installed (pip install 'agentnb[cost]')")
    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(model, None, provider_id, api_url)
    except (LookupError, ValueError):
        return unknown(f"the genai-prices table does not know the model {model!r}")
    tokens = tokens_of(getattr(info, "context_window", None))
    if tokens is None:
        return unknown(f"the genai-prices table has no window for {model!r}")
    return Window(tokens, "table:genai-prices")


def config_window(config: Any) -> Window:
    """The window in a transformers config (``max_position_embeddings``...), else unknown."""
    for field in _CONFIG_FIELDS:
        tokens = tokens_of(getattr(config, field, None))
        if tokens is not None:
            return Window(tokens, "config")
    return unknown(f"the model's config has none of {', '.join(_CONFIG_FIELDS)}")


def gguf_window(path: str | Path) -> Window:
    """The ``<architecture>.context_length`` in a GGUF file's header (the weights are mapped,
    never read), else unknown."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return unknown("reading a GGUF header needs the gguf package (pip install 'agentnb[hf]')")
    try:
        reader = GGUFReader(str(path), "r")
        arch = _field(reader, "general.architecture")
        if not isinstance(arch, str):
            return unknown(f"{Path(path).name} names no architecture")
        tokens = tokens_of(_field(reader, f"{arch}.context_length"))
    except (OSError, ValueError, IndexError, KeyError) as exc:
        return unknown(f"{Path(path).name} is not a readable GGUF file ({type(exc).__name__})")
    if tokens is None:
        return unknown(f"{Path(path).name} has no {arch}.context_length")
    return Window(tokens, "gguf")


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None or not field.data:
        return None
    part = field.parts[field.data[0]]
    if len(field.types) == 1 and field.types[0].name == "STRING":
        return bytes(part).decode("utf-8", "replace")
    return int(part[0]) if len(part) == 1 and getattr(part.dtype, "kind", "") in "iu" else None


def source_window(source: str, gguf_file: str | None) -> Window:
    """The window of the model at ``source`` (a folder, hub id, or GGUF in it), from its GGUF
    header or its config alone: no weights are loaded."""
    if gguf_file is not None:
        path = Path(source).expanduser() / gguf_file
        if not path.is_file():
            return unknown(f"the GGUF file {gguf_file!r} is not on this machine until the model loads")
        return gguf_window(path)
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(source)
    except (OSError, ValueError, ImportError) as exc:
        return unknown(f"the config of {source!r} cannot be read ({type(exc).__name__})")
    return config_window(config)
