"""The outcome of a run, and its transcript on disk.

>>> from agentnb.testing import ScriptedProvider
>>> from agentnb import Agent
>>> r = Agent(ScriptedProvider(["Hello!"])).run("hi")
>>> r
RunResult(stop_reason='answer', tool_calls=0, output='Hello!')
>>> RunResult.from_dict(r.to_dict()).output
'Hello!'
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from agentnb.events import Event, StopReason, event_from_dict
from agentnb.messages import Message, Usage, message_from_dict

TRANSCRIPT_VERSION = 1


@dataclass(frozen=True, slots=True)
class RunResult:
    """What a run produced: the answer, the whole transcript and how the run ended.

    ``stop_reason`` is one of ``answer`` (the model answered in text), ``direct_output`` (a
    tool's result is the answer), ``limit`` (the tool-call limit was reached, then the model
    answered), ``cancelled`` (stopped by the user), ``error`` (see ``error``) or
    ``invalid_output`` (the answer never matched ``output_type``; ``output`` keeps its text).

    ``value`` is the answer as an instance of the run's ``output_type`` (None without one, or
    when it never validated). A loaded transcript holds it as JSON data, unless
    :meth:`load` is given the ``output_type`` to rebuild it.
    """

    output: str
    messages: tuple[Message, ...]
    events: tuple[Event, ...]
    usage: Usage
    stop_reason: StopReason
    tool_calls: int
    duration: float = 0.0
    error: str | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    value: Any = None
    output_spec: Any = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        extra = f", error={self.error!r}" if self.error else ""
        if self.value is not None:
            extra += f", value={self.value!r}"
        short = self.output if len(self.output) <= 60 else self.output[:57] + "..."
        return f"RunResult(stop_reason={self.stop_reason!r}, tool_calls={self.tool_calls}, output={short!r}{extra})"

    def __str__(self) -> str:
        return self.output

    def raise_for_error(self) -> RunResult:
        """Re-raise the exception that ended the run, if one did; else return self."""
        if self.exception is not None:
            raise self.exception
        return self

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": TRANSCRIPT_VERSION,
            "output": self.output,
            "stop_reason": self.stop_reason,
            "tool_calls": self.tool_calls,
            "duration": self.duration,
            "error": self.error,
            "usage": self.usage.to_dict(),
            "messages": [m.to_dict() for m in self.messages],
            "events": [e.to_dict() for e in self.events],
        }
        if self.output_spec is not None:
            out["output_type"] = self.output_spec.name
            out["value"] = self.output_spec.dump(self.value) if self.value is not None else None
        elif self.value is not None:  # loaded without its output_type: already JSON data
            out["value"] = self.value
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], output_type: Any = None) -> RunResult:
        """Rebuild a result from :meth:`to_dict` data; ``output_type`` turns ``value`` back into ``T``."""
        value, spec = d.get("value"), None
        if output_type is not None:
            from agentnb.output import output_spec

            spec = output_spec(output_type)
            if spec is not None and value is not None:
                value = spec.validate(value).value
        return cls(
            output=d["output"],
            messages=tuple(message_from_dict(m) for m in d["messages"]),
            events=tuple(event_from_dict(e) for e in d["events"]),
            usage=Usage(**d["usage"]),
            stop_reason=d["stop_reason"],
            tool_calls=d["tool_calls"],
            duration=d.get("duration", 0.0),
            error=d.get("error"),
            value=value,
            output_spec=spec,
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the transcript (messages + events) as JSON."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, ensure_ascii=False, indent=1)

    @classmethod
    def load(cls, path: str | os.PathLike[str], output_type: Any = None) -> RunResult:
        """Read a transcript written by :meth:`save` (``output_type``: see :meth:`from_dict`)."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f), output_type)
