"""Where the end of a partial JSON call stands, read as it is decoded: inside a key or a value,
which containers are open, where the value being written starts (:func:`scan`), and that value's
text so far (:func:`value_so_far`). Steering (:mod:`agentnb.providers.guidance.steer`), list and
optional handling read it token by token.

>>> scan('{"a": ["x", "y').closer(), scan('{"a": [1').closer()
('"', ']')
>>> value_so_far('{"name": "f", "arguments": {"xs": ["a", "b')
('a, b', 'list-string')
>>> value_so_far('{"name": "f", "arguments": {"n": ')
('', 'start')
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Scan", "scan", "value_so_far"]


@dataclass
class Scan:
    """Where the end of a partial JSON text stands (see :func:`scan`)."""

    #: The open containers, outermost first: ``"{"`` or ``"["``.
    stack: list[str] = field(default_factory=list)
    in_string: bool = False
    #: The open string is a key.
    is_key: bool = False
    #: Where the value being written starts (for an array: just after ``[``); None between values.
    start: int | None = None
    #: After ``:``, before the value's first character.
    expect_value: bool = False

    def closer(self) -> str:
        """The character that closes the innermost open thing: ``"``, ``]``, ``}`` or ``""``."""
        if self.in_string:
            return '"'
        return {"{": "}", "[": "]"}[self.stack[-1]] if self.stack else ""


def scan(text: str) -> Scan:
    """Read the partial JSON ``text`` far enough to know what is being written at its end."""
    state = Scan()
    stack = state.stack
    escaped = False
    for i, ch in enumerate(text):
        if state.in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                state.in_string = False
                if not state.is_key and (not stack or stack[-1] != "["):
                    state.start = None
            continue
        if ch == '"':
            state.in_string = True
            state.is_key = bool(stack) and stack[-1] == "{" and not state.expect_value
            if not state.is_key and state.start is None:
                state.start = i + 1
            state.expect_value = False
        elif ch in "{[":
            stack.append(ch)
            state.start = i + 1 if ch == "[" else None
            state.expect_value = False
        elif ch in "}]":
            if stack:
                stack.pop()
            state.start = None
            state.expect_value = False
        elif ch == ":":
            state.expect_value = True
        elif ch == ",":
            if stack and stack[-1] == "{":
                state.start = None
        elif not ch.isspace() and state.start is None and state.expect_value:
            state.start = i
            state.expect_value = False
    return state


def value_so_far(text: str) -> tuple[str, str] | None:
    """The argument value being written at the end of the partial JSON ``text``, or None.

    Returns ``(value, where)``: the value's text so far (for an array, everything since ``[``,
    without quotes) and where the text stands: ``"string"`` (inside a string value),
    ``"number"`` (a scalar outside strings), ``"list"`` / ``"list-string"`` (in an array, outside
    or inside one of its strings), or ``"start"`` (a value is about to begin). None while a key
    or the punctuation between values is written.
    """
    state = scan(text)
    if state.in_string and state.is_key:
        return None
    if state.start is None:
        return ("", "start") if state.expect_value else None
    in_list = bool(state.stack) and state.stack[-1] == "["
    where = ("list-string" if state.in_string else "list") if in_list else ("string" if state.in_string else "number")
    return text[state.start :].replace('"', ""), where
