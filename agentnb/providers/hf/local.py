"""The embedded default model (``"local"``): SmolLM2-135M-Instruct, loaded once per process.

The first load takes seconds (15-20 s when the fp32 cache is first written), so it is announced,
with its duration once done: on stderr in a terminal, on stdout in a notebook (where stderr
shows as a pink error box).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from typing import Any, TextIO

from agentnb.errors import MissingDependencyError
from agentnb.providers.hf.loading import load_smollm2, smollm2_path
from agentnb.providers.hf.provider import TransformersProvider
from agentnb.providers.hf.threads import apply_threads

_LOCAL: TransformersProvider | None = None
_LOCAL_LOCK = threading.Lock()


def local_provider(*, threads: int | None = None, quiet: bool = False, **options: Any) -> TransformersProvider:
    """The embedded default model, SmolLM2-135M-Instruct, loaded once per process.

    Args:
        threads: torch's CPU thread count (default: ``$AGENTNB_THREADS``, else the idle cores of
            this machine, at most 4; see :mod:`agentnb.providers.hf.threads`).
        quiet: do not announce the first load on stderr.
        **options: generation settings, ``prefix_cache``, ``constrained``: a new provider that
            shares the loaded weights.
    """
    for module in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError("the local model", "hf")
    global _LOCAL
    with _LOCAL_LOCK:
        used = apply_threads(threads) if threads is not None or _LOCAL is None else None
        if _LOCAL is None:
            start = time.perf_counter()
            if not quiet:
                print("agentnb: loading the model SmolLM2-135M-Instruct…", file=status_stream(), flush=True)
            model, tokenizer = load_smollm2(smollm2_path())
            _LOCAL = TransformersProvider(model, tokenizer, name="local")
            if not quiet:
                seconds = time.perf_counter() - start
                print(
                    f"agentnb: model loaded in {seconds:.1f} s ({used} CPU thread{'s' if used != 1 else ''})",
                    file=status_stream(),
                    flush=True,
                )
    if not options:
        return _LOCAL
    return TransformersProvider(_LOCAL.model, _LOCAL.tokenizer, name=options.pop("name", "local"), **options)


def status_stream() -> TextIO:
    """Where progress notes go: stdout in a Jupyter kernel (not an error), else stderr."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    return sys.stdout if getattr(shell, "kernel", None) is not None else sys.stderr
