"""``@name`` in a prompt: the description of a notebook variable, attached to the prompt.

``@df`` (or ``@df.price``, an attribute path) that names one of the user's variables appends
``describe(df)`` to the prompt, in a fenced block after a fixed heading, so the model reads the
data and a view can fold it (:func:`split_mentions`). An ``@`` followed by anything else (no such
variable, a private name, a module) is left as typed, and one preceded by a letter, a digit, a
dot or another ``@`` is no mention: ``me@example.com`` stays an address.

>>> prompt = with_mentions("Why is @cfg odd? Ask me@example.com or @nobody.", {"cfg": {"lr": -1}})
>>> print(prompt)
Why is @cfg odd? Ask me@example.com or @nobody.
<BLANKLINE>
The notebook's variables mentioned above, as describe() shows them:
<BLANKLINE>
```mention @cfg
cfg: dict of 1 str -> int
  'lr': -1
```
>>> split_mentions(prompt)
('Why is @cfg odd? Ask me@example.com or @nobody.', [('cfg', "cfg: dict of 1 str -> int\\n  'lr': -1")])
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Any

from agentnb.kernel.describe import describe
from agentnb.kernel.names import KernelReadError, check_name, resolve

#: Mentions attached to one prompt at most (each at most describe's MAX_CHARS).
MAX_MENTIONS = 10
HEADING = "The notebook's variables mentioned above, as describe() shows them:"
_MENTION = re.compile(r"(?<![\w.@])@([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)")
_BLOCK = re.compile(r"(`{3,})mention @(\S+)\n(.*?)\n\1(?:\n|$)", re.S)
_TICKS = re.compile(r"`+")


def find_mentions(text: str, namespace: Mapping[str, Any], hidden: Mapping[str, Any] | None = None) -> list[str]:
    """The paths ``@``-mentioned in ``text`` that name a user's variable (or its attribute), each once.

    ``@df.price`` is ``df.price`` when ``df`` has such an attribute, else ``df`` (the sentence
    went on: ``@df.``); a private name, a module or a missing name is no mention.

    >>> find_mentions("see @a.real, @a. and @b, @_c", {"a": 1, "_c": 3})
    ['a.real', 'a']
    """
    found: list[str] = []
    for match in _MENTION.finditer(text):
        parts = match.group(1).split(".")
        for k in range(len(parts), 0, -1):
            path = ".".join(parts[:k])
            if _exists(namespace, path, hidden):
                if path not in found:
                    found.append(path)
                break
        if len(found) >= MAX_MENTIONS:
            break
    return found


def with_mentions(
    prompt: str,
    namespace: Mapping[str, Any],
    hidden: Mapping[str, Any] | None = None,
    *,
    mentioned: list[str] | None = None,
) -> str:
    """``prompt`` with the description of each variable it mentions appended (none: unchanged).

    ``mentioned`` gives paths found earlier (in the text as typed, before ``{name}`` was filled).
    """
    paths = find_mentions(prompt, namespace, hidden) if mentioned is None else mentioned
    blocks = []
    for path in paths:
        try:
            body = describe(resolve(namespace, path, hidden), path)
        except KernelReadError:  # gone, or it failed to read since it was found
            continue
        fence = "`" * max(3, 1 + max((len(t) for t in _TICKS.findall(body)), default=0))
        blocks.append(f"{fence}mention @{path}\n{body}\n{fence}")
    if not blocks:
        return prompt
    return f"{prompt}\n\n{HEADING}\n\n" + "\n\n".join(blocks)


def split_mentions(prompt: str) -> tuple[str, list[tuple[str, str]]]:
    """``(typed prompt, [(path, description), ...])`` of a prompt made by :func:`with_mentions`."""
    head, sep, tail = prompt.rpartition(f"\n\n{HEADING}\n\n")
    if not sep:
        return prompt, []
    blocks = [(m.group(2), m.group(3)) for m in _BLOCK.finditer(tail)]
    return (head, blocks) if blocks else (prompt, [])


def _exists(namespace: Mapping[str, Any], path: str, hidden: Mapping[str, Any] | None) -> bool:
    name = path.partition(".")[0]
    try:
        check_name(namespace, name, hidden)
        if isinstance(namespace[name], types.ModuleType):
            return False
        if "." in path:
            resolve(namespace, path, hidden)
    except KernelReadError:
        return False
    return True
