"""The server's side of picking the function first: scores from its prompt log-probabilities.

The guidance picks the tool before the model writes a call (:mod:`agentnb.providers.guidance.rank`):
it scores the user's request under each tool's description, ``log P(request | "Function: ...
Example request for this function: \\"")`` (a "noisy channel" choice), and constrains the call
to the best one. A small model picks the right function more often that way than by writing its
name. In-process the scores are one forward pass; this module gives them on a server.

A server can give the same scores when its legacy ``/v1/completions`` endpoint echoes the
prompt with log-probabilities (``echo=True, logprobs=N``: llama-cpp-python's server, vLLM).
With ``OpenAIProvider(..., rank_tools=True)`` (or ``"auto"``, the default), when a call is
required (``tool_choice="required"``) among several tools, the untooled route asks for one
such score per tool (cached per request and description, through
:class:`~agentnb.providers.openai.source.ServerSource`), keeps the best tool alone in the
envelope, and reports a :class:`~agentnb.events.CallDecision` with the ranking.

Servers disagree on what an echoed prompt token's log-probability is. In vLLM it is the
token's own, ``log P(token | the tokens before it)`` (*aligned*). llama-cpp-python 0.3.36
reads each prompt token from the row of logits computed *after* it, unless the prompt starts
with the model's BOS token (SmolLM2's tokenizer adds none): the value given for a token is
``log P(next token = this token)`` (*shifted*), and its ``top_logprobs`` at a token are the
alternatives for the next one. So the first time it would rank, the provider sends one probe
(:data:`PROBE`, a count whose every next token is easy to predict) and reads the convention
from where the top alternatives sit (:func:`alignment`). Aligned: the scores are read as they
are. Shifted: each token's log-probability is looked up among the previous token's top
:data:`TOP_K` alternatives; a token outside them counts as the least of them (an upper bound),
and a value a same-text twin overwrote is recovered from its place (:func:`_looked_up`).
Measured in-process on the fc cases' 34 multi-tool cases, that picks the right tool as often as
the exact score (31; with the top 100: 29); against llama-cpp-python the server's score for a
request came within 0.2 of the in-process one (docs/native.md, "Picking the tool first").

A server without the endpoint, whose reply has no prompt log-probabilities, or whose echo
follows neither convention is not asked again (with ``rank_tools=True`` a
:class:`~agentnb.events.ConstraintDropped` event says so, once; ``"auto"`` falls back
silently) and the envelope keeps every tool. The probe is the only extra request a provider
ever pays when ranking does not work.

>>> query_logprob({"tokens": ["A", ":", " hi", " there", "!"], "token_logprobs": [None, -1.0, -2.0, -0.5, -3.0],
...                "text_offset": [0, 1, 2, 5, 11]}, head=2, end=11)
-2.5
>>> shifted = {"tokens": ["A", ":", " hi", " there", "!"], "text_offset": [0, 1, 2, 5, 11],
...            "top_logprobs": [None, {" hi": -0.5, ":": -3.0}, {" you": -1.0, " hi": -7.0}, {"!": -0.1}, {}]}
>>> query_logprob(shifted, head=2, end=11, shifted=True)  # " hi": -0.5; " there" not in the top: -1.0
-1.5
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

from agentnb.errors import UserError
from agentnb.providers.base import OutputConstraint, Request
from agentnb.providers.openai.cost import PRICE, cost_of

#: The request setting UnTooled sends with the query and each tool's ``[[pick]]`` text.
PICK_HINT = "untooled_pick"
#: What the probe echoes: every next token is easy to predict, so where the top alternatives
#: sit shows which token each log-probability belongs to.
PROBE = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24"
#: How many alternatives per token a shifted server is asked for (the next token's, read back).
TOP_K = 400
_PROBE_K = 5
_CACHE_SIZE = 256
#: What a guidance request cut off by the budget was for (the ``GuidanceSkipped`` step).
ECHO_STEP = "scoring by echoed log-probabilities"
Convention = Literal["aligned", "shifted"]


class ToolRanker:
    """Per provider: whether its server gives prompt log-probabilities, how, and the scores so far.

    ``enabled``: True, False, or ``"auto"`` (rank where the server can, silently otherwise).
    """

    def __init__(self, enabled: bool | str = "auto") -> None:
        if enabled not in (True, False, "auto"):
            raise UserError(f"rank_tools must be True, False or 'auto', not {enabled!r}")
        self.enabled = enabled
        self.works: bool | None = None  # None: not tried yet
        self.convention: Convention | None = None
        self.scores: dict[tuple[str, str], float] = {}
        #: How many of the server's tokens each scored query has (by the same key).
        self.sizes: dict[tuple[str, str], int] = {}

    async def narrow(self, provider: Any, request: Request) -> tuple[Request, tuple[Any, ...]]:
        """``request`` with its envelope narrowed to the best tool, and the events that says
        (:func:`agentnb.providers.guidance.rank.pick_tool`, on :class:`~agentnb.providers.openai.source.ServerSource`)."""
        from agentnb.providers.guidance.rank import pick_tool
        from agentnb.providers.openai.source import ServerSource

        constraint = request.constraint
        pick = request.settings.get(PICK_HINT)
        if (
            not self.enabled
            or self.works is False
            or constraint is None
            or constraint.tool_choice != "required"
            or constraint.parallel
            or len(constraint.tools) < 2
            or not isinstance(pick, dict)
        ):
            return request, ()
        tools, events = await pick_tool(ServerSource(provider, request), constraint.tools, pick)
        if len(tools) != 1:  # not ranked: every tool stays in the envelope
            return request, events
        narrowed = OutputConstraint(tuple(tools), constraint.tool_choice, False, constraint.output)
        return dataclasses.replace(request, constraint=narrowed), events

    async def too_costly(self, provider: Any, heads: list[str], query: str, step: str) -> Any:
        """The :class:`~agentnb.events.GuidanceSkipped` event when scoring ``query`` under the
        ``heads`` not scored yet (and the probe, if it is still to come) would take the step
        past its budget; else None. The first time, a two-token echo prices an echoed token."""
        cost = cost_of(provider)
        todo = [h for h in heads if (h, query) not in self.scores]
        if not todo or cost.limit() is None:
            return None
        if not cost.known("echo"):
            await self._echo(provider, PRICE, 1)
        tokens = sum(cost.tokens_in(h + query) for h in todo)
        what = f"{len(todo)} scoring request{'s' if len(todo) != 1 else ''} echoing ~{tokens} tokens"
        if self.convention is None:
            tokens += cost.tokens_in(PROBE) // 2  # digits and commas: about two characters a token
            what += " and a probe"
        return cost.skip(step, cost.estimate(echo=tokens), what)

    async def _echo(self, provider: Any, prompt: str, top: int) -> dict[str, Any]:
        cost = cost_of(provider)
        with cost.timing("echo") as counts:
            counts["tokens"] = cost.tokens_in(prompt)  # until the server says (a request cut off)
            response = await cost.within(
                ECHO_STEP,
                provider.client.with_options(max_retries=0).completions.create(
                    model=provider.model, prompt=prompt, max_tokens=1, temperature=0.0, echo=True, logprobs=top
                ),
            )
            logprobs = response.choices[0].logprobs
            data = logprobs.model_dump() if hasattr(logprobs, "model_dump") else logprobs
            if not isinstance(data, dict):
                raise ValueError("the reply has no logprobs")
            counts["tokens"] = len(data.get("tokens") or ()) or 1
            counts["chars"] = len(prompt) if prompt not in (PRICE, PROBE) else 0  # text, not digits
        return data

    async def _probe(self, provider: Any) -> Convention:
        """Which convention the server's echoed log-probabilities follow (one request)."""
        found = alignment(await self._echo(provider, PROBE, _PROBE_K))
        if found is None:
            raise ValueError("the echoed log-probabilities follow neither the prompt's tokens nor the next ones")
        return found

    async def _score(self, provider: Any, head: str, query: str) -> float:
        """``log P(query | head)``, summed over the query's tokens."""
        key = (head, query)
        if key in self.scores:
            return self.scores[key]
        shifted = self.convention == "shifted"
        data = await self._echo(provider, head + query, TOP_K if shifted else 1)
        score = query_logprob(data, len(head), len(head) + len(query), shifted=shifted)
        if len(self.scores) >= _CACHE_SIZE:
            self.scores.clear()
            self.sizes.clear()
        self.scores[key] = score
        offsets = data.get("text_offset") or []
        self.sizes[key] = max(1, sum(len(head) <= o < len(head) + len(query) for o in offsets))
        return score


