"""What UnTooled lets through while a reply streams, and calls found where none were offered.

:class:`ProseGate` passes prose on as it arrives and holds back anything that may turn out to
be a JSON call; :func:`stray_calls` reads a reply that is nothing but a call when no tools were
offered (a model imitating its earlier turns after the tool-call limit).

>>> gate = ProseGate()
>>> gate.feed("It is "), gate.feed("5."), gate.rest()
('It is ', '5.', '')
>>> gate = ProseGate()
>>> gate.feed('{"name": "add"'), gate.rest()
('', '{"name": "add"')
"""

from __future__ import annotations

from collections.abc import Callable

from agentnb.messages import ToolCall
from agentnb.providers.untooled.parse import parse_reply


class ProseGate:
    """Lets prose through as it streams, holding back anything that may turn out to be a call."""

    def __init__(self) -> None:
        self.buffer = ""
        self.sent = 0
        self.started = False  # prose has begun (leading whitespace skipped)
        self.holding = False

    def feed(self, piece: str) -> str:
        self.buffer += piece
        if self.holding:
            return ""
        s = self.buffer
        if not self.started:
            body = s.lstrip()
            if not body:
                return ""
            if body[0] in "{[`":  # the reply may be a call: wait for all of it
                self.holding = True
                return ""
            self.started = True
            self.sent = len(s) - len(body)
        stops = [i for i in (s.find("{", self.sent), s.find("```", self.sent)) if i >= 0]
        if stops:  # a call may follow a preamble
            self.holding = True
            end = min(stops)
        else:
            end = len(s.rstrip("`"))  # a fence may be starting
        out = s[self.sent : end]
        self.sent = max(self.sent, end)
        return out

    def rest(self) -> str:
        """What was held back, once the reply turned out to be prose."""
        out = self.buffer[self.sent :]
        self.sent = len(self.buffer)
        return out.rstrip() if self.started else out.strip()


def stray_calls(text: str, new_id: Callable[[], str]) -> tuple[str | None, tuple[ToolCall, ...]]:
    """The calls a reply starts with when no tools were offered, and the prose after them.

    A reply that is nothing but a call, or a call followed by more JSON (a small model writing
    on, e.g. ``{"type": "tool results above"}``), is ``(None, calls)``; a call followed by prose
    keeps that prose; any other reply is ``(text, ())``.

    >>> ids = iter(range(1, 99))
    >>> stray_calls('{"name": "add", "arguments": {"a": 1}}\\n{"type": "x"}', lambda: f"c{next(ids)}")
    (None, (ToolCall(id='c1', name='add', arguments={'a': 1}, raw_arguments=None, parse_error=None),))
    >>> stray_calls('{"name": "add", "arguments": {}} It is 3.', lambda: f"c{next(ids)}")[0]
    'It is 3.'
    >>> stray_calls("It is 3.", lambda: "c")
    ('It is 3.', ())
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return text or None, ()

    prose, calls = parse_reply(stripped, [], strict=True, new_id=new_id)
    if not calls or not all(c.name and c.arguments is not None for c in calls):
        return text, ()
    return prose, calls
