"""AnythingLLM's UnTooled tool picker, reimplemented in Python: the baseline agentnb reports against.

What it reproduces (from ``shared/notes/anythingllm.md`` and the design seeds, which describe
``server/utils/agents/aibitat/providers/helpers/untooled.js``):

* **History**: only ``user`` and ``assistant`` messages reach the picker; the real system prompt and every
  tool result are dropped (`build_messages`).
* **Picker prompt**: one system message, "You are a program which picks the most optimal function and
  parameters to call.", answer with JSON with exactly the keys ``name`` and ``arguments`` or in plain text;
  then per tool its name, description and ``JSON.stringify(parameters.properties, null, 4)`` (the
  ``required`` list is never shown) followed by few-shot ``Query: "..."`` / ``JSON: {...}`` lines.
* **Parser** (`safe_json_parse`): ``JSON.parse`` of the whole reply; if that fails and the reply *starts
  with* ``{`` or ``[``, a lenient repair (`repair_json`, a subset of the ``jsonrepair`` package: single
  quotes, unquoted keys, Python constants, comments, trailing or missing commas, unclosed strings and
  brackets); then the first JSON object found anywhere in the text, so prose that contains any JSON
  becomes a call attempt.
* **validFuncCall** (`valid_func_call`): ``name`` and ``arguments`` keys present, the name exists
  (case-sensitive), every required key present, no key outside ``properties``. No type, enum or nested
  checks. An invalid call is dropped (no call; the model is never told why).

Not reproduced: the second model call AnythingLLM makes to produce a text answer when the picker's reply
was dropped, the deduplicator and the 15-tool reranker; the benchmark scores only which call is made.

Tools are OpenAI-style function dicts ``{"name", "description", "parameters"}`` with optional
``"examples"``, either ``[{"query", "arguments"}]`` (agentnb's form) or ``[{"prompt", "call"}]``
(AnythingLLM's form, ``call`` a JSON string).

>>> tools = [{"name": "get_weather", "description": "Weather for a city.", "parameters": {
...     "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
>>> messages = build_messages([{"role": "user", "content": "Weather in Oslo?"}], tools)
>>> [m["role"] for m in messages]
['system', 'user']
>>> parse_reply('Sure! {"name": "get_weather", "arguments": {"city": "Oslo"}}', tools)
{'name': 'get_weather', 'arguments': {'city': 'Oslo'}}
>>> parse_reply('{"name": "get_weather", "arguments": {}}', tools) is None   # required key missing: dropped
True
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "PICKER_PROMPT",
    "build_messages",
    "parse_reply",
    "parse_reply_detailed",
    "repair_json",
    "safe_json_parse",
    "showcase_functions",
    "valid_func_call",
]

PICKER_PROMPT = """You are a program which picks the most optimal function and parameters to call.
      DO NOT HAVE TO PICK A FUNCTION IF IT WILL NOT HELP ANSWER OR FULFILL THE USER'S QUERY.
      When a function is selection, respond in JSON with no additional text.
      When there is no relevant function to call - return with a regular chat text response.
      Your task is to pick a **single** function that we will use to call, if any seem useful or relevant for the user query.

      All JSON responses should have two keys.
      'name': this is the name of the function name to call. eg: 'web-scraper', 'rag-memory', etc..
      'arguments': this is an object with the function properties to invoke the function.
      DO NOT INCLUDE ANY OTHER KEYS IN JSON RESPONSES.

      Here are the available tools you can use an examples of a query and response so you can understand how each one works.
      {showcase}

      Now pick a function if there is an appropriate one to use given the last user message and the given conversation so far."""

_NOT_FOUND = object()


def _js_stringify(value: Any, indent: int | None = None) -> str:
    """``JSON.stringify`` output: compact separators without indent, no ASCII escaping."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=indent)


