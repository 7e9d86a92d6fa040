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

import inspect
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, overload, runtime_checkable

from agentnb.docstrings import parse_docstring
from agentnb.errors import ToolDefinitionError
from agentnb.messages import Image
from agentnb.rendering import render_value
from agentnb.schema import (
    _json_default,
    _jsonable,
    converter_for,
    none_passes,
    nullable,
    schema_for,
)
from agentnb.toolkinds import callable_parts, is_async_callable, refusal

if TYPE_CHECKING:
    import jsonschema


class _Uncompiled:
    def __reduce__(self) -> str:  # a pickled copy (a tool sent to a Ray worker) is this same sentinel
        return "_UNCOMPILED"


_UNCOMPILED = _Uncompiled()
_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass(frozen=True, slots=True)
class ToolExample:
    """A few-shot example: a user request and the arguments the tool should get.

    The UnTooled prompt shows examples to text-only models; they are checked against the
    schema when the tool is built.

    >>> @tool(examples=[ToolExample("weather in Oslo?", {"city": "Oslo"})])
    ... def weather(city: str) -> str:
    ...     '''Current weather for a city.'''
    ...     return "sunny"
    >>> weather.examples[0].arguments
    {'city': 'Oslo'}
    """

    query: str
    arguments: dict[str, Any]


class ToolContext:
    """Passed to a tool that declares a parameter annotated ``ToolContext``.

    Lets the tool attach images for the model to see, or make its result the final answer.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider, call
    >>> @tool
    ... def report(ctx: ToolContext) -> str:
    ...     '''Write the report and end the run with it.'''
    ...     ctx.return_directly()
    ...     return f"report (call {ctx.call_id})"
    >>> Agent(ScriptedProvider([call("report")]), tools=[report]).run("go").output
    'report (call call_1)'
    """

    __slots__ = ("call_id", "name", "depth", "images", "direct", "structured", "caller")

    def __init__(self, call_id: str, name: str, depth: int) -> None:
        self.call_id = call_id
        self.name = name
        self.depth = depth
        self.images: list[Image] = []
        self.direct = False
        #: Machine-readable data that came with the result (an MCP tool's ``structuredContent``),
        #: kept on the ``ToolFinished`` event and in the transcript; the model reads the text.
        self.structured: Any = None
        #: For a tool that runs an agent (:meth:`agentnb.Agent.as_tool`): the calling run (a
        #: :class:`agentnb.loop_nested.Caller`: its event stream, controller, ledger and
        #: conversation). None for ordinary tools and for calls made outside a run.
        self.caller: Any = None

    def attach_image(self, image: Any, mime: str = "image/png") -> None:
        """Queue an image (PNG/JPEG bytes or a PIL image) for the model's next turn."""
        self.images.append(Image.coerce(image, mime))

    def return_directly(self) -> None:
        """Make this call's result the run's final answer (no further model call)."""
        self.direct = True


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
        self.is_async = fn is not None and is_async_callable(fn)
        self.direct_output = direct_output
        self.allow_repeat = allow_repeat
        #: A call of this tool never runs without a decision (see :mod:`agentnb.approval`).
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
        self._fast: Any = _UNCOMPILED  # compiled on first use (agentnb.validate)
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
        parts = callable_parts(fn, problems)  # functions, methods, partials, callable objects
        tool_name = str(name or parts.name)
        summary, docs = parse_docstring(parts.doc)
        hints = parts.hints
        props: dict[str, Any] = {}
        required: list[str] = []
        converters: dict[str, Callable[[Any], Any]] = {}
        fills: dict[str, Any] = {}
        context_param = None
        for p in parts.parameters:
            tp = hints.get(p.name, inspect.Parameter.empty)
            if tp is ToolContext or tp == "ToolContext":
                context_param = p.name
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                problems.append(f"parameter {p.name}: *args/**kwargs cannot be described to a model")
                continue
            if p.kind is p.POSITIONAL_ONLY:
                problems.append(f"parameter {p.name}: positional-only parameters are not supported")
                continue
            if tp is inspect.Parameter.empty:
                problems.append(f"parameter {p.name}: missing type annotation")
                continue
            default = p.default
            field = _pydantic_field(default)
            if field is not None:  # def f(n: int = Field(5, ge=1, description=...))
                tp = typing.Annotated[tp, field]
                default = p.empty if field.is_required() else field.get_default(call_default_factory=True)
                if default is not p.empty:
                    fills[p.name] = default
            prop = schema_for(tp, problems, f"parameter {p.name}")
            if docs.get(p.name) and "description" not in prop:
                prop = {**prop, "description": docs[p.name]}
            if default is p.empty:
                required.append(p.name)
            elif "default" not in prop and _jsonable(default):
                prop = {**prop, "default": _json_default(default)}
            if default is None:  # `meta: dict = None` means "or nothing": accept the default
                prop = nullable(prop)
            props[p.name] = prop
            conv = converter_for(tp)
            if conv is not None:
                converters[p.name] = none_passes(conv) if default is None else conv
        for documented in docs:
            if documented not in props and documented != context_param:
                problems.append(f"docstring documents {documented!r}, which is not a parameter")
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        made = cls(
            tool_name,
            description if description is not None else summary,
            schema,
            fn,
            context_param=context_param,
            converters=converters,
            problems=problems,
            **options,
        )
        made._fills = fills
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
            from agentnb.validate import fast_validator

            fast = self._fast = fast_validator(self.parameters)
        if fast is not None and fast(arguments):
            errors: list[str] = []
        else:
            errors = sorted(_describe(e) for e in self._validator.iter_errors(arguments))
        if errors or not self._converters or not isinstance(arguments, Mapping):
            return errors
        # Building the Python values can fail too (a pydantic validator): say so before running.
        for name, convert in self._converters.items():
            if name in arguments:
                try:
                    convert(arguments[name])
                except Exception as exc:
                    errors.extend(_conversion_errors(name, exc))
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
        props = self.parameters.get("properties") or {}
        required = set(self.parameters.get("required") or ())
        params = []
        for name, spec in props.items():
            kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
            kind = "|".join(kind) if isinstance(kind, list) else kind
            if isinstance(spec, dict) and "enum" in spec:
                kind = "|".join(repr(v) for v in spec["enum"])
            param = f"{name}: {kind}"
            if name not in required:
                has = isinstance(spec, dict) and "default" in spec
                param += f" = {spec['default']!r}" if has else " = ..."
            params.append(param)
        line = (self.description or "").strip().splitlines()[0] if (self.description or "").strip() else ""
        line = line if len(line) <= 80 else line[:79] + "…"
        return f"<Tool {self.name}({', '.join(params)})" + (f": {line}>" if line else ">")


