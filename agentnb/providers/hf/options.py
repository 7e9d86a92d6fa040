"""Generation options of the in-process backend, and the request hints UnTooled sends it.

>>> GenerationOptions().merged({"temperature": 0.7}).temperature
0.7
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from agentnb.errors import UserError
from agentnb.providers.guidance.call_or_answer import CALL_THRESHOLD, CALL_THRESHOLD_AFTER_RESULTS

#: Share of the first token's probability that must start a call for ``auto`` to call a tool
#: (when the tools' fits are not weighed); the guidance's, as on a server.
DEFAULT_CALL_THRESHOLD = CALL_THRESHOLD
#: The same after tool results, when answering is the norm.
DEFAULT_CALL_THRESHOLD_AFTER_RESULTS = CALL_THRESHOLD_AFTER_RESULTS
#: Request setting UnTooled adds (to providers with ``understands_untooled_hints``) when the
#: conversation ends with tool results.
AFTER_RESULTS_HINT = "untooled_after_tool_results"
#: Request setting UnTooled adds with :data:`AFTER_RESULTS_HINT`: the contents of those results,
#: for the answer to copy from (:mod:`agentnb.providers.guidance.ground`).
RESULTS_HINT = "untooled_results"
#: Request setting UnTooled adds when a single call must choose among several tools:
#: ``{"query": <the user's request>, "prompts": {<tool name>: <its description, for ranking>}}``.
PICK_HINT = "untooled_pick"
#: Yielded by :meth:`TransformersProvider.tokens` when the grammar ended the reply.
GRAMMAR_DONE = -1
#: Yielded by :meth:`TransformersProvider.tokens` when prose was stopped for repeating itself.
LOOPING = -2
#: Default :attr:`GenerationOptions.copy_bias`.
COPY_BIAS = 6.0
#: Default :attr:`GenerationOptions.result_bias`: on the tuning half of the 50 agent tasks
#: (benchmarks/grounded_answers.py) 4 still let "The answer is 2000-01-01" through; 8 put the
#: result's value in every answer that had a result (19/19, against 11/16 with 0).
RESULT_BIAS = 8.0


@dataclass(frozen=True, slots=True)
class GenerationOptions:
    """How tokens are chosen. ``temperature=0`` (the default) is greedy decoding.

    Any field can be overridden per request through ``Request.settings`` (an Agent's
    ``settings=``).
    """

    max_new_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    #: ``auto`` calls a tool when at least this share of the first token's probability mass
    #: starts a call (constrained decoding only).
    call_threshold: float = DEFAULT_CALL_THRESHOLD
    #: ... when the conversation ends with tool results.
    call_threshold_after_results: float = DEFAULT_CALL_THRESHOLD_AFTER_RESULTS
    #: Pick the function before writing a call (when UnTooled sends :data:`PICK_HINT`): rank
    #: the tools (:meth:`TransformersProvider.rank_tools`), then decode only the best one's
    #: call. Off, the grammar lets the model choose the name greedily token by token.
    pick_tool_first: bool = True
    #: ``auto`` decides from each tool's fit to the request as well as the call share
    #: (:mod:`agentnb.providers.guidance.decide`), when UnTooled sent the tools' descriptions; off,
    #: the call share alone decides (``call_threshold``).
    decide_by_fit: bool = True
    #: ... and, where it could change the verdict, from the model's yes/no to "is there a
    #: function above that does exactly what I asked?" (:data:`~agentnb.providers.guidance.decide.PROBE`).
    ask_model: bool = True
    #: A call when the decision score is at least this (raise it to call less often).
    call_score_threshold: float = 0.0
    #: Logit bonus for call tokens that copy a span of the user's last message into an argument
    #: value, or close the value where the span ends (:mod:`agentnb.providers.guidance.steer`); 0: off.
    copy_bias: float = COPY_BIAS
    #: A call still unfinished after ``max_new_tokens`` gets up to this many more tokens, and
    #: they may only close it (constrained decoding only).
    closing_reserve: int = 16
    #: Logit bonus for prose tokens that start or continue the words and numbers of the tool
    #: results the conversation ends with (:mod:`agentnb.providers.guidance.ground`); 0: off.
    result_bias: float = RESULT_BIAS
    #: Stop prose whose last this many tokens have been written before (0: never).
    loop_window: int = 16

    def merged(self, settings: dict[str, Any]) -> GenerationOptions:
        known = {f.name for f in fields(self)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise UserError(f"unknown generation settings {unknown}; known: {sorted(known)}")
        return replace(self, **settings) if settings else self


@dataclass(frozen=True, slots=True)
class Decision:
    """How ``auto`` decided between calling a tool and answering (for benchmarks and traces)."""

    mode: str
    call_share: float | None = None
    #: The tool picked before decoding the arguments, when several were on offer.
    tool: str | None = None
