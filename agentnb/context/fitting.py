"""A run's context state: its policy, its window, and the compacted start of its history.

>>> from agentnb.messages import UserMessage
>>> f = Fitting(None, 8000, ([{"role": "user", "content": "[summary]"}], 3))
>>> [m.content for m in f.sent([UserMessage(str(i)) for i in range(5)])]
['[summary]', '3', '4']
"""

from __future__ import annotations

from typing import Any

from agentnb.context.compaction import Compaction
from agentnb.messages import Message, message_from_dict


class Fitting:
    """A run's context state: its policy, its window, and the compacted start of its history
    (``base`` stands for the history's first ``upto`` messages; None: nothing compacted)."""

    __slots__ = ("policy", "window", "asked", "scale", "base", "upto")

    def __init__(self, policy: Compaction | None, window: int | None, compacted: Any = None) -> None:
        self.policy = policy
        self.window = window
        self.asked = window is not None  # the provider was asked for its window (or need not be)
        self.scale = 1.0  # tokens the server counted / tokens estimated, from an overflow error
        self.base: list[Message] | None = None
        self.upto = 0
        if compacted is not None:
            messages, self.upto = compacted
            self.base = [m if not isinstance(m, dict) else message_from_dict(m) for m in messages]

    def sent(self, history: list[Message]) -> tuple[Message, ...]:
        """What the model reads of ``history`` once its start is compacted (``base`` is set)."""
        return (*(self.base or ()), *history[self.upto :])