def _pydantic_field(default: Any) -> Any:
    """``default`` when it is a pydantic ``Field(...)`` (pydantic is not imported to find out)."""
    # ``pydantic.fields`` itself: ``import pydantic`` alone does not load it (its attributes load
    # lazily), and a Field(...) default can only exist once it is loaded.
    fields = sys.modules.get("pydantic.fields")
    if fields is not None and isinstance(default, fields.FieldInfo):
        return default
    return None


def _conversion_errors(name: str, exc: Exception) -> list[str]:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # a pydantic ValidationError: one line per problem
        try:
            return [f"{'.'.join(str(p) for p in (name, *e['loc']))}: {e['msg']}" for e in errors()]
        except Exception:
            pass
    return [f"{name}: {exc}"]


def _empty_object() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "additionalProperties": False}


def _describe(error: jsonschema.ValidationError) -> str:
    if error.context and error.validator in ("anyOf", "oneOf"):
        # "not valid under any of the given schemas" tells the model nothing: name the closest
        # branch's problem (an Optional[Model] with one bad field says which field).
        # "not null" says nothing either; a wrong type deeper inside a branch does.
        near = [c for c in error.context if c.validator != "type" or c.relative_path]
        if near:
            error = max(near, key=lambda c: len(c.absolute_path))
    path = ".".join(str(p) for p in error.absolute_path)
    return f"{path}: {error.message}" if path else error.message


def render_result(value: Any, ctx: ToolContext | None = None) -> str:
    """A tool's return value as the text the model reads (see :mod:`agentnb.rendering`).

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
    ``requires_approval`` (no call runs without a decision: :mod:`agentnb.approval`), ``timeout``
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
    """Tools (or plain functions, OpenAI dicts, tool sources) by name; duplicate names are an error."""
    out: dict[str, Tool] = {}
    for t in _expand(tools):
        if t is None:  # tool(None) would be the bare decorator
            raise ToolDefinitionError("None", [str(refusal(None))])
        t = tool(t)
        if t.name in out:
            hint = (
                " (give one MCP server a prefix: server.tools(prefix='x_'))" if t.source or out[t.name].source else ""
            )
            raise ToolDefinitionError(t.name, [f"two tools have this name{hint}"])
        out[t.name] = t
    return out
