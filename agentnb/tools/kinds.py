"""What ``tools=[...]`` accepts: each kind of value becomes a tool or gets one clear error.

A function, a bound method, a :func:`functools.partial` and an object with a typed
``__call__`` become tools; an :class:`~agentnb.Agent`, a class, a module, a string, ``None``
and other values that cannot be called as a tool are refused with a sentence that says what to
pass instead.

>>> import functools
>>> def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> parts = callable_parts(functools.partial(add, b=1))
>>> parts.name, [p.name for p in parts.parameters]
('add', ['a'])
>>> refusal("add")
"'add' is a string, not a tool: pass the function itself (tools=[add]), not its name"
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CallableParts:
    """What a tool is built from: a name, a docstring, type hints and the parameters."""

    name: str
    doc: str
    hints: dict[str, Any]
    parameters: tuple[inspect.Parameter, ...]


def refusal(value: Any, *, named: bool = False) -> str | None:
    """Why ``value`` cannot become a tool (one sentence), or None when it may.

    ``named``: the caller gave the tool a name, so a lambda is acceptable.

    >>> refusal(None)
    'None is not a tool: pass a function, a Tool, an OpenAI tool dict or an MCP server'
    >>> refusal(len) is None
    True
    """
    agent = sys.modules.get("agentnb.run.agent")
    if agent is not None and isinstance(getattr(value, "__self__", value), agent.Agent):
        what = "an Agent" if isinstance(value, agent.Agent) else f"an Agent's {value.__name__} method"
        return (
            f"{what} is not a tool: wrap the agent with agent.as_tool(...) so that another agent can call it "
            "(tools=[agent.as_tool(name=..., description=...)])"
        )
    if value is None:
        return "None is not a tool: pass a function, a Tool, an OpenAI tool dict or an MCP server"
    if isinstance(value, str):
        return f"{value!r} is a string, not a tool: pass the function itself (tools=[{value}]), not its name"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__!r} is not a tool: pass the functions in it (tools=[{value.__name__}.some_function])"
    if isinstance(value, type):
        return (
            f"class {value.__name__} is not a tool: pass a function or a method "
            f"(or an instance, when {value.__name__} defines a typed __call__)"
        )
    if not callable(value):
        return f"{type(value).__name__} value {_short(value)} is not a tool: pass a function, a Tool or an OpenAI tool dict"
    if getattr(value, "__name__", None) == "<lambda>" and not named:
        return (
            "a lambda has no name, docstring or type annotations: write it with def (typed parameters and "
            "a docstring), or pass tool(fn, name=..., description=...)"
        )
    return None


def callable_parts(fn: Callable[..., Any], problems: list[str] | None = None) -> CallableParts:
    """The name, docstring, type hints and parameters to build a tool from ``fn``.

    A ``functools.partial`` is described by the function it wraps, less the arguments it
    fixes; an object with ``__call__`` by that method (its name from the class, in snake case).
    Unresolvable hints are appended to ``problems``.
    """
    problems = problems if problems is not None else []
    target: Any = fn
    name = getattr(fn, "__name__", None)
    doc = fn.__doc__ if inspect.isroutine(fn) else None  # an instance's __doc__ is its class's
    fixed: set[str] = set()
    while isinstance(target, functools.partial):
        fixed |= set(target.keywords)
        target = target.func
        name = name or getattr(target, "__name__", None)
        doc = doc or target.__doc__
    if not inspect.isroutine(target) and not isinstance(target, type) and callable(target):
        call = type(target).__call__  # a callable object: its __call__ holds the hints
        name = name or _snake(type(target).__name__)
        own = call.__doc__ if call.__doc__ != type.__call__.__doc__ else None
        doc = doc or own or type(target).__doc__
        target = call
    try:
        hints = inspect.get_annotations(target, eval_str=True)
    except Exception as exc:
        problems.append(f"cannot resolve type hints ({exc})")
        hints = {}
    try:
        params = tuple(p for p in inspect.signature(fn).parameters.values() if p.name not in fixed)
    except (TypeError, ValueError) as exc:  # a builtin without a signature
        problems.append(f"cannot read its signature ({exc})")
        params = ()
    return CallableParts(str(name or ""), doc or "", hints, params)


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine (async functions, partials of them, objects
    with an ``async def __call__``)."""
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isroutine(fn) or isinstance(fn, type) or not callable(fn):
        return False
    return inspect.iscoroutinefunction(type(fn).__call__)


def yields(fn: Any) -> str | None:
    """``"sync"`` or ``"async"`` when calling ``fn`` returns a generator (generator functions,
    partials and methods of them, objects whose ``__call__`` is one); else None.

    >>> def count(n: int):
    ...     yield from range(n)
    >>> yields(count), yields(len)
    ('sync', None)
    """
    if callable(fn) and not (inspect.isroutine(fn) or isinstance(fn, (type, functools.partial))):
        fn = type(fn).__call__
    if inspect.isasyncgenfunction(fn):
        return "async"
    return "sync" if inspect.isgeneratorfunction(fn) else None


def collecting(fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
    """``fn``, a generator function, as one that returns the list of what it yields: a tool's
    result is that list (the model would otherwise read ``<generator object ...>``).

    >>> def count(n: int):
    ...     yield from range(n)
    >>> collecting(count, "sync")(n=3)
    [0, 1, 2]
    """
    if kind == "async":

        async def gather(*args: Any, **kwargs: Any) -> list[Any]:
            return [item async for item in fn(*args, **kwargs)]

        return gather

    def collect(*args: Any, **kwargs: Any) -> list[Any]:
        return list(fn(*args, **kwargs))

    return collect


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"
