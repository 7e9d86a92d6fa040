"""Constrained decoding for in-process models: an :class:`OutputConstraint` as an llguidance grammar.

The reply a constrained model may write is either plain text that does not start with ``{``,
``[`` or whitespace, or one JSON call ``{"name": <a tool's name>, "arguments": <that tool's
parameters>}`` (or, when ``parallel``, a JSON array of calls). The key order puts the name
first, so the model picks the function before it writes arguments for it.

Schemas are *bounded* before they become grammars: unbounded strings get a ``maxLength`` and
arrays a ``maxItems``, and objects that allow any extra key get ``additionalProperties: false``.
Every reply the grammar allows still validates against the tool's own schema, but a weak or
random model can no longer write one string (or invent keys) until ``max_new_tokens`` cuts the
call off half-written.

>>> from agentnb.tools import Tool
>>> t = Tool("echo", "Echo text.", {"type": "object", "properties": {"text": {"type": "string"}}})
>>> bound_schema(t.parameters)["properties"]["text"]["maxLength"]
200
>>> "%json" in grammar_for((t,), "call")
True
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import llguidance

    from agentnb.tools import Tool

Mode = Literal["any", "call", "text"]

#: Longest string value a constrained call may hold, unless the schema says otherwise.
MAX_STRING = 200
#: Most items an array argument may hold, unless the schema says otherwise.
MAX_ITEMS = 32
#: Most calls in one parallel reply.
MAX_PARALLEL = 8
#: How JSON is written: the same separators as ``json.dumps``, no free whitespace.
JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
#: Plain text: anything, but not starting like JSON (or with whitespace, which could hide it).
TEXT_REGEX = r"/[^\[{\s](.|\n)*/"


def bound_schema(schema: Any, max_string: int = MAX_STRING, max_items: int = MAX_ITEMS) -> Any:
    """A copy of ``schema`` with limits that keep generation finite (see the module docstring)."""
    if isinstance(schema, list):
        return [bound_schema(s, max_string, max_items) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bound_schema(v, max_string, max_items) if k != "enum" and k != "const" else v for k, v in schema.items()}
    kinds = out.get("type")
    kinds = set(kinds) if isinstance(kinds, list) else {kinds}
    free = not ({"enum", "const", "pattern", "format"} & out.keys())
    if "string" in kinds and free and "maxLength" not in out:
        out["maxLength"] = max(max_string, out.get("minLength", 0))
    if "array" in kinds and "maxItems" not in out:
        out["maxItems"] = max(max_items, out.get("minItems", 0))
    if "object" in kinds and "additionalProperties" not in out and "patternProperties" not in out:
        out["additionalProperties"] = False
    return out


def call_schema(tool: Tool, max_string: int = MAX_STRING) -> dict[str, Any]:
    """The JSON Schema of one call to ``tool``: its name, then its (bounded) arguments, where a
    required free-text string may not be empty (see :func:`nonempty_required`)."""
    return {
        "type": "object",
        "properties": {
            "name": {"const": tool.name},
            "arguments": nonempty_required(bound_schema(tool.parameters, max_string)),
        },
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def nonempty_required(arguments: Any) -> Any:
    """``arguments`` (a call's parameters) with ``minLength: 1`` on each required string that
    has no length, pattern, format, enum or const of its own.

    A required string the model leaves empty (``{"expression": ""}`` for "Calculate 2+2*8") is
    never the argument the user meant: the grammar rules it out, and the model writes a value.

    >>> nonempty_required({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"},
    ...     "tag": {"type": "string"}}})["properties"]
    {'q': {'type': 'string', 'minLength': 1}, 'tag': {'type': 'string'}}
    """
    props = arguments.get("properties") if isinstance(arguments, dict) else None
    required = set(arguments.get("required") or ()) if isinstance(props, dict) else set()
    if not required:
        return arguments

    def free_text(spec: Any) -> bool:
        if not isinstance(spec, dict) or {"enum", "const", "pattern", "format", "minLength"} & spec.keys():
            return False
        kinds = spec.get("type")
        return "string" in (kinds if isinstance(kinds, list) else [kinds])

    fixed = {k: {**v, "minLength": 1} if k in required and free_text(v) else v for k, v in props.items()}
    return {**arguments, "properties": fixed}


def grammar_for(
    tools: Sequence[Tool],
    mode: Mode,
    *,
    parallel: bool = False,
    max_string: int = MAX_STRING,
    output: dict[str, Any] | None = None,
) -> str:
    """A Lark grammar (llguidance dialect) for a reply in ``mode``: text, a call, or either.

    With an ``output`` schema (structured output) the text branch is a JSON value matching it.

    >>> print(grammar_for((), "text", output={"type": "integer"}))
    start: answer
    answer: %json {"type": "integer", "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "}}
    <BLANKLINE>
    """
    rules = []
    if mode in ("any", "text") or not tools:
        rules.append("answer" if output is not None else "text")
    if mode in ("any", "call") and tools:
        one: dict[str, Any] = {"anyOf": [call_schema(t, max_string) for t in tools]}
        if len(tools) == 1:
            one = call_schema(tools[0], max_string)
        schema = one
        if parallel:
            many = {"type": "array", "items": one, "minItems": 1, "maxItems": MAX_PARALLEL}
            schema = {"anyOf": [one, many]}
        rules.append("call")
    lines = [f"start: {' | '.join(rules)}"]
    if "text" in rules:
        lines += ["text: TEXT", f"TEXT: {TEXT_REGEX}"]
    if "answer" in rules:
        answer = bound_schema(output, max_string)
        lines.append(f"answer: %json {json.dumps({**answer, 'x-guidance': JSON_STYLE})}")
    if "call" in rules:
        lines.append(f"call: %json {json.dumps({**schema, 'x-guidance': JSON_STYLE})}")
    return "\n".join(lines) + "\n"


class Guide:
    """The grammar state of one reply: which tokens may come next, and the tokens taken.

    Built by :class:`GrammarCompiler`. Masking is done by hand with numpy (llguidance's torch
    helper compiles a kernel with ``torch.compile``, ~16 s on the first CPU call).
    """

    __slots__ = ("_matcher", "_vocab", "mode")

    def __init__(self, matcher: llguidance.LLMatcher, vocab: int, mode: str = "any") -> None:
        self._matcher = matcher
        self._vocab = vocab
        #: What the grammar allows: ``"text"``, ``"call"``, ``"any"``, or ``"output"`` (a JSON
        #: value matching the output schema).
        self.mode = mode

    def allowed(self) -> Any:
        """A boolean numpy array over the vocabulary: True where the token may come next."""
        import numpy as np

        bits = np.frombuffer(self._matcher.compute_bitmask(), dtype=np.uint8)
        mask = np.unpackbits(bits, bitorder="little").astype(bool)
        if mask.size < self._vocab:
            mask = np.concatenate([mask, np.zeros(self._vocab - mask.size, dtype=bool)])
        return mask[: self._vocab]

    def forced(self) -> list[int]:
        """Tokens the grammar allows no alternative to (fed without asking the model)."""
        return list(self._matcher.compute_ff_tokens())

    def advance(self, token: int) -> None:
        if not self._matcher.consume_token(token):
            raise RuntimeError(f"constrained decoding took a token the grammar refuses: {self._matcher.get_error()}")

    @property
    def finished(self) -> bool:
        return bool(self._matcher.is_stopped())

    @property
    def accepting(self) -> bool:
        return bool(self._matcher.is_accepting())


class GrammarCompiler:
    """Builds :class:`Guide` objects for one tokenizer; the llguidance tokenizer is made once (~1 s)."""

    def __init__(self, tokenizer: Any, vocab_size: int, eos_ids: Sequence[int] | None = None) -> None:
        import llguidance
        import llguidance.hf

        self._llg = llguidance
        eos = list(eos_ids) if eos_ids else None
        self._lltok = llguidance.hf.from_tokenizer(tokenizer, n_vocab=vocab_size, eos_token=eos)
        self.vocab_size = vocab_size
        self._grammars: dict[tuple[Any, ...], str] = {}

    def guide(
        self, tools: Sequence[Tool], mode: Mode, *, parallel: bool = False, output: dict[str, Any] | None = None
    ) -> Guide:
        out_key = json.dumps(output, sort_keys=True) if output is not None else None
        key = (tuple(tools), mode, parallel, out_key)  # tools hash by identity
        grammar = self._grammars.get(key)
        if grammar is None:
            lark = grammar_for(tools, mode, parallel=parallel, output=output)
            grammar = self._llg.LLMatcher.grammar_from_lark(lark)
            if len(self._grammars) > 64:
                self._grammars.clear()
            self._grammars[key] = grammar
        matcher = self._llg.LLMatcher(self._lltok, grammar, log_level=0)
        if matcher.is_error():
            raise ValueError(f"cannot build a grammar for these tools: {matcher.get_error()}")
        shown = "output" if output is not None and (mode == "text" or not tools) else mode
        return Guide(matcher, self.vocab_size, shown)
