"""The documented path of :mod:`agentnb.tools.dedupe` (``from agentnb.dedupe import fingerprint``).

>>> fingerprint("add", {"b": 2, "a": 1}) == fingerprint("add", {"a": 1, "b": 2})
True
"""

from agentnb.tools.dedupe import Deduplicator, canonical_json, fingerprint, repeat_message

__all__ = ["Deduplicator", "canonical_json", "fingerprint", "repeat_message"]
