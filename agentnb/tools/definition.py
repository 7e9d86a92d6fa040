"""Tools: the ``@tool`` decorator, the :class:`Tool` type, argument validation.

>>> from typing import Literal
>>> @tool
... def weather(city: str, unit: Literal["c", "f"] = "c") -> str:
...     '''Current weather for a city.
...
...     Args:
...         city: the city name
...         unit: temperature unit
...     '''
...     return f"12 {unit} in {city}"
>>> weather.parameters["required"]
['city']
>>> weather.validate({"city": "Paris", "unit": "k"})
["unit: 'k' is not one of ['c', 'f']"]
>>> weather("Oslo")
'12 c in Oslo'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, overload, runtime_checkable

from agentnb.errors import ToolDefinitionError
from agentnb.tools.context import ToolContext, ToolExample
from agentnb.tools.kinds import collecting, is_async_callable, refusal, yields
from agentnb.tools.rendering import render_value
from agentnb.tools.signature import read_signature, signature_text
from agentnb.tools.validate import conversion_errors, describe_error

__all__ = ["Tool", "ToolContext", "ToolExample", "ToolSource", "coerce_tools", "render_result", "tool"]

if TYPE_CHECKING:
    pass


class _Uncompiled:
    def __reduce__(self) -> str:  # a pickled copy (a tool sent to a Ray worker) is this same sentinel
        return "_UNCOMPILED"


_UNCOMPILED = _Uncompiled()
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


class Tool:
    """A callable the model can ask for, with its name, description and JSON Schema.

    Build one with :func:`tool`; the constructor takes an explicit schema.

    >>> lookup = Tool(
    ...     "lookup",
    ...     "Look a word up.",
    ...     {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    ...     lambda word: f"{word}: a word",
    ... )
    >>> lookup.validate({}), lookup.validate({"word": "cat"})
    (["'word' is a required property"], [])
    >>> lookup("cat")
    'cat: a word'
    """

    __slots__ = (
        "name",
        "description",
        "parameters",
        "fn",
        "is_async",
        "invoke",
        "direct_output",
        "allow_repeat",
        "requires_approval",
        "timeout",
        "max_result_chars",
        "examples",
        "context_param",
        "defaults",
        "source",
        "_validator",
        "_fast",
        "_converters",
        "_fills",
    )

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any] | None = None,
        fn: Callable[..., Any] | None = None,
        *,
        direct_output: bool = False,
        allow_repeat: bool = False,
        requires_approval: bool = False,
        timeout: float | None = None,
        max_result_chars: int | None = None,
        examples: Iterable[Any] = (),
        context_param: str | None = None,
        converters: Mapping[str, Callable[[Any], Any]] | None = None,
        problems: list[str] | None = None,
        source: str | None = None,
    ) -> None:
        problems = list(problems or ())
        if not name or not set(name) <= _NAME_OK or len(name) > 64:
            problems.append(f"name {name!r} must be 1-64 letters, digits, '_' or '-'")
        if not description:
            problems.append("no description: add a docstring or pass description=...")
        # Imported here: with jupyter's format extras installed, importing jsonschema takes
        # about a second, which `import agentnb` should not pay.
        import jsonschema

        params = dict(parameters) if parameters is not None else _empty_object()
        if params.get("type") != "object":
            problems.append("parameters schema must have type 'object'")
        try:
            validator_cls = jsonschema.validators.validator_for(params, jsonschema.Draft202012Validator)
            validator_cls.check_schema(params)
            self._validator = validator_cls(params)
        except jsonschema.SchemaError as exc:
            problems.append(f"parameters is not a valid JSON Schema: {exc.message}")
        if timeout is not None and not timeout > 0:
            problems.append(f"timeout must be a positive number of seconds, not {timeout!r}")
        if max_result_chars is not None and (not isinstance(max_result_chars, int) or max_result_chars < 1):
            problems.append(f"max_result_chars must be a whole number >= 1, not {max_result_chars!r}")
        if fn is not None and not callable(fn):
            problems.append(f"fn must be callable, not {type(fn).__name__}")
        self.name = name
        self.description = description
        self.parameters = params
        self.fn = fn
        kind = yields(fn) if fn is not None else None
        #: What a call runs: ``fn``, or for a generator function, one that lists what it yields.
        self.invoke = collecting(fn, kind) if fn is not None and kind else fn
        self.is_async = fn is not None and (kind == "async" or is_async_callable(fn))
        self.direct_output = direct_output
        self.allow_repeat = allow_repeat
        #: A call of this tool never runs without a decision (see :mod:`agentnb.control.approval`).
        self.requires_approval = requires_approval
        self.timeout = timeout
        #: Bound on the characters of a result the model reads (None: the agent's bound).
        self.max_result_chars = max_result_chars
        self.context_param = context_param
        #: Where the tool comes from when not from Python (``"mcp:SERVER"``); shown in traces.
        self.source = source
        props = params.get("properties")
        #: Schema defaults, so ``{"city": "Paris"}`` and ``{"city": "Paris", "unit": "c"}``
        #: are recognised as the same call.
        self.defaults = {
            k: v["default"]
            for k, v in (props.items() if isinstance(props, dict) else ())
            if isinstance(v, dict) and "default" in v
        }
        self._converters = dict(converters or {})
        #: Python defaults to pass for omitted arguments (a ``Field(...)`` default is not a value).
        self._fills: dict[str, Any] = {}
        self._fast: Any = _UNCOMPILED  # compiled on first use (agentnb.tools.validate)
        self.examples = tuple(self._coerce_examples(examples, problems))
        if problems:
            raise ToolDefinitionError(name, problems)

    # --- construction --------------------------------------------------------------------

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        **options: Any,
    ) -> Tool:
        """Build a tool from a typed function; its docstring gives the descriptions."""
        problems: list[str] = []
        sig = read_signature(fn, problems)
        made = cls(
            str(name or sig.name),
            description if description is not None else sig.summary,
            sig.schema,
            fn,
            context_param=sig.context_param,
            converters=sig.converters,
            problems=problems,
            **options,
        )
        made._fills = sig.fills
        return made

    @classmethod
    def from_openai(cls, spec: Mapping[str, Any], fn: Callable[..., Any] | None = None, **options: Any) -> Tool:
        """Build a tool from an OpenAI-format dict ``{"type": "function", "function": {...}}``."""
        problems: list[str] = []
        func = spec.get("function", spec) if spec.get("type", "function") == "function" else None
        if not isinstance(func, Mapping):
            raise ToolDefinitionError(str(spec.get("name", "?")), ["expected {'type': 'function', 'function': {...}}"])
        parameters = func.get("parameters")
        if parameters is None:
            problems.append("function has no 'parameters' schema")
        name = str(func.get("name") or "")
        return cls(name, str(func.get("description") or ""), parameters, fn, problems=problems, **options)

    def _coerce_examples(self, examples: Iterable[Any], problems: list[str]) -> Iterable[ToolExample]:
        for i, ex in enumerate(examples):
            if isinstance(ex, ToolExample):
                query, args = ex.query, ex.arguments
            elif isinstance(ex, Mapping) and "query" in ex:
                query, args = ex["query"], ex.get("arguments", {})
            elif isinstance(ex, (tuple, list)) and len(ex) == 2:
                query, args = ex
            else:
                problems.append(f"example {i}: expected (query, arguments) or {{'query':..., 'arguments':...}}")
                continue
            if hasattr(self, "_validator"):
                for err in self.validate(args):
                    problems.append(f"example {i} ({query!r}): {err}")
            yield ToolExample(str(query), dict(args))

    # --- use ------------------------------------------------------------------------------

    def validate(self, arguments: Any) -> list[str]:
        """Every way ``arguments`` breaks the schema, as sentences for the model; ``[]`` if valid."""
        fast = self._fast
        if fast is _UNCOMPILED:
            from agentnb.tools.validate import fast_validator

            fast = self._fast = fast_validator(self.parameters)
        if fast is not None and fast(arguments):
            errors: list[str] = []
        else:
            errors = sorted(describe_error(e) for e in self._validator.iter_errors(arguments))
        if errors or not self._converters or not isinstance(arguments, Mapping):
            return errors
        # Building the Python values can fail too (a pydantic validator): say so before running.
        for name, convert in self._converters.items():
            if name in arguments:
                try:
                    convert(arguments[name])
                except Exception as exc:
                    errors.extend(conversion_errors(name, exc))
        return errors

    def prepare(self, arguments: Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """Validated JSON arguments -> the keyword arguments the function takes."""
        if not self._converters and not self.context_param:
            return dict(arguments)
        kwargs = {k: self._converters[k](v) if k in self._converters else v for k, v in arguments.items()}
        for name, value in self._fills.items():
            kwargs.setdefault(name, value)
        if self.context_param:
            kwargs[self.context_param] = ctx
        return kwargs

    def openai_schema(self) -> dict[str, Any]:
        """This tool as an OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fn is None:
            raise TypeError(f"tool {self.name!r} has no Python implementation")
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        """The signature (JSON Schema types, defaults) and the description's first line.

        >>> Tool("add", "Add two integers.\\n\\nMore.", {"type": "object", "properties": {
        ...     "a": {"type": "integer"}, "b": {"type": "integer", "default": 1}}, "required": ["a"]})
        <Tool add(a: integer, b: integer = 1): Add two integers.>
        """
        return f"<Tool {signature_text(self.name, self.parameters, self.description)}>"


def _empty_object() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


def render_result(value: Any, ctx: ToolContext | None = None) -> str:
    """A tool's return value as the text the model reads (see :mod:`agentnb.tools.rendering`).

    Images, PIL images and matplotlib figures are attached to ``ctx`` for the model to see;
    numpy values become numbers, arrays and DataFrames a bounded table.
    """
    if isinstance(value, str):
        return value
    if type(value) is int:  # the JSON of an int is its str, without building an encoder
        return str(value)
    return render_value(value, ctx)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(fn: Mapping[str, Any], /, **options: Any) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = ...,
    description: str | None = ...,
    direct_output: bool = ...,
    allow_repeat: bool = ...,
    requires_approval: bool = ...,
    timeout: float | None = ...,
    max_result_chars: int | None = ...,
    examples: Iterable[Any] = ...,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(fn: Any = None, /, **options: Any) -> Any:
    """Turn a typed function (sync or async) into a :class:`Tool`.

    Use bare (``@tool``) or with options (``@tool(direct_output=True, timeout=5)``).
    An OpenAI-format dict is accepted too: ``tool({"type": "function", ...}, fn=handler)``.
    Options: ``name``, ``description``, ``direct_output``, ``allow_repeat``,
    ``requires_approval`` (no call runs without a decision: :mod:`agentnb.control.approval`), ``timeout``
    (seconds), ``max_result_chars`` (how much of a result the model reads; default: the
    agent's), ``examples`` (``[(query, arguments), ...]``).

    >>> @tool(timeout=5)
    ... def add(a: int, b: int = 0) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> add.name, add.parameters["required"], add.timeout, add(2, 3)
    ('add', ['a'], 5, 5)
    """
    if fn is None:
        return lambda f: Tool.from_function(f, **options)
    if isinstance(fn, Tool):
        return fn
    if isinstance(fn, Mapping):
        return Tool.from_openai(fn, **options)
    why = refusal(fn, named=bool(options.get("name")))
    if why is not None:  # an Agent, a class, a string, None...: say what to pass instead
        label = options.get("name") or (fn if isinstance(fn, str) else getattr(fn, "__name__", None))
        raise ToolDefinitionError(str(label or type(fn).__name__), [why])
    return Tool.from_function(fn, **options)


@runtime_checkable
class ToolSource(Protocol):
    """Anything that supplies tools, such as :class:`agentnb.mcp.MCPServer`."""

    def tools(self) -> Iterable[Tool]: ...


def _expand(tools: Iterable[Any]) -> Iterable[Any]:
    for t in tools:
        if isinstance(t, ToolSource) and not isinstance(t, Tool) and callable(t.tools):  # (an Agent's is a dict)
            yield from t.tools()
        elif isinstance(t, (list, tuple)):  # e.g. server.tools(prefix=...) inside a list
            yield from _expand(t)
        else:
            yield t


def coerce_tools(tools: Iterable[Any]) -> dict[str, Tool]:
    """Tools (or plain functions, OpenAI dicts, tool sources) by name; two different tools with
    one name are an error, the same one listed twice (``tools=[*common, add]``) is one tool."""
    out: dict[str, Tool] = {}
    given: dict[str, Any] = {}  # what each name was made from
    for raw in _expand(tools):
        if raw is None:  # tool(None) would be the bare decorator
            raise ToolDefinitionError("None", [str(refusal(None))])
        t = tool(raw)
        if t.name in out and given[t.name] is raw:
            continue
        given[t.name] = raw
        if t.name in out:
            hint = (
                " (give one MCP server a prefix: server.tools(prefix='x_'))" if t.source or out[t.name].source else ""
            )
            raise ToolDefinitionError(t.name, [f"two tools have this name{hint}"])
        out[t.name] = t
    return out
