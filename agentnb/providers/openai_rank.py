"""Picking the function first on the untooled route, from the server's prompt log-probabilities.

The in-process backend picks the tool before the model writes a call: it scores the user's
request under each tool's description, ``log P(request | "Function: ... Example request for
this function: \\"")`` (a "noisy channel" choice; see
:meth:`agentnb.providers.hf.TransformersProvider.rank_tools`), and constrains the call to the
best one. A small model picks the right function more often that way than by writing its name.

A server can give the same scores when its legacy ``/v1/completions`` endpoint echoes the
prompt with log-probabilities (``echo=True, logprobs=1``: llama-cpp-python's server, vLLM).
With ``OpenAIProvider(..., rank_tools=True)``, when a call is required (``tool_choice="required"``) among several tools, the untooled route
asks for one such score per tool (cached per request and description), keeps the best tool
alone in the envelope, and reports a :class:`~agentnb.events.CallDecision` with the ranking.
A server without the endpoint, or one whose reply has no prompt log-probabilities, is not asked
again (a :class:`~agentnb.events.ConstraintDropped` event, once) and the envelope keeps every
tool. Measured against llama-cpp-python 0.3.36 it did not help: its echoed log-probabilities
are shifted by one token (docs/native.md, "Picking the tool first").

>>> query_logprob({"tokens": ["A", ":", " hi", " there", "!"], "token_logprobs": [None, -1.0, -2.0, -0.5, -3.0],
...                "text_offset": [0, 1, 2, 5, 11]}, head=2, end=11)
-2.5
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentnb.events import CallDecision, ConstraintDropped
from agentnb.providers.base import OutputConstraint, Request

#: The request setting UnTooled sends with the query and each tool's ``[[pick]]`` text.
PICK_HINT = "untooled_pick"
_CACHE_SIZE = 256


class ToolRanker:
    """Per provider: whether its server gives prompt log-probabilities, and the scores so far."""

    def __init__(self, enabled: bool = False) -> None:
        self.enabled = enabled
        self.works: bool | None = None  # None: not tried yet
        self.scores: dict[tuple[str, str], float] = {}

    async def narrow(self, provider: Any, request: Request) -> tuple[Request, tuple[Any, ...]]:
        """``request`` with its envelope narrowed to the best tool, and the events that says."""
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
            or any(t.name not in pick.get("prompts", {}) for t in constraint.tools)
        ):
            return request, ()
        query = pick["query"]
        try:
            scores = [await self._score(provider, pick["prompts"][t.name], query) for t in constraint.tools]
        except Exception as exc:  # no endpoint, no echo, no logprobs: rank no more on this server
            self.works = False
            reason = f"{type(exc).__name__}: {_short(str(exc))}; every tool stays in the envelope"
            return request, (ConstraintDropped(0, provider.name, "tool ranking by prompt logprobs", reason),)
        self.works = True
        ranking = sorted(zip((t.name for t in constraint.tools), scores, strict=True), key=lambda kv: -kv[1])
        best = next(t for t in constraint.tools if t.name == ranking[0][0])
        narrowed = OutputConstraint((best,), constraint.tool_choice, False, constraint.output)
        why = f"tool_choice='required': a call is required; {best.name} explains the request best (server logprobs)"
        event = CallDecision(0, "call", why, ranking=tuple((n, round(s, 4)) for n, s in ranking), tool=best.name)
        return dataclasses.replace(request, constraint=narrowed), (event,)

    async def _score(self, provider: Any, head: str, query: str) -> float:
        """``log P(query | head)``, summed over the query's tokens."""
        key = (head, query)
        if key in self.scores:
            return self.scores[key]
        response = await provider.client.with_options(max_retries=0).completions.create(
            model=provider.model, prompt=head + query, max_tokens=1, temperature=0.0, echo=True, logprobs=1
        )
        logprobs = response.choices[0].logprobs
        data = logprobs.model_dump() if hasattr(logprobs, "model_dump") else logprobs
        score = query_logprob(data, len(head), len(head) + len(query))
        if len(self.scores) >= _CACHE_SIZE:
            self.scores.clear()
        self.scores[key] = score
        return score


def query_logprob(logprobs: Any, head: int, end: int) -> float:
    """The summed log-probabilities of the echoed prompt's tokens that start in ``[head, end)``
    (the query; the generated token after it is left out).

    Raises ValueError when the reply holds no prompt log-probabilities.
    """
    if not isinstance(logprobs, dict):
        raise ValueError("the reply has no logprobs")
    offsets, values = logprobs.get("text_offset") or [], logprobs.get("token_logprobs") or []
    picked = [v for o, v in zip(offsets, values, strict=False) if head <= o < end and v is not None]
    if not picked:
        raise ValueError("the reply has no log-probabilities for the echoed prompt")
    return float(sum(picked))


def _short(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
