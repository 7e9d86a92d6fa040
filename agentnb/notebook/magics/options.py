"""Options of the ``%agent`` magics: parsing a magic line, notebook defaults, ``{name}`` interpolation.

Options come first; the rest of the line is the prompt, kept exactly as written (quotes and
apostrophes included). ``--`` ends the options, for a prompt that starts with a dash.

>>> opts, prompt = parse_line("--tools add,search -n 3 What's 2 + 3?")
>>> opts.tools, opts.max_tool_calls, prompt
(('add', 'search'), 3, "What's 2 + 3?")
>>> interpolate("Sum of {xs} and {{literal}}", {"xs": [1, 2]})
'Sum of [1, 2] and {literal}'
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError


@dataclass(frozen=True, slots=True)
class MagicOptions:
    """Options of one ``%agent`` call or the notebook defaults (None: not set)."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    tool_calling: str | None = None
    tools: tuple[str, ...] | None = None
    max_tool_calls: int | None = None
    tool_choice: str | None = None
    system: str | None = None
    stream: bool | None = None
    step: bool | None = None
    quiet: bool | None = None
    out: str | None = None
    new: bool | None = None
    output_type: str | None = None
    mcp: tuple[str, ...] | None = None
    fork: int | None = None
    kernel: str | None = None

    def merged_over(self, defaults: MagicOptions) -> MagicOptions:
        """These options, with unset ones taken from ``defaults``."""
        changes = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}
        return dataclasses.replace(defaults, **changes)

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if getattr(self, f.name) is not None
        )
        return f"AgentConfig({shown})"


# option -> (field, kind); kind is "str", "int", "list" or a bool constant for flags
_OPTIONS: dict[str, tuple[str, Any]] = {
    "--provider": ("provider", "str"),
    "-p": ("provider", "str"),
    "--model": ("model", "str"),
    "-m": ("model", "str"),
    "--base-url": ("base_url", "str"),
    "--tool-calling": ("tool_calling", "str"),
    "--tools": ("tools", "list"),
    "-t": ("tools", "list"),
    "--max-tool-calls": ("max_tool_calls", "int"),
    "-n": ("max_tool_calls", "int"),
    "--tool-choice": ("tool_choice", "str"),
    "-c": ("tool_choice", "str"),
    "--system": ("system", "str"),
    "-s": ("system", "str"),
    "--stream": ("stream", True),
    "--no-stream": ("stream", False),
    "--step": ("step", True),
    "--no-step": ("step", False),
    "--quiet": ("quiet", True),
    "-q": ("quiet", True),
    "--no-quiet": ("quiet", False),
    "--out": ("out", "str"),
    "-o": ("out", "str"),
    "--new": ("new", True),
    "--output-type": ("output_type", "str"),
    "--mcp": ("mcp", "multi"),
    "--fork": ("fork", "int"),
    "--kernel": ("kernel", "str"),
}

USAGE = (
    "options: -p/--provider SPEC|VAR, -m/--model NAME, --base-url URL, --tool-calling auto|native|untooled, "
    "-t/--tools a,b|none, -n/--max-tool-calls N, -c/--tool-choice auto|required|none|TOOL, -s/--system TEXT, "
    "--stream/--no-stream, --step, -q/--quiet, -o/--out VAR, --new, --mcp CMD|URL|VAR, --output-type TYPE, --fork N, --kernel read|code|sandbox"
)

#: ``--kernel`` modes: the tools of ``agentnb.kernel_tools(mode)``.
KERNEL_MODES = ("read", "code", "sandbox")

_TOKEN = re.compile(r"""\s*("(?:[^"\\]|\\.)*"|'[^']*'|\S+)""")


def parse_line(line: str) -> tuple[MagicOptions, str]:
    """Split a magic line into options and the prompt text that follows them."""
    values: dict[str, Any] = {}
    rest = line
    while True:
        m = _TOKEN.match(rest)
        if m is None or not m.group(1).startswith("-"):
            break
        token, rest = m.group(1), rest[m.end() :]
        if token == "--":
            break
        name, eq, inline = token.partition("=")
        if name not in _OPTIONS:
            raise UserError(f"unknown option {name!r}; {USAGE}")
        field, kind = _OPTIONS[name]
        if isinstance(kind, bool):
            if eq:
                raise UserError(f"{name} is a flag and takes no value")
            values[field] = kind
            continue
        if eq:
            raw = inline
        else:
            m = _TOKEN.match(rest)
            if m is None:
                raise UserError(f"{name} needs a value; {USAGE}")
            raw, rest = m.group(1), rest[m.end() :]
        if kind == "multi":  # may be repeated: --mcp "python a.py" --mcp "python b.py"
            values[field] = (*values.get(field, ()), _unquote(raw))
            continue
        values[field] = _convert(name, kind, _unquote(raw))
    calling = values.get("tool_calling")
    if calling is not None and calling not in ("auto", "native", "untooled"):
        raise UserError(f"--tool-calling takes auto, native or untooled, not {calling!r}")
    kernel = values.get("kernel")
    if kernel is not None and kernel not in KERNEL_MODES:
        raise UserError(f"--kernel takes read, code or sandbox, not {kernel!r}")
    name = values.get("out")
    if name is not None and not name.isidentifier():
        raise UserError(f"--out needs a Python variable name, not {name!r}")
    return MagicOptions(**values), rest.strip()


