r"""Parameter descriptions from docstrings: Google (``Args:``) and NumPy (``Parameters``) styles
(used by :mod:`agentnb.tools.definition` to describe a function's parameters to the model).

>>> parse_docstring("Say hi.\n\nArgs:\n    name: who to greet")
('Say hi.', {'name': 'who to greet'})
"""

from __future__ import annotations

import inspect
import re

_GOOGLE_ARGS = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_GOOGLE_OTHER = re.compile(
    r"^(Returns?|Yields?|Raises?|Examples?|Notes?|See Also|References|Attributes|Warnings?)\s*:\s*$"
)
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^(\w+)\s*(:.*)?$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Understands Google (``Args:``) and NumPy (``Parameters`` / ``----------``) sections.

    >>> parse_docstring('''Add numbers.
    ...
    ... Args:
    ...     a: the first
    ...     b (int): the second,
    ...         continued
    ... ''')
    ('Add numbers.', {'a': 'the first', 'b': 'the second, continued'})
    """
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    i = 0
    in_summary = True
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _GOOGLE_ARGS.match(stripped):
            in_summary = False
            i = _read_google(lines, i + 1, params)
            continue
        if nxt and set(nxt) == {"-"} and stripped:  # a NumPy section header
            in_summary = False
            if stripped.lower() in ("parameters", "params", "arguments", "args"):
                i = _read_numpy(lines, i + 2, params)
                continue
            i += 2
            continue
        if _GOOGLE_OTHER.match(stripped):
            in_summary = False
        if in_summary:
            summary.append(stripped)
        i += 1
    return " ".join(" ".join(summary).split()) if summary else "", params


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _read_google(lines: list[str], i: int, params: dict[str, str]) -> int:
    base: int | None = None
    current: str | None = None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        ind = _indent(line)
        if base is None:
            if ind == 0:
                return i
            base = ind
        if ind < base:
            return i
        m = _GOOGLE_ITEM.match(line.strip()) if ind == base else None
        if m:
            current = m.group(1).lstrip("*")
            params[current] = m.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
        i += 1
    return i


def _read_numpy(lines: list[str], i: int, params: dict[str, str]) -> int:
    current: str | None = None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _indent(line) == 0:
            if nxt and set(nxt) == {"-"}:
                return i  # the next section
            m = _NUMPY_ITEM.match(line.strip())
            if not m:
                return i
            current = m.group(1)
            params[current] = ""
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
        i += 1
    return i