def _examples(tool: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    for example in tool.get("examples") or ():
        if "query" in example:
            yield str(example["query"]), example.get("arguments", {})
        else:  # AnythingLLM's own form: the call is a JSON string, parsed with a {} fallback
            call = example.get("call", "{}")
            parsed = safe_json_parse(call, {}) if isinstance(call, str) else call
            yield str(example.get("prompt", "")), parsed


def showcase_functions(tools: Iterable[Mapping[str, Any]]) -> str:
    """The per-tool catalogue the picker sees: name, description, properties (not ``required``), examples.

    >>> print(showcase_functions([{"name": "t", "description": "d", "parameters": {"properties": {}},
    ...                            "examples": [{"query": "go", "arguments": {"x": 1}}]}]))
    -----------
    Function name: t
    Function Description: d
    Function parameters in JSON format:
    {}
    Query: "go"
    JSON: {"name":"t","arguments":{"x":1}}
    -----------
    <BLANKLINE>
    """
    output = ""
    for tool in tools:
        properties = (tool.get("parameters") or {}).get("properties", {})
        shot = (
            "-----------\n"
            f"Function name: {tool['name']}\n"
            f"Function Description: {tool.get('description', '')}\n"
            "Function parameters in JSON format:\n"
            f"{_js_stringify(properties, indent=4)}\n"
        )
        for query, arguments in _examples(tool):
            shot += f'Query: "{query}"\nJSON: {_js_stringify({"name": tool["name"], "arguments": arguments})}\n'
        output += f"{shot}-----------\n"
    return output


def build_messages(history: Iterable[Mapping[str, Any]], tools: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The picker request: the picker system prompt, then the user/assistant messages of ``history`` only.

    >>> history = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
    ...            {"role": "tool", "name": "t", "content": "42"}, {"role": "assistant", "content": "hello"}]
    >>> [m["role"] for m in build_messages(history, [])]
    ['system', 'user', 'assistant']
    """
    kept = [{"role": m["role"], "content": m.get("content")} for m in history if m.get("role") in ("user", "assistant")]
    system = PICKER_PROMPT.replace("{showcase}", showcase_functions(list(tools)))
    return [{"role": "system", "content": system}, *kept]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse rejects NaN / Infinity, Python's json accepts them


def _json_parse(text: str) -> Any:
    """``JSON.parse``: strict JSON, surrounding whitespace allowed."""
    return json.loads(text, parse_constant=_reject_constant)


def _first_json_object(text: str) -> Any:
    decoder = json.JSONDecoder(parse_constant=_reject_constant)
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        return value
    return _NOT_FOUND


def safe_json_parse(text: str | None, fallback: Any = None) -> Any:
    """AnythingLLM's ``safeJsonParse``: strict parse, repair if it starts with ``{``/``[``, first object in text.

    >>> safe_json_parse('{"a": 1}'), safe_json_parse("{'a': 1,}"), safe_json_parse('I think {"a": 1} works')
    ({'a': 1}, {'a': 1}, {'a': 1})
    >>> safe_json_parse("no json here") is None, safe_json_parse(" {'a': 1}") is None  # no repair: leading space
    (True, True)
    """
    if text is None:
        return fallback
    try:
        return _json_parse(text)
    except ValueError:
        pass
    if text.startswith(("{", "[")):
        try:
            return _json_parse(repair_json(text))
        except ValueError:
            pass
    found = _first_json_object(text)
    return fallback if found is _NOT_FOUND else found


_CONSTANTS = {"True": "true", "False": "false", "None": "null", "true": "true", "false": "false", "null": "null"}
_VALUE_END = ('"', "}", "]")
_BARE_TOKEN = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?|[A-Za-z_$][\w$-]*")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def repair_json(text: str) -> str:
    """Make almost-JSON parseable (a subset of what the ``jsonrepair`` package fixes).

    >>> repair_json("{'name': 'f', arguments: {\\"x\\": True,},}")
    '{"name": "f", "arguments": {"x": true}}'
    >>> repair_json('{"a": 1 "b": [1, 2')
    '{"a": 1, "b": [1, 2]}'
    """
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(text)

    def last_significant() -> str:
        for piece in reversed(out):
            stripped = piece.rstrip()
            if stripped:
                return stripped[-1]
        return ""

    def before_value() -> None:
        # a value (or key) directly after a complete value inside a container: the comma is missing
        prev = last_significant()
        if stack and (prev in _VALUE_END or prev.isalnum()):
            out.append(", ")

    while i < n:
        ch = text[i]
        if ch in "\"'":
            before_value()
            j, chars = i + 1, []
            while j < n and text[j] != ch:
                if text[j] == "\\" and j + 1 < n:
                    chars.append(text[j : j + 2])
                    j += 2
                    continue
                chars.append('\\"' if text[j] == '"' else _CONTROL_ESCAPES.get(text[j], text[j]))
                j += 1
            body = "".join(chars)
            if ch == "'":
                body = body.replace("\\'", "'")
            out.append(f'"{body}"')
            i = j + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif ch in "{[":
            before_value()
            stack.append("}" if ch == "{" else "]")
            out.append(ch)
            i += 1
        elif ch in "}]":
            while out and out[-1].strip() in (",", ""):
                out.pop()
            if stack:
                out.append(stack.pop())
            i += 1
        elif ch == ",":
            if last_significant() not in ("{", "[", ",", ""):
                out.append(", ")
            i += 1
        elif ch == ":":
            out.append(": ")
            i += 1
        elif ch.isspace():
            i += 1
        else:
            match = _BARE_TOKEN.match(text, i)
            if match is None:  # stray character: jsonrepair would fail here too
                out.append(ch)
                i += 1
                continue
            word = match.group()
            before_value()
            if word[0].isdigit() or word[0] == "-":
                out.append(word)
            else:
                out.append(_CONSTANTS.get(word, json.dumps(word)))
            i = match.end()
    while out and out[-1].strip() == ",":
        out.pop()
    out.extend(reversed(stack))
    return "".join(out)


def _js_keys(value: Any) -> list[str] | None:
    """``Object.keys`` of a parsed JSON value; None where JavaScript would throw (null)."""
    if value is None:
        return None
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, list | str):
        return [str(k) for k in range(len(value))]
    return []


def valid_func_call(call: Any, tools: Iterable[Mapping[str, Any]]) -> tuple[bool, str | None]:
    """AnythingLLM's ``validFuncCall``: ``(valid, reason)``. Names and keys only, never types or enums.

    >>> tools = [{"name": "f", "parameters": {"properties": {"n": {"type": "integer"}}, "required": ["n"]}}]
    >>> valid_func_call({"name": "f", "arguments": {"n": "not a number"}}, tools)
    (True, None)
    >>> valid_func_call({"name": "F", "arguments": {"n": 1}}, tools)
    (False, 'Function name does not exist.')
    """
    if not isinstance(call, dict) or "name" not in call or "arguments" not in call:
        return False, "Missing name or arguments in function call."
    found = next((t for t in tools if t.get("name") == call["name"]), None)
    if found is None:
        return False, "Function name does not exist."
    parameters = found.get("parameters") or {}
    properties = parameters.get("properties") or {}
    given = _js_keys(call["arguments"])
    if given is None:
        return False, "Invalid arguments."
    if any(key not in given for key in parameters.get("required") or ()):
        return False, "Missing required argument."
    if any(key not in properties for key in given):
        return False, "Invalid argument schema match."
    return True, None


def parse_reply_detailed(text: str, tools: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Everything the picker decided about one reply.

    Returns ``{"call", "attempt", "text", "reason"}``: ``attempt`` is what the reply parsed to (None when
    it did not parse, so AnythingLLM treats it as a text answer and ``text`` is the reply); ``call`` is the
    call that would run, or None when there is none (not parsed, or dropped as invalid with ``reason``).

    >>> d = parse_reply_detailed("42", [])
    >>> d["attempt"], d["call"], d["text"], d["reason"]
    (42, None, None, 'Missing name or arguments in function call.')
    """
    tools = list(tools)
    attempt = safe_json_parse(text, None)
    if attempt is None:
        return {"call": None, "attempt": None, "text": text, "reason": None}
    valid, reason = valid_func_call(attempt, tools)
    if not valid:
        return {"call": None, "attempt": attempt, "text": None, "reason": reason}
    return {
        "call": {"name": attempt["name"], "arguments": attempt["arguments"]},
        "attempt": attempt,
        "text": None,
        "reason": None,
    }


def parse_reply(text: str, tools: Iterable[Mapping[str, Any]]) -> dict | None:
    """The call the picker would run for this reply (``{"name", "arguments"}``), or None for no call.

    >>> tools = [{"name": "f", "parameters": {"properties": {"x": {}}}}]
    >>> parse_reply("{'name': 'f', 'arguments': {'x': 1}}", tools), parse_reply("Hello!", tools)
    ({'name': 'f', 'arguments': {'x': 1}}, None)
    """
    return parse_reply_detailed(text, tools)["call"]


if __name__ == "__main__":
    # A sanity check rather than a measurement: the picker prompt's size for the task set, and that an
    # ideal reply (the expected call) survives this parser and validFuncCall for every request.
    import importlib.util
    from pathlib import Path

    _spec = importlib.util.spec_from_file_location("scoring", Path(__file__).with_name("scoring.py"))
    _scoring = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_scoring)
    _data = _scoring.load_tasks()
    _prompt = build_messages([], _data["tools"])[0]["content"]
    print(f"picker system prompt for {len(_data['tools'])} tools: {len(_prompt)} characters")
    _items = [(t["expected"], _data["tools"]) for t in _data["tasks"]]
    _items += [(c["expected"], c["functions"]) for c in _scoring.load_fc_cases()]
    _ok = 0
    for _expected, _tools in _items:
        if _expected is None:
            _ok += parse_reply("Happy to help with that!", _tools) is None
            continue
        _args = {k: v[0] for k, v in _expected["arguments"].items() if v[0] != _scoring.OMITTED}
        _reply = json.dumps({"name": _expected["name"], "arguments": _args})
        _ok += _scoring.score_call(_expected, parse_reply(_reply, _tools))["correct"]
    print(f"ideal replies scored correct through the baseline parser: {_ok}/{len(_items)}")