def check_out(name: str, ns: dict[str, Any]) -> None:
    """Refuse an ``--out`` name that would hide something: a keyword (the variable could not be
    read), a built-in (``--out print`` broke every later ``print``), or a notebook variable that is
    not a run's result (``--out m`` replaced the provider ``m``).

    >>> check_out("answer", {"answer": 1})
    Traceback (most recent call last):
    agentnb.errors.UserError: --out answer would replace the notebook's variable answer (an int); choose another name, or del answer first
    """
    import builtins
    import keyword

    from agentnb.notebook.magics.pending import PendingResult
    from agentnb.run.result import RunResult

    if keyword.iskeyword(name):
        raise UserError(f"--out {name} is a Python keyword: the result could not be read; choose another name")
    if name not in ns and hasattr(builtins, name):
        raise UserError(f"--out {name} would hide Python's built-in {name}; choose another name")
    value = ns.get(name)
    if name in ns and not isinstance(value, (RunResult, PendingResult)):  # re-running a cell is fine
        kind = type(value).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise UserError(
            f"--out {name} would replace the notebook's variable {name} ({article} {kind}); "
            f"choose another name, or del {name} first"
        )


def _unquote(raw: str) -> str:
    if raw[:1] in "\"'":
        try:
            return shlex.split(raw)[0]
        except (ValueError, IndexError):
            return raw
    return raw


def _convert(name: str, kind: str, raw: str) -> Any:
    if kind == "int":
        try:
            value = int(raw)
        except ValueError:
            raise UserError(f"{name} needs a whole number, not {raw!r}") from None
        if value < 0:
            raise UserError(f"{name} needs a number >= 0, not {value}")
        return value
    if kind == "list":
        names = tuple(n.strip() for n in raw.split(",") if n.strip())
        return () if names in ((), ("none",)) else names
    return raw


class _Formatter(string.Formatter):
    def get_value(self, key: Any, args: Any, kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, int):
            raise UserError("empty {} in the prompt: put a variable name inside, or write {{}} for literal braces")
        if key not in kwargs:
            raise UserError(
                f"name {key!r} is not defined in the notebook (used as {{{key}}}; write {{{{ for a literal brace)"
            )
        return kwargs[key]


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    """Replace ``{name}`` (also ``{name.attr}``, ``{name[0]}``, ``{name:.2f}``) from ``namespace``."""
    try:
        return _Formatter().vformat(text, (), namespace)
    except UserError:
        raise
    except (ValueError, KeyError, IndexError, AttributeError, TypeError) as exc:
        raise UserError(
            f"cannot fill in the prompt's {{...}} fields ({exc}); write {{{{ and }}}} for literal braces"
        ) from None


_TYPE_HINT = "a type such as Price, list[Price], dict[str, int] or Price | None"


def type_from_text(text: str, namespace: Mapping[str, Any]) -> Any:
    """The type written in ``--output-type`` (``list[Price]``, ``Price | None``...), as Python reads it.

    Only names, dotted names, subscripts, ``|`` and constants are read (no calls, nothing
    evaluated): names come from the notebook, then builtins, then :mod:`typing`.

    >>> type_from_text("list[int] | None", {})
    list[int] | None
    >>> type_from_text("dict[str, Literal['a', 'b']]", {})
    dict[str, typing.Literal['a', 'b']]
    >>> type_from_text("'list[int]'", {}), type_from_text("Literal[-1, 1]", {})
    (list[int], typing.Literal[-1, 1])
    """
    import ast
    import builtins
    import typing

    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise UserError(f"--output-type {text!r} is not {_TYPE_HINT}") from None

    def read(node: ast.expr, literal: bool = False) -> Any:
        # literal: inside Literal[...], where constants are values; elsewhere a string is a
        # forward reference ("Price"), read as the type it names
        if isinstance(node, ast.Name):
            for space in (namespace, vars(builtins), vars(typing)):
                if node.id in space:
                    return space[node.id]
            raise UserError(f"--output-type {text!r}: name {node.id!r} is not defined in the notebook")
        if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
            return getattr(read(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            outer = read(node.value)
            if outer is typing.Annotated and isinstance(node.slice, ast.Tuple) and node.slice.elts:
                first, *notes = node.slice.elts  # Annotated[type, value, ...]
                return outer[tuple([read(first), *(read(n, True) for n in notes)])]
            return outer[read(node.slice, literal or outer is typing.Literal)]
        if isinstance(node, ast.Tuple):
            return tuple(read(e, literal) for e in node.elts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return read(node.left) | read(node.right)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and not literal:
            try:
                return read(ast.parse(node.value.strip(), mode="eval").body)
            except SyntaxError:
                raise UserError(f"--output-type {text!r}: {node.value!r} is not {_TYPE_HINT}") from None
        if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, bool))):
            return node.value
        if literal and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = read(node.operand, literal)
            if isinstance(value, int) and not isinstance(value, bool):
                return -value
        raise UserError(f"--output-type {text!r} is not {_TYPE_HINT}")

    try:
        return read(tree)
    except UserError:
        raise
    except Exception as exc:  # e.g. list[1, 2]: a type error from the subscript itself
        raise UserError(f"--output-type {text!r}: {exc}") from None
