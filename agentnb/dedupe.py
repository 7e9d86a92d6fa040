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


def fingerprint(name: str, arguments: Any) -> str:
    """sha256 hex digest of the canonical JSON of ``{"name": name, "arguments": arguments}``."""
    canonical = json.dumps(
        {"name": name, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
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
