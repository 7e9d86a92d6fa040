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

import os
from dataclasses import dataclass, field
from typing import Any

from agentnb.events import Event, StopReason
from agentnb.fastinit import fast_init
from agentnb.messages import Message, Usage
from agentnb.transcript import TRANSCRIPT_VERSION, read_transcript, transcript_fields, write_atomic


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

    >>> from agentnb import Agent, tool
    >>> from agentnb.testing import ScriptedProvider, call
    >>> @tool
    ... def double(x: int) -> int:
    ...     '''Double a number.'''
    ...     return 2 * x
    >>> r = Agent(ScriptedProvider([call("double", x=4), "8"]), tools=[double]).run("double 4")
    >>> r.output, r.stop_reason, r.tool_calls, [m.role for m in r.messages]
    ('8', 'answer', 1, ['user', 'assistant', 'tool', 'assistant'])
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
    #: Text the model had produced in the step a Stop (or an error) interrupted: shown on
    #: screen but never completed, so it is not ``output``. Empty when the run ended normally.
    partial_output: str = ""

    def __repr__(self) -> str:
        extra = f", error={self.error!r}" if self.error else ""
        if self.value is not None:
            extra += f", value={self.value!r}"
        short = self.output if len(self.output) <= 60 else self.output[:57] + "..."
        return f"RunResult(stop_reason={self.stop_reason!r}, tool_calls={self.tool_calls}, output={short!r}{extra})"

    def __str__(self) -> str:
        return self.output

    @property
    def limit(self) -> str | None:
        """The limit that ended the run (``"tool_calls"``, ``"total_tokens"``...), when one did."""
        if self.stop_reason != "limit":
            return None
        for event in reversed(self.events):
            if event.kind == "limit_reached":
                return event.limit  # type: ignore[union-attr]
        return "tool_calls"

    @property
    def overrun(self) -> tuple[tuple[str, float, float], ...]:
        """Every budget the run went past, as ``(limit, value, used)``; empty when it kept them.

        Token budgets are held before each request (:mod:`agentnb.budget`); what an estimate
        missed, and ``cost`` or ``seconds`` (checked before a request only), shows here.
        """
        for event in reversed(self.events):
            if event.kind == "run_finished":
                return event.overrun  # type: ignore[union-attr]
        return ()

    @property
    def cost(self) -> float | None:
        """What the run's model calls cost in US dollars (None: unknown); see :mod:`agentnb.cost`."""
        return self.usage.cost if self.usage.total_tokens else 0.0

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
        if self.partial_output:
            out["partial_output"] = self.partial_output
        if self.output_spec is not None:
            out["output_type"] = self.output_spec.name
            out["value"] = self.output_spec.dump(self.value) if self.value is not None else None
        elif self.value is not None:  # loaded without its output_type: already JSON data
            out["value"] = self.value
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any], output_type: Any = None) -> RunResult:
        """Rebuild a result from :meth:`to_dict` output; a ``ValueError`` says what is wrong.

        ``output_type`` turns the stored ``value`` back into an instance of it.
        """
        return cls(**_typed(transcript_fields(d), output_type))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the transcript (messages + events) as JSON.

        The file is replaced atomically: it is written next to ``path`` and renamed over it,
        so a failure never leaves a truncated file or destroys an existing one.
        """
        write_atomic(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike[str], output_type: Any = None) -> RunResult:
        """Read a transcript written by :meth:`save` (``output_type``: see :meth:`from_dict`).

        Raises :class:`agentnb.errors.TranscriptError` naming the file and what is wrong.
        """
        return cls(**_typed(read_transcript(path), output_type))


fast_init(RunResult)  # built once per run: the cheaper constructor of the events


def _typed(fields: dict[str, Any], output_type: Any) -> dict[str, Any]:
    if output_type is None:
        return fields
    from agentnb.output import output_spec

    spec = output_spec(output_type)
    value = fields.get("value")
    if spec is not None and value is not None:
        value = spec.validate(value).value
    return {**fields, "value": value, "output_spec": spec}
