"""Copies across the process boundary: the shared variables into the sandbox, a result out.

A copy is a pickle (cloudpickle when it is installed: it also copies functions and classes
defined in a cell) written to a private temporary file (in ``/dev/shm`` where there is one, so
a large frame never touches the disk). A value that cannot be copied -- an open file, a lock, a
tensor on a GPU -- is left out, with the reason the model reads.

>>> import threading
>>> blobs, why = pickled({"n": 3, "lock": threading.Lock()}, ["n", "lock", "missing"])
>>> sorted(blobs), sorted(why)
(['n'], ['lock', 'missing'])
>>> why["lock"]
"lock is a lock (_thread.lock): it cannot be copied into another process (TypeError: cannot pickle '_thread.lock' object)"
"""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any


def pickler() -> Any:
    """cloudpickle if installed, else pickle."""
    try:
        import cloudpickle

        return cloudpickle
    except ImportError:
        return pickle


def temp_dir() -> str | None:
    """``/dev/shm`` when it is a writable folder (memory, not disk), else the system's default."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def temp_path(suffix: str = ".pkl") -> str:
    """A new private file's path (mode 0600), empty."""
    fd, path = tempfile.mkstemp(prefix="agentnb-sandbox-", suffix=suffix, dir=temp_dir())
    os.close(fd)
    return path


def pickled(namespace: Mapping[str, Any], names: Sequence[str]) -> tuple[dict[str, bytes], dict[str, str]]:
    """Each name's pickle, and for those that cannot be copied, why (a sentence for the model)."""
    dumps = pickler().dumps
    blobs: dict[str, bytes] = {}
    why: dict[str, str] = {}
    for name in names:
        if name not in namespace:
            why[name] = f"{name} is not defined in the notebook"
            continue
        value = namespace[name]
        device = _device(value)
        if device is not None:
            why[name] = f"{name} is a tensor on {device}: it is not copied (copy it to the CPU in the notebook first)"
            continue
        try:
            blobs[name] = dumps(value, protocol=5)
        except Exception as exc:
            why[name] = f"{name} is {_what(value)}: it cannot be copied into another process ({_error(exc)})"
    return blobs, why


def write_seed(blobs: Mapping[str, bytes]) -> str:
    """Write ``blobs`` as the sandbox's ``load`` reads them; the file's path."""
    path = temp_path()
    with open(path, "wb") as f:
        pickle.dump([(name, len(blob)) for name, blob in blobs.items()], f, protocol=5)
        for blob in blobs.values():
            f.write(blob)
    return path


def read_copy(path: str) -> Any:
    """Load the value the sandbox wrote to ``path``, and remove the file."""
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    finally:
        os.unlink(path)


def _device(value: Any) -> str | None:
    """``"cuda:0"`` for a torch or cupy array that lives on a GPU, else None (never imports them)."""
    module = type(value).__module__.split(".", 1)[0]
    if module not in ("torch", "cupy", "jax", "jaxlib", "tensorflow"):
        return None
    device = getattr(value, "device", None)
    kind = getattr(device, "type", None) or getattr(device, "platform", None)
    if kind is None and module == "cupy":
        return f"GPU {getattr(device, 'id', '?')}"
    return str(device) if kind not in (None, "cpu") else None


def _what(value: Any) -> str:
    kind = type(value)
    label = f"{kind.__module__}.{kind.__qualname__}".removeprefix("builtins.")
    name = kind.__name__.lower()
    if "lock" in name:
        return f"a lock ({label})"
    if hasattr(value, "fileno") and hasattr(value, "read" if hasattr(value, "read") else "write"):
        return f"an open file or stream ({label})"
    return f"a {label}"


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"
