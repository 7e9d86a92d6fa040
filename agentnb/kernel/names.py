"""Which names are the user's, and reading a name the model gave: a name, never an expression.

A *path* is a variable's name followed by attributes and keys: ``df``, ``df.price``,
``cfg["lr"]``, ``runs[0].score``. It is read with a small parser (nothing is evaluated), then
followed with ``getattr`` and ``[...]``, which is all a path inherently runs: a property or a
``__getattr__`` on the way runs, as it would in a cell, within :data:`~agentnb.kernel.bounded.REPR_SECONDS`.
Names and attributes that start with ``_`` are private and refused, so no path reaches
``__class__``, ``__globals__`` or ``__builtins__``.

>>> parse_path('cfg["lr"]'), parse_path("runs[-1].score")
(('cfg', ('key', 'lr')), ('runs', ('key', -1), ('attr', 'score')))
>>> resolve({"cfg": {"lr": 0.1}}, 'cfg["lr"]')
0.1
>>> resolve({"x": 1}, "__import__('os')")
Traceback (most recent call last):
...
agentnb.kernel.names.KernelReadError: "__import__('os')" is not a variable name: give a name (df), an attribute path (df.price) or a key (cfg["lr"]); expressions are not evaluated
"""

from __future__ import annotations

import ast
import re
import types
from collections.abc import Mapping
from typing import Any

from agentnb.kernel.bounded import TooSlow, plain, within
from agentnb.tools.running import exception_text

#: What IPython puts in a notebook's namespace, never the user's (also hidden by their names
#: outside IPython, where ``user_ns_hidden`` is not there to say so).
INTERNAL = frozenset({"In", "Out", "exit", "quit", "get_ipython"})
MAX_PATH = 200
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ATTR = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)")
_KEY = re.compile(r"\[\s*(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|-?\d+)\s*\]")

Step = tuple[str, Any]  # ("attr", "price") or ("key", "lr")


class KernelReadError(Exception):
    """A read the model asked for cannot be made (no such variable, a private one, an expression).

    The loop turns it into an error result the model reads; the message says what to ask instead.
    """


def user_names(namespace: Mapping[str, Any], hidden: Mapping[str, Any] | None = None) -> list[str]:
    """The user's variables in ``namespace``, in its order: no modules, no private or IPython names.

    ``hidden`` is IPython's ``user_ns_hidden`` (what IPython itself put there); a name in it is
    the user's again once rebound.

    >>> import os
    >>> user_names({"df": 1, "_x": 2, "os": os, "In": [], "f": len})
    ['df', 'f']
    """
    out = []
    for name, value in list(namespace.items()):
        if not isinstance(name, str) or name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if _internal(name, value, hidden):
            continue
        out.append(name)
    return out


def parse_path(text: str) -> tuple[Any, ...]:
    """``(name, step, ...)`` for a path; :class:`KernelReadError` for anything else."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_PATH:
        raise KernelReadError(_not_a_name(text))
    text = text.strip()
    head = _IDENT.match(text)
    if head is None:
        raise KernelReadError(_not_a_name(text))
    steps: list[Step] = []
    pos = head.end()
    while pos < len(text):
        attr = _ATTR.match(text, pos)
        key = _KEY.match(text, pos) if attr is None else None
        if attr is not None:
            steps.append(("attr", attr.group(1)))
            pos = attr.end()
        elif key is not None:
            steps.append(("key", ast.literal_eval(key.group(1))))
            pos = key.end()
        else:
            raise KernelReadError(_not_a_name(text))
    return (head.group(), *steps)


def resolve(namespace: Mapping[str, Any], text: str, hidden: Mapping[str, Any] | None = None) -> Any:
    """The value ``text`` names in ``namespace`` (see :func:`parse_path`)."""
    name, *steps = parse_path(text)
    check_name(namespace, name, hidden)
    value = namespace[name]
    shown = name
    for kind, part in steps:
        if kind == "attr" and part.startswith("_"):
            raise KernelReadError(f"{shown}.{part} is private: only public attributes are read")
        value = _step(value, kind, part, shown)
        shown += f".{part}" if kind == "attr" else f"[{part!r}]"
    return value


def check_name(namespace: Mapping[str, Any], name: str, hidden: Mapping[str, Any] | None = None) -> None:
    """Raise :class:`KernelReadError` unless ``name`` is one of the user's variables."""
    if name.startswith("_"):
        raise KernelReadError(f"{name!r} is private: names that start with '_' are not read")
    if name not in namespace:
        raise KernelReadError(f"no variable {name!r} in the notebook; list_variables() lists them")
    if _internal(name, namespace[name], hidden):
        raise KernelReadError(f"{name!r} is IPython's, not a variable of the notebook's")


def _internal(name: str, value: Any, hidden: Mapping[str, Any] | None) -> bool:
    """IPython's own name: by ``user_ns_hidden`` in IPython (a name rebound is the user's), else by name."""
    if hidden is None:
        return name in INTERNAL
    return name in hidden and hidden[name] is value


def _step(value: Any, kind: str, part: Any, shown: str) -> Any:
    what = f"{shown}.{part}" if kind == "attr" else f"{shown}[{part!r}]"
    try:
        if kind == "attr":
            return within(lambda: getattr(value, part), 1.0)
        return within(lambda: value[part], 1.0)
    except TooSlow:
        raise KernelReadError(f"reading {what} did not finish in 1 s") from None
    except (AttributeError, KeyError, IndexError) as exc:
        raise KernelReadError(f"{what} does not exist ({type(exc).__name__})") from None
    except Exception as exc:
        raise KernelReadError(f"reading {what} raised {plain(exception_text(exc))[:200]}") from None


def _not_a_name(text: Any) -> str:
    shown = repr(text) if not isinstance(text, str) or len(text) <= 80 else repr(text[:80]) + "…"
    return (
        f"{shown} is not a variable name: give a name (df), an attribute path (df.price) or a key "
        '(cfg["lr"]); expressions are not evaluated'
    )
