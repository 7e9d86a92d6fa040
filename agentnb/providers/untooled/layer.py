"""UnTooled: tool calling simulated in the prompt, for models that can only write text.

:class:`UnTooled` wraps any text-only :class:`~agentnb.providers.Provider` and is itself a
provider with native tools, so the loop cannot tell it from an API with function calling:

1. the tool catalogue (name, description, one line per parameter with its type or enum
   values, required or optional, default and description; few-shot examples) goes into the
   system prompt, rendered from ``prompt.txt`` beside this module;
2. the whole conversation, earlier calls and tool results included, is rendered as plain
   system/user/assistant turns (chat templates often have no tool role): one model call per step;
3. the reply is parsed (:mod:`agentnb.providers.untooled.parse`) into text or tool calls.
   Invalid calls are returned as they are, so the loop validates them and tells the model
   what to fix; broken JSON comes back as a call with a ``parse_error``.

When the inner provider ``supports_constraints``, UnTooled also sets
:attr:`Request.constraint`, and the backend's decoder makes every call parse and validate. A
backend that ``understands_untooled_hints`` also gets the user's request and a ``[[pick]]`` text
per tool when one call must choose among several tools, so it can rank the tools first.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> model = ScriptedProvider(['{"name": "add", "arguments": {"a": 2, "b": 3}}', "It is 5."], native_tools=False)
>>> Agent(model, tools=[add]).run("What is 2 + 3?").output
'It is 5.'
>>> print(model.requests[1].messages[-1].content)
Result of add: 5
Using these results, answer my question in one sentence: What is 2 + 3?
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agentnb.events import OutputMode
from agentnb.messages import AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentnb.providers.base import (
    Chunk,
    Completion,
    OutputConstraint,
    Provider,
    Request,
    TextChunk,
    ToolCallChunk,
    collect,
)
from agentnb.providers.untooled.gate import ProseGate, stray_calls
from agentnb.providers.untooled.parse import load_json, parse_reply
from agentnb.providers.untooled.prompt import (
    PromptTemplate,
    call_json,
    default_template,
    render_arguments,
    render_parameters,
)
from agentnb.providers.untooled.repair import repair_calls
from agentnb.tools import Tool


class UnTooled(Provider):
    """Prompt-simulated tool calling over any text-only provider.

    Wrap any :class:`~agentnb.providers.Provider` that only writes text (a custom backend, a
    server without function calling) and the result takes tools like a native API: the
    catalogue goes into the prompt, the reply is parsed into calls, and the loop validates them.
    :class:`~agentnb.Agent` does this by itself for a provider whose ``supports_native_tools``
    is False; ``OpenAIProvider(tool_calling="untooled")`` does it for a server.

    Args:
        inner: the text model.
        template: a :class:`PromptTemplate` (default: ``prompt.txt``).
        parallel: tell the model it may answer with a JSON array of calls.
        constrain: set :attr:`Request.constraint` when ``inner`` supports constrained decoding.
        repair: when a constrained call still fails its tool's schema, ask the model once more
            with the errors before the loop sees it (:mod:`~agentnb.providers.untooled.repair`).

    >>> from agentnb import Agent, UnTooled, tool
    >>> from agentnb.testing import FunctionProvider
    >>> @tool
    ... def shout(text: str) -> str:
    ...     "Upper-case a text."
    ...     return text.upper()
    >>> def my_model(messages, tools):  # any text model: it sees only text turns, no tools
    ...     if "Result of shout" in messages[-1].content:
    ...         return "Done: HI."
    ...     return '{"name": "shout", "arguments": {"text": "hi"}}'
    >>> Agent(UnTooled(FunctionProvider(my_model)), [shout]).run("Shout hi").output
    'Done: HI.'
    """

    supports_native_tools = True

    def __init__(
        self,
        inner: Provider,
        *,
        template: PromptTemplate | None = None,
        parallel: bool = False,
        constrain: bool = True,
        repair: bool = True,
    ) -> None:
        self.inner = inner
        self.name = f"untooled:{inner.name}"
        self.template = template or default_template()
        self.parallel = parallel
        self.constrain = constrain
        self.repair = repair
        self.supports_streaming = inner.supports_streaming
        self._ids = itertools.count(1)

    # --- rendering -------------------------------------------------------------------------

    def system_prompt(
        self, tools: Sequence[Tool], user_system: str | None = None, output: dict[str, Any] | None = None
    ) -> str:
        """The system prompt describing ``tools`` and the ``output`` schema (and the user's own system prompt)."""
        t = self.template
        extra = t.fill("user_system", content=user_system) if user_system else ""
        if output is not None and not tools:
            return t.fill("output_only", user_system=extra, **self._output_values(output)).strip()
        if not tools:
            return user_system or ""
        entries = []
        for tool in tools:
            examples = "".join(
                "\n" + t.fill("example", query=ex.query, call=call_json(tool.name, ex.arguments))
                for ex in tool.examples
            )
            entries.append(
                t.fill(
                    "tool",
                    name=tool.name,
                    description=tool.description.strip(),
                    parameters=render_parameters(tool.parameters),
                    arguments=render_arguments(tool.parameters),
                    examples=examples,
                )
            )
        parallel = t.fill("parallel") if self.parallel else ""
        answer = t.fill("output", **self._output_values(output)) if output is not None else ""
        return t.fill("system", catalogue="\n\n".join(entries), parallel=parallel, output=answer, user_system=extra)

    def _output_values(self, schema: dict[str, Any]) -> dict[str, str]:
        fields = render_arguments(schema) if schema.get("properties") else ""
        return {
            "schema": render_parameters(schema),
            "fields": self.template.fill("output_fields", fields=fields) if fields else "",
        }

    def render(self, request: Request) -> list[Message]:
        """The conversation as plain system/user/assistant turns, for a text-only model."""
        t = self.template
        messages = list(request.messages)
        user_system = None
        if messages and isinstance(messages[0], SystemMessage):
            user_system = messages.pop(0).content
        out: list[Message] = []
        output = _text_schema(request.output)
        system = self.system_prompt(request.tools, user_system, output)
        if system:
            out.append(SystemMessage(system))
        results: list[str] = []
        question = ""  # the latest user request; repeated after results, which helps small models

        def flush_results() -> None:
            if results:
                section = "results_output" if output is not None and "results_output" in t.sections else "results"
                _add_user(out, t.fill(section, results="\n".join(results), question=question))
                results.clear()

        for m in messages:
            if isinstance(m, ToolMessage):
                section = "error_result" if m.is_error else "result"
                results.append(t.fill(section, name=m.name, content=m.content))
                continue
            flush_results()
            if isinstance(m, UserMessage):
                if not m.images:
                    question = m.content
                _add_user(out, m.content + (t.fill("image") if m.images else ""))
            elif isinstance(m, AssistantMessage):
                out.append(AssistantMessage(self._assistant_text(m)))
            elif isinstance(m, SystemMessage):
                _add_user(out, m.content)
        flush_results()
        choice = request.tool_choice
        if request.tools and choice == "required":
            _add_user(out, t.fill("required"), join="")
        elif request.tools and choice not in ("auto", "none", "required"):
            _add_user(out, t.fill("named", name=choice), join="")
        return out

    def _assistant_text(self, m: AssistantMessage) -> str:
        """An earlier reply as the model would have written it."""
        if not m.tool_calls:
            return m.content or ""
        calls = m.tool_calls
        if any(c.arguments is None for c in calls):
            body = "\n".join(c.raw_arguments or "" for c in calls)
        elif len(calls) == 1:
            body = call_json(calls[0].name, calls[0].arguments)
        else:
            body = json.dumps([{"name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False)
        return f"{m.content}\n{body}" if m.content else body

    def inner_request(self, request: Request) -> Request:
        """The request the text model gets: rendered turns, no tools, maybe a constraint."""
        tools = tuple(request.tools) if request.tool_choice != "none" else ()
        constraint = None
        output = _text_schema(request.output)
        if self.constrain and self.inner.supports_constraints:
            constraint = OutputConstraint(tools, request.tool_choice if tools else "none", self.parallel, output)
        rendered = self.render(Request(request.messages, tools, request.tool_choice, output=request.output))
        settings = request.settings
        tail = list(request.messages[-2:])
        if tail and isinstance(tail[-1], UserMessage) and tail[-1].images:  # a tool's attached images
            tail.pop()
        after_results = bool(tail) and isinstance(tail[-1], ToolMessage)
        hints = constraint is not None and getattr(self.inner, "understands_untooled_hints", False)
        if hints and after_results:
            # a backend that decides "call or answer" itself may weigh it differently now, and
            # may keep its answer on the results' own words
            settings = {**settings, "untooled_after_tool_results": True, "untooled_results": _last_results(request)}
        pick = self._pick_hint(request, tools) if hints and not self.parallel else None
        if pick is not None:
            # a backend that can rank the tools first may pick the function before the arguments
            settings = {**settings, "untooled_pick": pick}
        return Request(rendered, (), "none", settings, constraint)

    def _pick_hint(self, request: Request, tools: Sequence[Tool]) -> dict[str, Any] | None:
        """The user's last request, each tool's ``[[pick]]`` text and ``[[pick_none]]``, to rank by."""
        if not tools or "pick" not in self.template.sections:
            return None
        query = next((m.content for m in reversed(request.messages) if isinstance(m, UserMessage)), None)
        if not query:
            return None
        prompts = {t.name: self.template.fill("pick", name=t.name, description=t.description.strip()) for t in tools}
        hint: dict[str, Any] = {"query": query, "prompts": prompts}
        if "pick_none" in self.template.sections:  # what "no tool" explains, to weigh the tools against
            hint["none"] = self.template.fill("pick_none")
        return hint

    @property
    def reply_limit_setting(self) -> str | None:  # type: ignore[override]
        return self.inner.reply_limit_setting

    @property
    def counts_tokens(self) -> bool:
        """Whether :meth:`estimate_input_tokens` is exact: the text model counts its prompt."""
        return bool(getattr(self.inner, "counts_tokens", False))

    def estimate_input_tokens(self, request: Request) -> int | None:
        inner = self.inner_request(request)  # the prompt the text model reads, tools rendered
        counted = self.inner.estimate_input_tokens(inner)
        if counted is not None:
            return counted
        from agentnb.providers.base import chars_estimate

        return chars_estimate(inner.messages)

    # --- Provider --------------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        return await collect(self.stream(request))

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        inner = self.inner_request(request)
        offered = [t.name for t in request.tools] if request.tool_choice != "none" else []
        # nothing offered: a reply may still be a call (after the limit), held back the same way
        gate = ProseGate() if offered or request.output is None else None
        result: Completion | None = None
        pieces: list[str] = []
        async for item in self.inner.stream(inner):
            if isinstance(item, Completion):
                result = item
            elif isinstance(item, TextChunk):
                pieces.append(item.text)
                shown = gate.feed(item.text) if gate is not None else item.text
                if shown:
                    yield TextChunk(shown)
        if result is None:
            result = Completion("".join(pieces) or None)
        text = result.text if result.text is not None else "".join(pieces)
        events = result.events
        if request.output is not None:
            how = (
                ("grammar", "decoded under the schema's grammar")
                if inner.constraint
                else ("prompt", "schema in the prompt")
            )
            events = (*events, OutputMode(0, how[0], f"{request.output.name}: {how[1]}"))
        if not offered:
            # A reply that starts with a call (a model imitating its earlier turns after the
            # limit) is reported as one, so the loop can ask once more for a text answer, and the
            # call is not shown as text. With an output_type the reply is JSON on purpose: it is
            # the answer.
            stray: tuple[ToolCall, ...] = ()
            prose: str | None = text or None
            if request.output is None:
                prose, stray = stray_calls(text, self._new_id)
            shown = (prose or "") if stray else gate.rest() if gate is not None else ""
            if shown:
                yield TextChunk(shown)
            yield Completion(prose, stray, result.usage, result.finish_reason, events)
            return
        choice = request.tool_choice
        calls: tuple[ToolCall, ...]
        # a backend that dropped the constraint (its server refused or ignored it) wrote freely;
        # one that only fell back to another shape (json_schema -> json_object) still constrains
        dropped = any(e.kind == "constraint_dropped" for e in events)
        parsed_strict = inner.constraint is not None and (not dropped or self.inner.supports_constraints)
        usage = result.usage
        if request.output is not None and not _looks_like_call(text, offered):
            prose, calls = text.strip() or None, ()  # the answer: a JSON value, checked by the loop
        else:
            prose, calls = parse_reply(
                text,
                offered,
                strict=parsed_strict,
                default_tool=choice if choice in offered else None,
                new_id=self._new_id,
            )
        if calls and self.repair and parsed_strict:
            calls, fixes, used = await repair_calls(self, request, inner.messages, text, calls, self._new_id)
            events, usage = (*events, *fixes), usage + used
        if not calls:
            assert gate is not None
            rest = gate.rest()
            if rest:
                yield TextChunk(rest)
            yield Completion(prose, (), usage, result.finish_reason, events)
            return
        for i, c in enumerate(calls):
            raw = json.dumps(c.arguments, ensure_ascii=False) if c.arguments is not None else (c.raw_arguments or "")
            yield ToolCallChunk(i, c.id, c.name, raw)
        yield Completion(prose, calls, usage, "tool_calls", events)

    def _new_id(self) -> str:
        return f"call_{next(self._ids)}"

    def __repr__(self) -> str:
        return f"UnTooled({self.inner!r})"


def _text_schema(spec: Any) -> dict[str, Any] | None:
    """The schema a text model writes its answer in: a scalar is wrapped in ``{"value": ...}``.

    A bare number gives a small model nothing to end on (measured: SmolLM2 wrote a number of
    500 digits); inside an object the closing brace ends it. Lists stay bare: wrapped, SmolLM2
    repeated the last record until the item limit, bare it stopped after the third of three.
    """
    if spec is None:
        return None
    schema: dict[str, Any] = spec.schema
    return schema if schema.get("type") in ("object", "array") else spec.wire_schema


def _looks_like_call(text: str, offered: Sequence[str]) -> bool:
    """Whether a reply that may also be a structured answer is a tool call: it names an offered tool."""
    value, err = load_json(text.strip()) if text.strip()[:1] in "{[" else (None, "prose")
    if err is not None:
        return bool(_CALL_NAME.search(text)) and any(f'"{n}"' in text for n in offered)
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(v, dict) and v.get("name") in offered and "arguments" in v for v in items)


_CALL_NAME = re.compile(r'"name"\s*:\s*"[\w-]+"\s*,\s*"arguments"')


def _last_results(request: Request) -> tuple[str, ...]:
    """The contents of the tool results that end the conversation (errors left out)."""
    out: list[str] = []
    for m in reversed(request.messages):
        if isinstance(m, ToolMessage):
            if not m.is_error:
                out.append(m.content)
        elif not (isinstance(m, UserMessage) and m.images):
            break
    return tuple(reversed(out))


def _add_user(out: list[Message], content: str, join: str = "\n\n") -> None:
    """Append user text, merged into a preceding user turn (some templates need alternation)."""
    if out and isinstance(out[-1], UserMessage):
        out[-1] = UserMessage(out[-1].content + join + content, out[-1].images)
    else:
        out.append(UserMessage(content.lstrip("\n") if join == "" else content))
