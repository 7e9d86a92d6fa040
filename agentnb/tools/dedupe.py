"""The deduplicator: an exact repeat of a call within a run is not executed again.

A call's fingerprint is the sha256 of the canonical JSON of ``{name, arguments}`` (sorted
keys, fixed separators), so the order in which a model writes the keys does not matter.

>>> d = Deduplicator()
>>> fp = fingerprint("save", {"path": "a.txt", "text": "hi"})
>>> fp == fingerprint("save", {"text": "hi", "path": "a.txt"})
True
>>> d.lookup(fp) is None
True
>>> d.record(fp, "saved")
>>> d.lookup(fp)
'saved'
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agentnb.tools.running import safe_repr

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
try:  # the C encoder, built once: json.dumps builds one per call, which costs half the time
    from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]

    _c_encode: Any = c_make_encoder(None, str, encode_basestring, None, ":", ",", True, False, True)  # type: ignore[misc]
except (ImportError, TypeError):  # pragma: no cover - a Python without the C accelerator
    _c_encode = None


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, non-ASCII kept; what :func:`fingerprint` hashes."""
    if _c_encode is not None:
        try:
            return "".join(_c_encode(value, 0))
        except RecursionError:  # circular or absurdly deep: the checked encoder says which
            pass
    try:
        return _CANONICAL.encode(value)
    except (ValueError, RecursionError):  # a circular structure (only Python code can build one)
        return safe_repr(value)


def fingerprint(name: str, arguments: Any) -> str:
    """sha256 hex digest of the canonical JSON of ``{"name": name, "arguments": arguments}``."""
    canonical = canonical_json({"name": name, "arguments": arguments})
    # surrogatepass: a lone surrogate ("\ud800") in a model's arguments is data, not a crash.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class Deduplicator:
    """Remembers the result of every successfully executed call of one run."""

    __slots__ = ("_results",)

    def __init__(self) -> None:
        self._results: dict[str, str] = {}

    def lookup(self, fp: str) -> str | None:
        """The earlier result for this fingerprint, or None if it was never executed."""
        return self._results.get(fp)

    def record(self, fp: str, result: str) -> None:
        self._results.setdefault(fp, result)

    def __len__(self) -> int:
        return len(self._results)


def repeat_message(name: str, result: str) -> str:
    """What the model reads instead of a second execution."""
    return (
        f"You already called {name} with exactly these arguments in this run; it was not run "
        f"again. Its result was:\n{result}\nUse this result: answer the user, or call a tool "
        "with different arguments."
    )
