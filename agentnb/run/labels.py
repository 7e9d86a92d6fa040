"""A person's label on a finished run: good or bad, a note, the answer that was expected.

A :class:`Label` is a plain, frozen value: :meth:`RunResult.label
<agentnb.run.result.RunResult.label>` adds one to a run (``result.labels`` lists them, oldest
first; the last is the run's label), the run's transcript keeps them, and whatever keeps runs
elsewhere (a runs store) learns of each new one through :func:`on_label`.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> r = Agent(ScriptedProvider(["Lyon."])).run("Capital of France?")
>>> label = r.label(good=False, expected="Paris.", note="wrong city")
>>> r.labels == (label,), label.good, label.expected
(True, False, 'Paris.')
>>> Label.from_dict(label.to_dict()) == label
True
>>> Label.from_dict({"good": "no", "at": label.at})
Traceback (most recent call last):
...
agentnb.errors.TranscriptError: good: expected true, false or null, not str 'no'
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from agentnb.errors import TranscriptError, UserError
from agentnb.tracing.redact import Redactor

#: What a label callback is given: the run (a RunResult) and the label just added to it.
LabelCallback = Callable[[Any, "Label"], Any]

_FIELDS = ("good", "expected", "note", "at")
_callbacks: list[LabelCallback] = []
_lock = threading.Lock()  # one label added at a time (a click in the widget, a call from Python)


class LabelWarning(UserWarning):
    """A label was kept in memory, but something after it failed: its transcript file could not
    be updated, or a callback of :func:`on_label` raised. The label itself is never lost."""


def now() -> str:
    """The time now as an ISO-8601 UTC timestamp (milliseconds), as a label records it.

    >>> now().endswith("+00:00")
    True
    """
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True, slots=True)
class Label:
    """One person's judgement of one run.

    Args:
        good: True (👍, the run did well), False (👎) or None (not said).
        expected: the answer the run should have given (what an evaluation compares with).
        note: free text: why, what went wrong.
        at: when it was given, ISO-8601 in UTC (now, by default).

    At least one of ``good``, ``expected`` and ``note`` is given; a wrong type raises
    :class:`~agentnb.errors.UserError` naming the field.

    >>> Label(good=True, at="2026-01-02T03:04:05.000+00:00").to_dict()
    {'good': True, 'expected': None, 'note': None, 'at': '2026-01-02T03:04:05.000+00:00'}
    >>> Label(good="yes")
    Traceback (most recent call last):
    ...
    agentnb.errors.UserError: good: expected True, False or None, not str 'yes'
    """

    good: bool | None = None
    expected: str | None = None
    note: str | None = None
    at: str = field(default_factory=now)

    def __post_init__(self) -> None:
        problem = _problem(self.good, self.expected, self.note, self.at, python=True)
        if problem:
            raise UserError(problem)

    def to_dict(self) -> dict[str, Any]:
        """The label as JSON data (every field, None as null)."""
        return {"good": self.good, "expected": self.expected, "note": self.note, "at": self.at}

    @classmethod
    def from_dict(cls, data: Any) -> Label:
        """Read :meth:`to_dict` data back, strictly: an unknown or missing field, or a value of
        the wrong type, raises :class:`~agentnb.errors.TranscriptError` (a ``ValueError``)
        naming the field."""
        if not isinstance(data, dict):
            raise TranscriptError(f"a label is a JSON object, not {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k not in _FIELDS)
        if unknown:
            raise TranscriptError(f"{unknown[0]}: not a field of a label (it has {', '.join(_FIELDS)})")
        if "at" not in data:
            raise TranscriptError("at: missing (when the label was given)")
        values = {k: data.get(k) for k in _FIELDS}
        problem = _problem(**values, python=False)
        if problem:
            raise TranscriptError(problem)
        return cls(values["good"], values["expected"], values["note"], data["at"])


def _problem(good: Any, expected: Any, note: Any, at: Any, *, python: bool) -> str | None:
    """What is wrong with these field values (None: nothing), naming the field."""
    if good is not None and not isinstance(good, bool):
        words = "True, False or None" if python else "true, false or null"
        return f"good: expected {words}, not {_shown(good)}"
    for name, value in (("expected", expected), ("note", note)):
        if value is not None and not isinstance(value, str):
            return f"{name}: expected a string or {'None' if python else 'null'}, not {_shown(value)}"
    if good is None and expected is None and note is None:
        return "a label says something: give good (True or False), expected or note"
    if not isinstance(at, str):
        return f"at: expected an ISO-8601 timestamp string, not {_shown(at)}"
    try:
        when = datetime.fromisoformat(at)
    except ValueError:
        return f"at: not an ISO-8601 timestamp: {at[:40]!r}"
    if when.utcoffset() is None or when.utcoffset().total_seconds() != 0:  # type: ignore[union-attr]
        return f"at: labels are timed in UTC (+00:00), not {at[:40]!r}"
    return None


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def on_label(callback: LabelCallback) -> Callable[[], None]:
    """Call ``callback(result, label)`` after each label is added to a run, in this process.

    A callback that raises is reported as a :class:`LabelWarning`; the label is kept. Returns a
    function that removes the callback.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> seen = []
    >>> stop = on_label(lambda result, label: seen.append((result.output, label.note)))
    >>> _ = Agent(ScriptedProvider(["4"])).run("2+2?").label(good=True, note="right")
    >>> stop()
    >>> seen
    [('4', 'right')]
    """
    if not callable(callback):
        raise UserError(f"on_label takes a function (result, label), not {type(callback).__name__}")
    with _lock:
        _callbacks.append(callback)

    def remove() -> None:
        with _lock:
            if callback in _callbacks:
                _callbacks.remove(callback)

    return remove


def label_lock() -> threading.Lock:
    """The lock held while a label is added (its run's labels and its transcript file updated)."""
    return _lock


def tell(result: Any, label: Label) -> None:
    """Call every :func:`on_label` callback with ``(result, label)``; each failure is a warning."""
    with _lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        try:
            callback(result, label)
        except Exception as exc:  # a store that failed must not lose the label, nor stop the others
            name = getattr(callback, "__qualname__", type(callback).__name__)
            why = Redactor().redact(str(exc))  # a store's error may quote its URL, key and all
            warnings.warn(
                f"a label callback ({name}) raised {type(exc).__name__}: {why}; the label is kept",
                LabelWarning,
                stacklevel=3,
            )
