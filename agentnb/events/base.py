"""What every event is: a frozen dataclass tagged by ``kind`` that turns into JSON data."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal, TypeAlias

from agentnb.messages.codec import encode


class _EventBase:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """This event as JSON-ready data (see :func:`agentnb.events.event_from_dict`)."""
        return event_to_dict(self)


StopReason: TypeAlias = Literal["answer", "direct_output", "limit", "cancelled", "error", "invalid_output"]
DedupAction: TypeAlias = Literal["execute", "skip", "allow_repeat"]


def event_to_dict(event: Any) -> dict[str, Any]:
    """An event as JSON data: fields by name, values without type tags (see :mod:`agentnb.messages.codec`)."""
    return {f.name: encode(getattr(event, f.name)) for f in dataclasses.fields(event)}
