"""How ``tool_choice="auto"`` decides between calling a tool and answering in text.

Two measurements, both from the model itself:

* **call share**: of the first token's probability, the share on tokens that start a JSON call.
  A chatty small model puts little mass there even when a tool is plainly needed, and the share
  alone confuses requests no tool can serve with requests that need one;
* **fit**: how much better each tool explains the request than no tool does, per token of the
  request: ``(log P(request | tool's description) - log P(request | no tool)) / tokens``, from
  the same batched forward pass that ranks the tools before a call
  (:meth:`~agentnb.providers.hf.TransformersProvider.rank_tools`). A weather request is far more
  likely after a weather tool's description than after "no function"; "tell me a joke" is not.

The decision is ``score = share_weight * log10(share) + fit_weight * best fit + bias``; a call
when ``score >= 0``. The weights were fitted (class-balanced logistic regression) on the tuning
half of benchmarks/data (even-numbered cases) and checked on the held-out half; see the README.

What was tried and measured (tuning half -> held-out half, need a tool -> call / no tool fits ->
text, over tasks, fc, more and decision_cases): other "no tool" texts ("answer a question,
explain, do arithmetic or chat", the request with no description at all, the best or the
log-sum of three such texts), the margin between the best and second tool, the number of tools,
and per-token contrasts (the worst token, the sum of the negative ones, the first token). None
beat this pair of measurements by more than two or three requests on the held-out half, and
the near misses (a circle's area asked with only a circle-circumference tool offered) stay
the hard part: the tool's description explains such a request about as well as a request it
serves.

Measured with ``benchmarks/call_decision.py`` on the held-out half (209 requests): a call on
86% of the requests that need a tool (115/134) and text on 84% of those no tool fits (63/75);
the weights before (0.5/5.0/1.0, "no function fits" as the no-tool text): 92% and 72%.

>>> d = decide(share=0.02, fits={"get_weather": 0.9, "add": -0.2})
>>> d.action, d.tool_ranking[0][0]
('call', 'get_weather')
>>> decide(share=0.0005, fits={"get_weather": -0.3}).action
'answer'
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Weights of the decision score: a class-balanced logistic regression on the tuning half of
#: benchmarks/data (210 requests: 144 that need a tool, 66 that no offered tool fits, 38 of them
#: from decision_cases.json's near misses, chit-chat, knowledge and arithmetic) gave 0.99 for the
#: share, 3.58 for the fit and 2.28 for the bias, with the "no tool" text of prompt.txt's
#: ``[[pick_none]]`` ("general conversation, knowledge questions and anything the functions
#: above cannot do"). Rounded, they call on 124/144 of the tuning half's tool requests and answer
#: 55/66 of its no-tool ones (the weights before, 0.5/5.0/1.0 with the older "no function fits"
#: text: 128/144 and 47/66). Held-out figures: README.md, ``benchmarks/call_decision.py``.
SHARE_WEIGHT = 1.0
FIT_WEIGHT = 3.6
BIAS = 2.3
#: Shares below this count as this (log10 of 0 is not a number).
MIN_SHARE = 1e-6


@dataclass(frozen=True, slots=True)
class Verdict:
    """A decision, with what it was made from (for the :class:`~agentnb.events.CallDecision` event)."""

    action: str
    score: float
    threshold: float
    share: float
    tool_ranking: tuple[tuple[str, float], ...]
    reason: str


def decide(
    share: float,
    fits: dict[str, float],
    *,
    threshold: float = 0.0,
    share_weight: float = SHARE_WEIGHT,
    fit_weight: float = FIT_WEIGHT,
    bias: float = BIAS,
) -> Verdict:
    """Call or answer, from the call share and each tool's fit (see the module docstring)."""
    ranking = tuple(sorted(((name, round(fit, 3)) for name, fit in fits.items()), key=lambda x: -x[1]))
    best = ranking[0][1] if ranking else 0.0
    score = share_weight * math.log10(max(share, MIN_SHARE)) + fit_weight * best + bias
    action = "call" if score >= threshold else "answer"
    if ranking:
        fit_text = (
            f"{ranking[0][0]} fits the request {'better' if best > 0 else 'worse'} than no tool ({best:+.2f}/token)"
        )
    else:
        fit_text = "no tool ranking"
    reason = f"{fit_text}, call share {share:.2g}: score {score:+.2f} {'>=' if action == 'call' else '<'} {threshold:g}"
    return Verdict(action, round(score, 3), threshold, share, ranking, reason)
