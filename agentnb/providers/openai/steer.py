"""Steering a call on a text-only server token by token, as the in-process backend steers it.

A server given the call's JSON schema (``response_format``) makes every call parse, but it
cannot do what the in-process backend does while a value is written
(:mod:`agentnb.providers.guidance.steer`): favour tokens that copy the user's request ("$250k" ->
``250000``, "2,500" -> ``2500``, "2024-01-15" kept as written), keep a call open for an
optional parameter the request names, close a list whose items start coming back. A small model
left alone writes ``250``, ``2.5``, ``"2024-15-31"``.

Steering needs the model's choices at each token, and any server with the plain
``/v1/completions`` endpoint and ``logprobs`` gives them (llama-cpp-python's server, run here;
vLLM and SGLang document them). So when a call is required (``tool_choice="required"`` or a named tool), the
provider decodes it here:

1. the prompt is the conversation in the server's own chat template
   (:mod:`agentnb.providers.openai.templates`, checked against the server once), followed by
   the call written so far;
2. the server writes on greedily, streaming each token with its :data:`TOP` most likely
   alternatives (no repetition penalty: a value like ``250000`` repeats digits);
3. each token is checked here: the grammar of the call (llguidance over bytes, the same
   grammar as in-process: :func:`agentnb.providers.guidance.constraint.grammar_for`) says which
   alternatives may come next, and the in-process steering adds its bonuses to their
   log-probabilities. Where the best of them is the server's own token, reading goes on; where
   it is another, that one is written, the stream is closed and the server is asked to go on
   from there. Text the grammar forces (keys, the tool's name) is written without asking.

Under ``tool_choice="auto"`` the call-or-answer decision is made first, from the server's
log-probabilities as in-process (:mod:`agentnb.providers.openai.decide`), and a call is then
steered here. Where that decision cannot be made the constrained envelope decides, and a call
it writes is decoded again here, for the tool it names (:meth:`ServerSteering.after_envelope`).

The result parses and validates by construction. When anything fails (no such endpoint, no
log-probabilities, no template the server agrees with, an alternative list with nothing the
grammar allows, more than :data:`MAX_ROUNDS` rounds), the call is asked for the usual way
(``response_format``) and nothing is lost; a server that fails is not tried again.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError
from agentnb.events import CallSteered, ConstraintDropped
from agentnb.providers.base import Completion, OutputConstraint, Request
from agentnb.providers.guidance.byteguide import ByteGuide
from agentnb.providers.guidance.steer import request_text
from agentnb.providers.openai.cost import GuidanceTimeError, cost_of
from agentnb.providers.openai.errors import _server_message, brief
from agentnb.providers.openai.logprobs import positions
from agentnb.providers.openai.usage import TokenCounter

#: Alternatives asked for per token (vLLM's default ``max_logprobs`` is 20).
TOP = 20
#: Most requests one call may take (one per place where steering changed the server's token).
MAX_ROUNDS = 24
#: The bonus strength, as in-process (:data:`agentnb.providers.hf.options.COPY_BIAS`).
STRENGTH = 6.0
#: The guidance step that decodes a call token by token (in ``GuidanceSkipped`` events).
STEER_STEP = "token-by-token steering"
#: Tokens a steered call may take when the request sets no ``max_tokens``.
DEFAULT_BUDGET = 256


class _Texts:
    """A stand-in tokenizer over the alternatives at one position (for the steering's tables)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)

    def batch_decode(self, ids: Sequence[Sequence[int]]) -> list[str]:
        return [self.texts[i[0]] for i in ids]


class Steerer:
    """The guidance's call steering (:class:`~agentnb.providers.guidance.call_bias.CallBias`)
    for one call, applied to the alternatives a server gives at each position."""

    def __init__(self, source: str, tools: Sequence[Any], strength: float = STRENGTH) -> None:
        from agentnb.providers.guidance.call_bias import named_in

        self.source = source
        self.tools = tools
        self.strength = strength
        self.named = named_in(source, tools)

    def bonuses(self, written: str, texts: Sequence[str]) -> list[float]:
        """Each alternative's bonus after ``written`` (the call so far)."""
        if not self.source or not texts:
            return [0.0] * len(texts)
        from agentnb.providers.guidance.call_bias import CallBias
        from agentnb.providers.guidance.steer import TokenTable

        bias = CallBias(self.source, self.tools, TokenTable(_Texts(texts), len(texts)), self.strength, self.named)
        out = [0.0] * len(texts)
        for index, value in bias.bonus(written).items():
            out[index] += value
        return out


@dataclass
class Steered:
    """A steered call: its JSON text, the requests it took, the tokens read, and the places
    where steering chose another token than the server's (``(argument, server's, chosen)``)."""

    text: str
    rounds: int
    tokens: int
    changes: list[tuple[str, str, str]]
    #: Each request's prompt (for the usage, where the server reports none).
    prompts: list[str] = dataclasses.field(default_factory=list)

    def detail(self, most: int = 6) -> str:
        """The changes in words: ``principal: "0" not ","``."""
        parts = [f"{key or 'call'}: {chosen!r} not {own!r}" for key, own, chosen in self.changes[:most]]
        more = len(self.changes) - most
        return "; ".join(parts) + (f"; {more} more" if more > 0 else "")


def choose(guide: ByteGuide, steerer: Steerer, written: str, own: str, top: dict[str, float]) -> str | None:
    """The text to write next: the best alternative the grammar allows, by log-probability plus
    steering bonus (the server's own token ``own`` wins ties); None when none is allowed."""
    texts, scores = [], []
    for text, logprob in top.items():
        usable = guide.usable(text) if "\ufffd" not in text else None
        if usable is not None and isinstance(logprob, int | float) and math.isfinite(logprob):
            texts.append(usable)
            scores.append(float(logprob))
    if not texts:
        return None
    for i, bonus in enumerate(steerer.bonuses(written, texts)):
        scores[i] += bonus
    best = max(range(len(texts)), key=lambda i: (scores[i], texts[i] == own))
    return texts[best]


class ServerSteering:
    """Per provider: whether its server can steer calls, its chat template, and the decoding.

    ``enabled``: True, False, or ``"auto"`` (steer where the server can, silently otherwise).
    """

    def __init__(self, enabled: bool | str = "auto", template: str | None = None) -> None:
        from agentnb.providers.openai.templates import TEMPLATES

        if enabled not in (True, False, "auto"):
            raise UserError(f"steer must be True, False or 'auto', not {enabled!r}")
        if template is not None and template not in TEMPLATES:
            raise UserError(f"chat_template must be one of {sorted(TEMPLATES)}, not {template!r}")
        self.enabled = enabled
        self.template_name = template
        self.template: Any = None
        self.works: bool | None = None
        self.failure = ""
        self.notes: list[Any] = []
        self.counter = TokenCounter()

    def applies(self, request: Request) -> bool:
        c = request.constraint
        return (
            bool(self.enabled)
            and self.works is not False
            and c is not None
            and bool(c.tools)
            and not c.parallel
            and c.output is None
            and c.tool_choice not in ("auto", "none")
        )

    async def completion(self, provider: Any, request: Request, notes: tuple[Any, ...] = ()) -> Completion | None:
        """The reply to ``request`` as a steered call (with ``notes`` and a steering event), or
        None when steering does not apply or failed (then ask as usual)."""
        if not self.applies(request):
            return None
        c = request.constraint
        assert c is not None
        skipped = self.too_costly(provider, c.tools)
        if skipped is not None:  # asked for the usual way (response_format), this step
            self.notes.append(skipped)
            return None
        messages = [provider._to_wire(m) for m in request.messages]
        steered = await self.call(provider, request, messages)
        if steered is None:
            return None
        name = c.tool_choice if c.tool_choice != "required" else (c.tools[0].name if len(c.tools) == 1 else "")
        name = name or _called(steered.text)
        event = CallSteered(
            0, provider.name, name, steered.rounds, steered.tokens, len(steered.changes), steered.detail()
        )
        usage = await self.counter.usage(provider, steered.prompts, steered.text, steered.tokens)
        return Completion(steered.text, (), usage, "stop", (*notes, event))

    def too_costly(self, provider: Any, tools: Sequence[Any]) -> Any:
        """The :class:`~agentnb.events.GuidanceSkipped` event when steering a call to one of
        ``tools`` would take the step past its budget (from the measured price of a token
        with alternatives); else None."""
        cost = cost_of(provider)
        longest = max(len(json.dumps({"name": t.name, "arguments": _skeleton(t.parameters)})) for t in tools)
        tokens = cost.tokens_in("x" * longest)
        return cost.skip(STEER_STEP, cost.estimate(stream=tokens), f"a call of ~{tokens} tokens")

    async def after_envelope(
        self, provider: Any, request: Request, text: str, notes: tuple[Any, ...] = ()
    ) -> Completion | None:
        """Under ``tool_choice="auto"`` the server's constrained reply decides between a call
        and an answer; when it is a call, the call is decoded again here, steered, for the tool
        it names. None when the reply is no call, or steering does not apply or failed (then
        the server's call stands)."""
        c = request.constraint
        if not self.enabled or self.works is False or c is None or c.tool_choice != "auto" or c.parallel:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        name = value.get("name") if isinstance(value, dict) else None
        tool = next((t for t in c.tools if t.name == name), None)
        if tool is None:
            return None
        narrowed = dataclasses.replace(request, constraint=OutputConstraint((tool,), tool.name, False, c.output))
        return await self.completion(provider, narrowed, notes)

    async def call(self, provider: Any, request: Request, messages: list[dict[str, Any]]) -> Steered | None:
        """The steered call for ``request`` (its wire ``messages``), or None (then ask as usual)."""
        if not self.applies(request):
            return None
        try:
            if self.template is None:
                self.template = await self._template(provider)
            result = await self._decode(provider, request, messages)
        except UnreadableTokenError:
            return None  # this call only: the server's stream lost a character
        except GuidanceTimeError as exc:  # this step only: asked for the usual way
            self.notes.append(exc.event)
            return None
        except Exception as exc:
            self.failed(provider, exc)
            return None
        if result is not None:
            self.works = True
        return result

    def failed(self, provider: Any, exc: Exception) -> None:
        """A request of steering (or of the decision that uses its template) failed."""
        if self.works:  # it worked before: a passing failure, this call only
            return
        self.works = False  # the server cannot: never again on this provider
        self.failure = provider._key.redact(f"{type(exc).__name__}: {brief(_server_message(exc), 200)}")
        if self.enabled is True:
            reason = f"{self.failure}; calls are asked for with response_format"
            self.notes.append(ConstraintDropped(0, provider.name, "token-by-token steering", reason))

    def drain(self) -> tuple[Any, ...]:
        """The events steering has to report (once), emptied."""
        out, self.notes = tuple(self.notes), []
        return out

    async def _template(self, provider: Any) -> Any:
        from agentnb.providers.openai.templates import find_template

        names = [self.template_name] if self.template_name else None
        found = await cost_of(provider).within("finding the server's chat template", find_template(provider, names))
        if found is None:
            raise ValueError("no known chat template matches the server's token counts")
        return found

    async def _decode(self, provider: Any, request: Request, messages: list[dict[str, Any]]) -> Steered | None:
        from agentnb.providers.guidance.constraint import grammar_for

        c = request.constraint
        assert c is not None
        tools = [t for t in c.tools if t.name == c.tool_choice] or list(c.tools)
        guide = ByteGuide(grammar_for(tools, "call"))
        source = request_text(request.settings.get("untooled_pick"), ()) or _last_user(messages)
        steerer = Steerer(source, tools)
        prompt = self.template.render(messages)
        budget = int(request.settings.get("max_tokens") or provider.settings.get("max_tokens") or DEFAULT_BUDGET)
        written, spent, rounds = "", 0, 0
        changes: list[tuple[str, str, str]] = []
        prompts: list[str] = []
        while not guide.done:
            forced = guide.forced()
            if forced:
                guide.take(forced)
                written += forced
                continue
            if spent >= budget or rounds >= MAX_ROUNDS:
                return None
            rounds += 1
            prompts.append(prompt + written)
            cost = cost_of(provider)
            with cost.timing("stream") as counts:
                progress, change, taken = await cost.within(
                    STEER_STEP, self._round(provider, prompt + written, budget - spent, guide, steerer, written)
                )
                counts["tokens"] = max(1, progress)
            if change is not None:
                changes.append((_key(written + taken[: -len(change[1])]), *change))
            spent += progress
            written += taken
            if not taken:
                return None  # the server stopped (or offered nothing allowed) where the call goes on
        return Steered(written, rounds, spent, changes, prompts)

    async def _round(
        self, provider: Any, prompt: str, budget: int, guide: ByteGuide, steerer: Steerer, written: str
    ) -> tuple[int, tuple[str, str] | None, str]:
        """One streamed request: the tokens read, the change steering made (the server's token
        and the one chosen; it ends the request) if any, and the text taken."""
        client = provider.client.with_options(max_retries=0)
        stream = await client.completions.create(
            model=provider.model,
            prompt=prompt,
            max_tokens=budget,
            temperature=0.0,
            logprobs=TOP,
            stream=True,
            extra_body={"repeat_penalty": 1.0},
        )
        taken, read = "", 0
        async with stream:
            async for chunk in stream:
                choice = chunk.choices[0] if chunk.choices else None
                found = positions(getattr(choice, "logprobs", None))
                if not found and choice is not None and choice.text:
                    raise ValueError("the server streams no log-probabilities")
                for own, top in found:
                    read += 1
                    if not own or "\ufffd" in own:
                        raise UnreadableTokenError(own)
                    pick = choose(guide, steerer, written + taken, own, top)
                    if pick is None:
                        return read, None, taken
                    guide.take(pick)
                    taken += pick
                    if pick != own:
                        return read, (own, pick), taken
                    if guide.done:
                        return read, None, taken
        return read, None, taken


class UnreadableTokenError(Exception):
    """The server streamed a token whose text it could not give: part of a character written
    over several tokens (llama-cpp-python sends ``""`` for each part, and the character never
    comes), so the call cannot be followed here."""


_KEY = re.compile(r'"([^"\\]+)": ')


def _key(written: str) -> str:
    """The argument being written at the end of a call's text (its last key)."""
    keys = [k for k in _KEY.findall(written) if k not in ("name", "arguments")]
    return keys[-1] if keys else ""


def _called(text: str) -> str:
    found = re.match(r'\{"name": "([^"]+)"', text)
    return found.group(1) if found else ""


def _skeleton(parameters: Any) -> dict[str, str]:
    """A call's arguments at a typical length: each parameter a dozen characters."""
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    return {str(k): "x" * 12 for k in (properties or {})}


def _last_user(messages: Sequence[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            return str(m["content"])
    return ""
