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
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from agentnb.context.gauge import ContextReport, context_report
from agentnb.errors import TranscriptError
from agentnb.events import Event, StopReason
from agentnb.events.counts import model_calls as count_model_calls
from agentnb.messages import Message, Usage
from agentnb.messages.fastinit import fast_init
from agentnb.run.labels import Label, LabelWarning, label_lock, tell
from agentnb.run.transcript import TRANSCRIPT_VERSION, merge_labels, read_transcript, transcript_fields, write_atomic
from agentnb.tracing.pieces import scrub_transcript
from agentnb.tracing.redact import Redactor


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
    #: The agent that made the run (None for a loaded transcript): a fork continues with it.
    agent: Any = field(default=None, repr=False, compare=False)
    #: The labels a person gave the run, oldest first (see :meth:`label`); the one field that
    #: grows after the run, so it takes no part in equality or hashing.
    labels: tuple[Label, ...] = field(default=(), compare=False)
    #: The transcript file this result was last saved to or loaded from (None: none): a new
    #: label is written there too.
    saved_as: str | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        extra = f", error={self.error!r}" if self.error else ""
        if self.value is not None:
            extra += f", value={self.value!r}"
        short = self.output if len(self.output) <= 60 else self.output[:57] + "..."
        return f"RunResult(stop_reason={self.stop_reason!r}, tool_calls={self.tool_calls}, output={short!r}{extra})"

    def __str__(self) -> str:
        return self.output

    def __getstate__(self) -> list[Any]:
        # A pickled result (sent back from a worker process) travels without its agent.
        return [None if f.name == "agent" else getattr(self, f.name) for f in fields(self)]

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
    def without_tools(self) -> str | None:
        """The budget that took the tools away before the model wrote the answer (None: it had them)."""
        for event in reversed(self.events):
            if event.kind == "run_finished":
                return event.without_tools  # type: ignore[union-attr]
        return None

    @property
    def overrun(self) -> tuple[tuple[str, float, float], ...]:
        """Every budget the run went past, as ``(limit, value, used)``; empty when it kept them.

        Token budgets are held before each request (:mod:`agentnb.run.budget`); what an estimate
        missed, and ``cost`` or ``seconds`` (checked before a request only), shows here.
        """
        for event in reversed(self.events):
            if event.kind == "run_finished":
                return event.overrun  # type: ignore[union-attr]
        return ()

    @property
    def context(self) -> ContextReport:
        """How full the model's context window was: its ``window`` (None: unknown), the size of
        each request in tokens (``requests``) and the largest (``peak``); see :mod:`agentnb.context`.

        >>> from agentnb import Agent
        >>> from agentnb.testing import ScriptedProvider
        >>> r = Agent(ScriptedProvider(["Paris."]), context_window=4096).run("Capital of France?")
        >>> r.context.window, r.context.requests, r.context.peak
        (4096, (12,), 12)
        """
        return context_report(self.events)

    @property
    def model_calls(self) -> int:
        """The model calls this run sent (agents run as tools included). A fork sends none for
        its recorded steps, nor for the step whose reply its edit gave (see
        :func:`agentnb.events.counts.model_calls`).

        >>> from agentnb import Agent
        >>> from agentnb.testing import ScriptedProvider
        >>> r = Agent(ScriptedProvider(["Paris."])).run("Capital of France?")
        >>> r.model_calls, r.fork(0, reply="Lyon.").model_calls
        (1, 0)
        """
        return count_model_calls(self.events).sent

    @property
    def cost(self) -> float | None:
        """What the run's model calls cost in US dollars (None: unknown); see :mod:`agentnb.control.cost`."""
        return self.usage.cost if self.usage.total_tokens else 0.0

    @property
    def run_id(self) -> str | None:
        """This run's id (None for a transcript saved before runs had one)."""
        first = self.events[0] if self.events else None
        return getattr(first, "run_id", None)

    @property
    def lineage(self) -> Any:
        """For a fork, its :class:`~agentnb.events.Forked` event (``parent``, ``forked_at``,
        ``edit``); None for a run that is no fork."""
        for event in self.events[:3]:
            if event.kind == "forked":
                return event
        return None

    def fork(self, at: int, **edits: Any) -> RunResult:
        """A new run: steps before ``at`` from this recording, ``at`` edited, the rest live.

        See :func:`agentnb.timetravel.fork.afork` for the edits (``agent``, ``reply``,
        ``arguments``, ``tool_result``, ``system``).

        >>> from agentnb import Agent
        >>> from agentnb.testing import ScriptedProvider
        >>> r = Agent(ScriptedProvider(["Paris."])).run("Capital of France?")
        >>> f = r.fork(0, reply="Lyon.")
        >>> f.output, f.lineage.forked_at, f.lineage.parent == r.run_id
        ('Lyon.', 0, True)
        """
        from agentnb.run.sync import run_sync
        from agentnb.timetravel.edits import check_names
        from agentnb.timetravel.fork import afork

        check_names(edits)
        return run_sync(lambda: afork(self, at, **edits))

    async def afork(self, at: int, **edits: Any) -> RunResult:
        """The async twin of :meth:`fork`."""
        from agentnb.timetravel.edits import check_names
        from agentnb.timetravel.fork import afork

        check_names(edits)
        return await afork(self, at, **edits)

    def label(self, good: bool | None = None, expected: str | None = None, note: str | None = None) -> Label:
        """Say whether the run was good, what answer was expected, and why (at least one).

        The label is added to :attr:`labels` (the last one is the run's label) and returned.
        When the run was saved to, or loaded from, a transcript file (:attr:`saved_as`), the
        file is rewritten atomically with the label (labels another copy wrote there are
        kept); a file that cannot be written is a :class:`~agentnb.run.labels.LabelWarning`
        and the label stays in memory, written by the next :meth:`save`. Then every callback
        of :func:`agentnb.run.labels.on_label` is called.

        >>> from agentnb import Agent
        >>> from agentnb.testing import ScriptedProvider
        >>> r = Agent(ScriptedProvider(["Lyon."])).run("Capital of France?")
        >>> r.label(good=False, expected="Paris.").expected, len(r.labels)
        ('Paris.', 1)
        >>> r.label(good="no")
        Traceback (most recent call last):
        ...
        agentnb.errors.UserError: good: expected True, False or None, not str 'no'
        """
        given = Label(good, expected, note)
        with label_lock():
            labels = (*self.labels, given)
            if self.saved_as is not None:
                labels = self._write_labels(labels)
            object.__setattr__(self, "labels", labels)  # frozen, but its labels grow
        tell(self, given)
        return given

    def _write_labels(self, labels: tuple[Label, ...]) -> tuple[Label, ...]:
        """Write ``labels`` into :attr:`saved_as`; the labels the file holds after (a warning
        and ``labels`` unchanged when it cannot be written)."""
        import warnings

        from agentnb.tracing.redact import scrub

        redact = Redactor().redact
        mine = [scrub(label.to_dict(), redact) for label in labels]
        try:
            merged = merge_labels(self.saved_as, self.run_id, mine)  # type: ignore[arg-type]
        except (OSError, ValueError) as exc:
            why = redact(str(exc))
            warnings.warn(f"the label is kept in memory, not in its transcript: {why}", LabelWarning, stacklevel=3)
            return labels
        others = [Label.from_dict(d) for d in merged if d not in mine]  # written by another copy of the run
        return tuple(sorted((*labels, *others), key=lambda label: datetime.fromisoformat(label.at)))

    def raise_for_error(self) -> RunResult:
        """Re-raise the exception that ended the run, if one did; else return self."""
        if self.exception is not None:
            raise self.exception
        return self

    def to_dict(self, *, redact: bool = True) -> dict[str, Any]:
        """The transcript as JSON data, every secret in it (a provider's key, header values and
        URL credentials, secret environment values, key-shaped strings) replaced by ``***``
        (:mod:`agentnb.tracing.redact`); ``redact=False`` keeps them, for a copy that stays in memory.

        >>> from agentnb import Agent
        >>> from agentnb.testing import ScriptedProvider
        >>> r = Agent(ScriptedProvider(["use sk-abcdefghijklmnop1234"])).run("key?")
        >>> r.to_dict()["output"], r.to_dict(redact=False)["output"]
        ('use ***', 'use sk-abcdefghijklmnop1234')
        """
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
        if self.labels:
            out["labels"] = [label.to_dict() for label in self.labels]
        if self.output_spec is not None:
            out["output_type"] = self.output_spec.name
            out["value"] = self.output_spec.dump(self.value) if self.value is not None else None
        elif self.value is not None:  # loaded without its output_type: already JSON data
            out["value"] = self.value
        return scrub_transcript(out, Redactor().redact) if redact else out  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, d: dict[str, Any], output_type: Any = None) -> RunResult:
        """Rebuild a result from :meth:`to_dict` output; a :class:`~agentnb.errors.TranscriptError`
        (a ``ValueError``) names the field that is wrong.

        ``output_type`` turns the stored ``value`` back into an instance of it.
        """
        try:
            fields = transcript_fields(d)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise TranscriptError(f"not a readable transcript: {exc}") from None
        return cls(**_typed(fields, output_type))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the transcript (messages + events) as JSON, secrets redacted (see :meth:`to_dict`).

        The file is replaced atomically: it is written next to ``path`` and renamed over it,
        so a failure never leaves a truncated file or destroys an existing one. The path is
        kept (:attr:`saved_as`): a later :meth:`label` is written there too.
        """
        write_atomic(path, self.to_dict())
        object.__setattr__(self, "saved_as", os.fspath(path))  # where a later label is written

    @classmethod
    def load(cls, path: str | os.PathLike[str], output_type: Any = None) -> RunResult:
        """Read a transcript written by :meth:`save` (``output_type``: see :meth:`from_dict`).

        Raises :class:`agentnb.errors.TranscriptError` naming the file and what is wrong.
        """
        return cls(**_typed(read_transcript(path), output_type), saved_as=os.fspath(path))


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
