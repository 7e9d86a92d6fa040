"""The embedded default model (``"local"``): SmolLM2-135M-Instruct, loaded once per process, on
the first request that needs it.

``local_provider()`` (``Agent("local")``) loads nothing: a notebook whose calls all come from a
cassette never pays for the weights. The first request that reaches the model loads them (a few
seconds; 15-20 s when the fp32 cache is first written); the run's trace says so as it waits
(:class:`~agentnb.events.ModelLoading`), and the load is announced with its duration: on stderr
in a terminal, on stdout in a notebook (where stderr shows as a pink error box).
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from typing import Any, TextIO

from agentnb.errors import MissingDependencyError
from agentnb.providers.hf.lazy import LazyModel
from agentnb.providers.hf.loading import smollm2_path, smollm2_tokenizer, smollm2_weights
from agentnb.providers.hf.provider import TransformersProvider
from agentnb.providers.hf.threads import apply_threads

_LOCAL: TransformersProvider | None = None
_LOCAL_LOCK = threading.Lock()
#: The CPU threads asked for before the weights load (``threads=``), applied as they load.
_THREADS: list[int | None] = [None]


def local_provider(*, threads: int | None = None, quiet: bool = False, **options: Any) -> TransformersProvider:
    """The embedded default model, SmolLM2-135M-Instruct: one per process, its weights loaded
    on the first request that needs them.

    Args:
        threads: torch's CPU thread count (default: ``$AGENTNB_THREADS``, else the idle cores of
            this machine, at most 4; see :mod:`agentnb.providers.hf.threads`).
        quiet: do not announce the load on stderr.
        **options: generation settings, ``prefix_cache``, ``constrained``: a new provider that
            shares the weights (loaded once for all).
    """
    for module in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError("the local model", "hf")
    global _LOCAL
    with _LOCAL_LOCK:
        if _LOCAL is None:
            path = smollm2_path()
            weights = LazyModel(
                lambda tokenizer: _load(path, tokenizer, quiet),
                lambda: smollm2_tokenizer(path),
                label="local",
                where=(str(path.parent), path.name),
            )
            _LOCAL = TransformersProvider(weights, name="local")
        if threads is not None:
            if _LOCAL.weights.loaded:
                apply_threads(threads)
            else:
                _THREADS[0] = threads
    if not options:
        return _LOCAL
    return TransformersProvider(_LOCAL.weights, name=options.pop("name", "local"), **options)


def _load(path: Any, tokenizer: Any, quiet: bool) -> Any:
    """The weights, with torch's thread count set first; announced with their duration."""
    start = time.perf_counter()
    used = apply_threads(_THREADS[0])
    if not quiet:
        print("agentnb: loading the model SmolLM2-135M-Instruct…", file=status_stream(), flush=True)
    model = smollm2_weights(path, tokenizer)
    if not quiet:
        seconds = time.perf_counter() - start
        print(
            f"agentnb: model loaded in {seconds:.1f} s ({used} CPU thread{'s' if used != 1 else ''})",
            file=status_stream(),
            flush=True,
        )
    return model


def status_stream() -> TextIO:
    """Where progress notes go: stdout in a Jupyter kernel (not an error), else stderr."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    return sys.stdout if getattr(shell, "kernel", None) is not None else sys.stderr