def alignment(logprobs: Any) -> Convention | None:
    """Whether an echoed prompt's ``top_logprobs`` at each token are that token's alternatives
    (``"aligned"``) or the next token's (``"shifted"``); None when it cannot be told.

    >>> alignment({"tokens": ["1", ",", " 2", ",", " 3"],
    ...            "top_logprobs": [None, {",": -0.1}, {" 2": -0.2}, {",": -0.1}, {" 3": -0.1}]})
    'aligned'
    >>> alignment({"tokens": ["1", ",", " 2", ",", " 3"],
    ...            "top_logprobs": [None, {" 2": -0.1, ",": -9.0}, {",": -0.2, " 2": -8.0}, {" 3": -0.1, ",": -9.0}, {}]})
    'shifted'
    """
    if not isinstance(logprobs, dict):
        return None
    tokens, tops = logprobs.get("tokens") or [], logprobs.get("top_logprobs") or []
    here = after = 0
    for i, top in enumerate(tops[: len(tokens)]):
        if not isinstance(top, dict) or not top:
            continue
        best = max(top, key=lambda k: top[k])
        if best == tokens[i]:
            here += 1
        elif i + 1 < len(tokens) and best == tokens[i + 1]:
            after += 1
    if here >= 3 and here >= 2 * after:
        return "aligned"
    if after >= 3 and after >= 2 * here:
        return "shifted"
    return None


