"""A griffe extension for agentnb's site: its docstrings as the API reference shows them.

agentnb's docstrings are written for ``help()`` and doctest, in reST's inline roles
(``:class:`~agentnb.Agent```) with ``>>>`` examples. The reference renders them as Markdown, where
``['user', 'tool']`` in an example's output would read as a link and a role as noise: each run of
``>>>`` lines (with its expected output) becomes a fenced ``pycon`` block, and each role the
name it points to, as code. The docstrings themselves are not changed (doctest reads them).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|py:\w+):`~?([^`]+)`")


def markdown(text: str) -> str:
    r"""``text`` with its doctest runs fenced and its reST roles as code.

    >>> markdown("Run it:\n\n>>> [1]\n[1]\n\nSee :func:`~agentnb.run`.").split("\n")
    ['Run it:', '', '```pycon', '>>> [1]', '[1]', '```', '', 'See `run`.']
    """
    out: list[str] = []
    fence: str | None = None  # the indent of the open example block
    for line in text.split("\n"):
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if fence is None and stripped.startswith(">>>"):
            fence = indent
            out.append(f"{indent}```pycon")
        elif fence is not None and not stripped:
            out.append(f"{fence}```")
            fence = None
        out.append(line)
    if fence is not None:
        out.append(f"{fence}```")
    text = "\n".join(out)
    return ROLE.sub(lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`", text)


class MarkdownDocstrings(griffe.Extension):
    """Rewrite each docstring for the site as :func:`markdown` says."""

    def on_object(self, *, obj: Any, loader: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
