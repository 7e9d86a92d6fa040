"""How ``tool_choice="auto"`` decides between calling a tool and answering in text.

Four measurements, all cheap next to writing a reply:

* **call share**: of the first token's probability, the share on tokens that start a JSON call.
  A chatty small model puts little mass there even when a tool is plainly needed, and the share
  alone confuses requests no tool can serve with requests that need one;
* **fit**: how much better each tool explains the request than no tool does, per token of the
  request: ``(log P(request | tool's description) - log P(request | no tool)) / tokens``, from
  the same batched forward pass that ranks the tools before a call
  (:meth:`~agentnb.providers.hf.TransformersProvider.rank_tools`). A weather request is far more
  likely after a weather tool's description than after "no function"; "tell me a joke" is not;
* **missing numbers**: the best-fitting tool requires a number and the request holds none (no
  digit, no number word). "Is BMI a good measure of health?" is on a BMI tool's topic, but
  there is nothing to compute it from;
* **the model's own yes/no**: the conversation so far plus one more user turn, :data:`PROBE`
  ("Is there a function above that does exactly what I asked?"); the log-odds of "yes" against
  "no" for the next token. The prompt is in the prefix cache already, so this costs the
  probe's ~25 tokens, and it is asked only when its answer could change the verdict.

The decision is ``score = share_weight * log10(share) + fit_weight * best fit
+ missing_weight * missing + agree_weight * yes/no + bias``; a call when ``score >= 0``. The
weights are a class-balanced logistic regression on the tuning half of benchmarks/data (even
cases; 210 requests); the bias is the smallest that gives a call on 90% of the tuning half's
tool requests.

Held out (odd half of tasks, fc, more and decision_cases.json; 209 requests, measured with
``benchmarks/call_decision.py``): a call on 92% of the requests that need a tool (123/134),
text on 85% of those no tool fits (64/75). The previous rule (call share and fit only,
weights 0.5/5/1): 92% and 72%. Tried as well: the model's yes/no per tool (better by two or
three requests, but a forward pass per tool: 0.35 s each on this CPU), the reverse channel
(P(tool description | request)), word overlap, the number of tools, the margin between tools;
for issue 26 ("What is 37*91?" answered beside a ``multiply`` tool): argument coverage (the
request holds exactly the numbers the best tool takes; refitted, the same 123/134 and 64/75 held
out, and no change on benchmarks/data/sibling_cases.json), the probe naming the best tool
(114-118 of 134 called held out, 65-66 of 75 text), other wordings of the system prompt (the
call share of arithmetic stayed at chit-chat's, about 5e-5), the tool's arguments in the ranking
prompt ("Arguments: a (number, required); ..."; refitted, 118/134 and 65/75 held out, the same
12/15 and 12/15 on the siblings), a reminder at the end of the user's turn ("If one of the
functions does this, reply with the JSON call; ..."): it raised the call share of every
request alike, and the share's AUC on the siblings fell from 0.74 to 0.67-0.68.
``benchmarks/call_decision.py --refit`` refits.

>>> d = decide(share=0.02, fits={"get_weather": 0.9, "add": -0.2})
>>> d.action, d.tool_ranking[0][0]
('call', 'get_weather')
>>> decide(share=0.0005, fits={"get_weather": -0.3}).action
'answer'
>>> decide(share=0.00005, fits={"multiply": 0.2}).reason.endswith('tool_choice="required" makes it call a tool')
True
>>> decide(share=0.02, fits={"bmi": 0.6}, missing_numbers=True, agree=-0.5).action
'answer'
>>> lacks_numbers({"properties": {"kg": {"type": "number"}}, "required": ["kg"]}, "Is BMI useful?")
True
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Weights of the decision score (see the module docstring): a class-balanced logistic regression
#: on the tuning half of benchmarks/data (210 requests: 144 that need a tool, 66 that no offered
#: tool fits), rounded; the bias is the smallest that calls on 90% of that half's tool requests
#: (it calls on 91% of them and answers 83% of its no-tool ones).
SHARE_WEIGHT = 0.87
FIT_WEIGHT = 2.88
MISSING_WEIGHT = -3.73
AGREE_WEIGHT = 1.15
BIAS = 2.15
#: The yes/no log-odds are clipped to +-this (measured: -1.05 to 1.09 on benchmarks/data, 90% of
#: them within +-0.55), which bounds how far the answer can move the score, so it is asked only
#: when that could matter: on 132 of the 419 requests of benchmarks/data (1.5 would ask on 194 and
#: decide every one of them the same).
AGREE_RANGE = 1.0
#: The question the model answers yes or no, as one more user turn after the conversation.
PROBE = "Is there a function above that does exactly what I asked? Answer yes or no."
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
    missing_numbers: bool = False,
    agree: float | Callable[[], float] | None = None,
    threshold: float = 0.0,
    share_weight: float = SHARE_WEIGHT,
    fit_weight: float = FIT_WEIGHT,
    missing_weight: float = MISSING_WEIGHT,
    agree_weight: float = AGREE_WEIGHT,
    bias: float = BIAS,
) -> Verdict:
    """Call or answer, from the call share, each tool's fit, missing numbers and the model's yes/no.

    ``agree`` is the yes/no log-odds, or a function that measures it: then it is called only
    when its answer, clipped to :data:`AGREE_RANGE`, could change the verdict.
    """
    ranking = _ranking(fits)
    best = ranking[0][1] if ranking else 0.0
    score = _score(share, best, missing_numbers, share_weight, fit_weight, missing_weight, bias)
    asked: float | None = None
    if agree is not None and (not callable(agree) or _within_reach(score, threshold, agree_weight)):
        asked = agree() if callable(agree) else agree
        score += agree_weight * min(AGREE_RANGE, max(-AGREE_RANGE, asked))
    action = "call" if score >= threshold else "answer"
    parts = []
    if ranking:
        parts.append(
            f"{ranking[0][0]} fits the request {'better' if best > 0 else 'worse'} than no tool ({best:+.2f}/token)"
        )
    else:
        parts.append("no tool ranking")
    parts.append(f"call share {share:.2g}")
    if missing_numbers:
        parts.append(f"{ranking[0][0] if ranking else 'it'} needs a number the request lacks")
    if asked is not None:
        parts.append(
            f"asked whether a function does exactly this, the model leans {'yes' if asked >= 0 else 'no'} ({asked:+.2f})"
        )
    cmp = ">=" if action == "call" else "<"
    reason = f"{', '.join(parts)}: score {score:+.2f} {cmp} {threshold:g}"
    if action == "answer" and best > 0:  # a tool fits: say how to make the model use it
        reason += '; tool_choice="required" makes it call a tool'
    return Verdict(action, round(score, 3), threshold, share, ranking, reason)


def agree_matters(
    share: float,
    fits: dict[str, float],
    *,
    missing_numbers: bool = False,
    threshold: float = 0.0,
    share_weight: float = SHARE_WEIGHT,
    fit_weight: float = FIT_WEIGHT,
    missing_weight: float = MISSING_WEIGHT,
    agree_weight: float = AGREE_WEIGHT,
    bias: float = BIAS,
) -> bool:
    """Whether the model's yes/no could change :func:`decide`'s verdict (so it is worth asking).

    >>> agree_matters(0.02, {"add": 0.1}), agree_matters(0.02, {"get_weather": 0.9})
    (True, False)
    """
    ranking = _ranking(fits)
    best = ranking[0][1] if ranking else 0.0
    score = _score(share, best, missing_numbers, share_weight, fit_weight, missing_weight, bias)
    return _within_reach(score, threshold, agree_weight)


def _ranking(fits: dict[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted(((name, round(fit, 3)) for name, fit in fits.items()), key=lambda x: -x[1]))


def _score(
    share: float, best: float, missing: bool, share_weight: float, fit_weight: float, missing_weight: float, bias: float
) -> float:
    score = share_weight * math.log10(max(share, MIN_SHARE)) + fit_weight * best + bias
    return score + missing_weight if missing else score


def _within_reach(score: float, threshold: float, agree_weight: float) -> bool:
    reach = abs(agree_weight) * AGREE_RANGE
    return threshold - reach <= score < threshold + reach


#: A number in words; digits are matched separately.
_NUMBER_WORDS = re.compile(
    r"\b(zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fifteen|twenty|thirty|"
    r"forty|fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion|dozen|half|once|twice|double|"
    r"triple|pair|couple)\b",
    re.IGNORECASE,
)


def lacks_numbers(parameters: Mapping[str, Any], query: str) -> bool:
    """Whether a tool requires a number (integer or number argument) and ``query`` has none.

    >>> lacks_numbers({"properties": {"n": {"type": "integer"}}, "required": ["n"]}, "Roll three dice")
    False
    >>> lacks_numbers({"properties": {"city": {"type": "string"}}, "required": ["city"]}, "Weather?")
    False
    """
    properties = parameters.get("properties") or {}
    required = parameters.get("required") or ()

    def numeric(schema: Any) -> bool:
        kind = schema.get("type") if isinstance(schema, Mapping) else None
        kinds = kind if isinstance(kind, list) else [kind]
        return any(k in ("integer", "number") for k in kinds)

    if not any(numeric(properties.get(name)) for name in required):
        return False
    return not (any(c.isdigit() for c in query) or _NUMBER_WORDS.search(query))