def query_logprob(logprobs: Any, head: int, end: int, *, shifted: bool = False) -> float:
    """The summed log-probabilities of the echoed prompt's tokens that start in ``[head, end)``
    (the query; the generated token after it is left out).

    ``shifted``: the server's ``top_logprobs`` at a token are the next token's alternatives;
    each token is looked up in the previous token's, and one not among them counts as the
    least of them (the previous token's own entry, which llama-cpp-python adds, aside).

    Raises ValueError when the reply holds no prompt log-probabilities.
    """
    if not isinstance(logprobs, dict):
        raise ValueError("the reply has no logprobs")
    offsets = logprobs.get("text_offset") or []
    if shifted:
        tokens, tops = logprobs.get("tokens") or [], logprobs.get("top_logprobs") or []
        picked = []
        for i, offset in enumerate(offsets[: len(tokens)]):
            if not head <= offset < end or i == 0 or i > len(tops) or not isinstance(tops[i - 1], dict):
                continue
            value = _looked_up(tops[i - 1], tokens[i], tokens[i - 1])
            if value is not None:
                picked.append(value)
    else:
        values = logprobs.get("token_logprobs") or []
        picked = [v for o, v in zip(offsets, values, strict=False) if head <= o < end and v is not None]
    if not picked or not all(isinstance(v, int | float) and math.isfinite(v) for v in picked):
        raise ValueError("the reply has no log-probabilities for the echoed prompt")
    return float(sum(picked))


def _looked_up(alternatives: dict[str, float], token: str, own: str) -> float | None:
    """``token``'s log-probability among a position's top ``alternatives`` (text -> value,
    best first), where ``own`` is the entry llama-cpp-python adds for the token at that position.

    Not among them: the least of them (an upper bound). Several tokens can read as the same
    text (llama-cpp-python keys the alternatives by text, and a later, less likely one
    overwrites the value of an earlier one): an entry smaller than the one after it was
    overwritten, and is read as the most its place allows, the entry before it or what the
    others leave of the probability mass.
    """
    ranked = [(k, v) for k, v in alternatives.items() if k != own or k == token]
    if not ranked:
        return None
    keys = [k for k, _ in ranked]
    values = [v for _, v in ranked]
    if token not in keys:
        rivals = [v for k, v in ranked if k != own]
        return min(rivals or values)
    j = keys.index(token)
    value = values[j]
    if j + 1 < len(values) and value < values[j + 1]:  # overwritten by a less likely twin
        rest = 1.0 - sum(math.exp(v) for m, v in enumerate(values) if m != j)
        ceiling = math.log(rest) if rest > 0 else values[j + 1]
        value = max(values[j + 1], min(ceiling, values[j - 1] if j > 0 else 0.0))
    return value
