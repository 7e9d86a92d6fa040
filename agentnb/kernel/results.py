"""What a code step returns: :class:`CodeResult` (what a cell would show) and the text the model reads.

Shared by ``run_python`` in the user's kernel (:mod:`agentnb.kernel.code`) and in a sandbox
kernel: each fills a :class:`CodeResult`; :func:`render_code` turns it into the tool's text
(the value through the rich-result path every tool uses, so a figure is attached as an image
and a DataFrame becomes a table), and :meth:`CodeResult.structured` into the JSON kept on the
``tool_finished`` event (the trace lists the names changed from it).

>>> r = CodeResult(stdout="hi\\n", value=42, has_value=True, names=(NameChange("x", "new", "int"),))
>>> print(render_code(r))
stdout:
hi
value:
42
names changed: x (new, int)
>>> r.structured()["names"]
[{'name': 'x', 'change': 'new', 'type': 'int'}]
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agentnb.tools.rendering import render_value

#: Names listed in a result at most (the count of the rest is given).
MAX_NAMES = 30


@dataclass(frozen=True, slots=True)
class NameChange:
    """A variable the code created, rebound or deleted, with its type's name."""

    name: str
    change: Literal["new", "changed", "deleted"]
    type: str


@dataclass(frozen=True, slots=True)
class CodeResult:
    """What running code showed, as a cell shows it.

    ``value`` is the last expression's value (``has_value`` says whether there was one: ``None``
    is a value; a str shows as its repr, as in a cell); ``value_text`` its text when it was
    rendered elsewhere (in a sandbox process), used as it is; ``error`` the exception's one line (``"ZeroDivisionError: division by zero"``)
    and ``traceback`` its frames in the code only; ``stopped`` why the code did not finish (a
    timeout, a Stop), ``cut`` how many characters of output were not kept.
    """

    stdout: str = ""
    stderr: str = ""
    value: Any = None
    has_value: bool = False
    error: str | None = None
    traceback: str | None = None
    names: tuple[NameChange, ...] = ()
    stopped: str | None = None
    cut: int = 0
    duration: float = 0.0
    value_text: str | None = None

    def structured(self) -> dict[str, Any]:
        """The JSON kept on the ``tool_finished`` event (no value object: its text is the result)."""
        return {
            "kind": "code",
            "error": self.error,
            "stopped": self.stopped,
            "names": [{"name": n.name, "change": n.change, "type": n.type} for n in self.names],
            "cut": self.cut,
        }


def render_code(result: CodeResult, ctx: Any = None) -> str:
    """The text the model reads for ``result``; a picture value is attached to ``ctx``."""
    parts: list[str] = []
    if result.stdout:
        parts.append("stdout:\n" + result.stdout.rstrip("\n"))
    if result.stderr:
        parts.append("stderr:\n" + result.stderr.rstrip("\n"))
    if result.cut:
        parts.append(f"[output cut: {result.cut:,} more characters were printed and not kept]")
    if result.value_text is not None:
        parts.append("value:\n" + result.value_text)
    elif result.has_value:
        parts.append("value: None" if result.value is None else "value:\n" + _value_text(result.value, ctx))
    if result.error is not None:
        parts.append(f"error: {result.error}" + (f"\n{result.traceback}" if result.traceback else ""))
    if result.stopped is not None:
        parts.append(f"stopped: {result.stopped}")
    if result.names:
        parts.append("names changed: " + names_text(result.names))
    if not parts:
        return "(the code ran and showed nothing)"
    return "\n".join(parts)


def _value_text(value: Any, ctx: Any) -> str:
    if isinstance(value, str):  # as a cell shows it: quoted, escapes visible
        from agentnb.tools.running import safe_repr

        return safe_repr(value)
    return render_value(value, ctx)


def names_text(names: tuple[NameChange, ...]) -> str:
    """``x (new, int), df (changed, DataFrame)``, bounded."""
    shown = ", ".join(f"{n.name} ({n.change}{', ' + n.type if n.type else ''})" for n in names[:MAX_NAMES])
    return shown + (f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")


def identities(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow snapshot of the namespace (name -> the object itself, no copy of any value),
    compared by identity afterwards; taken and compared by C loops (a 10,000-name namespace costs
    well under a millisecond)."""
    return dict(namespace)


def names_changed(before: Mapping[str, Any], namespace: Mapping[str, Any]) -> tuple[NameChange, ...]:
    """The public names created, rebound or deleted since ``before`` (:func:`identities`), by name.

    A change inside a mutable value (``xs.append(1)``) keeps the identity and is not listed.

    >>> ns = {"a": 1, "b": 2}
    >>> before = identities(ns)
    >>> ns.update(a=10, c=[]); del ns["b"]
    >>> [(n.name, n.change) for n in names_changed(before, ns)]
    [('a', 'changed'), ('b', 'deleted'), ('c', 'new')]
    """
    keys = list(before)
    flagged = itertools.compress(keys, map(operator.is_not, map(namespace.get, keys), map(before.__getitem__, keys)))
    out, deleted = [], 0
    for n in flagged:  # rebound or deleted (or bound to None from elsewhere): few
        if n in namespace:
            out.append(NameChange(n, "changed", type(namespace[n]).__name__))
        else:
            out.append(NameChange(n, "deleted", ""))
            deleted += 1
    if len(namespace) != len(keys) - deleted:  # new names (a set difference only then)
        out += [NameChange(n, "new", type(namespace[n]).__name__) for n in namespace.keys() - before.keys()]
    return tuple(sorted((c for c in out if not c.name.startswith("_")), key=lambda c: c.name))
