"""Call or answer under ``tool_choice="auto"``, measured on a model (the rule is :mod:`.decide`).

The steps, the same for the in-process model and a server (only the
:class:`~agentnb.providers.guidance.source.LogprobSource` differs):

1. the **call share** of the reply's first token (:meth:`NextToken.call_share`);
2. right after tool results, the share alone decides, against a high bar (answering is the norm
   there, and the tools already served this request, so their fit says nothing new);
3. else, where the source can score and UnTooled sent the tools' descriptions and a "no tool"
   text, each tool's **fit** (:func:`~agentnb.providers.guidance.rank.tool_fits`), skipped when
   it would cost more than the step's budget; without fits the share alone decides;
4. with fits, :func:`~agentnb.providers.guidance.decide.decide`, and the model's **yes/no** to
   :data:`~agentnb.providers.guidance.decide.PROBE` only where it could change the verdict
   (and fits the budget);
5. for a call, the tool: the best-fitting one, or, without fits and where the caller asks for
   it (``Rules.rank_call``), the best by the ranking alone.

The verdict is a :class:`~agentnb.events.CallDecision` event; what to do with it (a grammar
branch in-process, a narrowed envelope on a server) is the caller's.

>>> from agentnb.providers.guidance.source import Alternatives, Scored, drive
>>> class Fake:
...     via, can_score = "fake", True
...     async def scores(self, heads, text):
...         return [Scored({"weather:": -6.0, "none:": -14.0}[h], 4) for h in heads]
...     async def next_token(self, follow_up=None):
...         return Alternatives({'{"': -3.0, "It": -0.1})
...     async def too_costly(self, step, *, heads=(), text="", asks=0):
...         return None
>>> class T:
...     name, parameters = "get_weather", {"properties": {"city": {"type": "string"}}}
>>> pick = {"query": "Weather in Oslo?", "prompts": {"get_weather": "weather:"}, "none": "none:"}
>>> choice = drive(call_or_answer(Fake(), [T()], pick, Rules()))
>>> choice.action, choice.picked, choice.events[-1].reason.endswith("(fake)")
('call', 'get_weather', True)
>>> drive(call_or_answer(Fake(), [T()], pick, Rules(call_threshold=0.9), after_results=True)).action
'answer'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentnb.events import CallDecision
from agentnb.providers.guidance.decide import Verdict, agree_matters, decide, lacks_numbers
from agentnb.providers.guidance.rank import best, ranked_best, tool_fits
from agentnb.providers.guidance.source import LogprobSource, UnavailableError

#: The call share under which, without fits, the reply is text (measured with SmolLM2-135M:
#: requests that need a tool mostly gave shares of 0.003-0.08, chit-chat 0.000-0.001).
CALL_THRESHOLD = 0.0015
#: The same right after tool results: a weak model let call at the slightest chance repeats
#: the call it just made (SmolLM2 gave shares of 0.53, then 0.89, for that).
CALL_THRESHOLD_AFTER_RESULTS = 0.9
#: The steps' names in :class:`~agentnb.events.GuidanceSkipped` events.
FIT_STEP = "the tools' fit (call-or-answer decision)"
ASK_STEP = "the model's yes/no (call-or-answer decision)"


@dataclass(frozen=True, slots=True)
class Rules:
    """How the decision is made (the in-process backend takes them from its generation options)."""

    #: Without fits, a call when the share is at least this (after tool results: the caller
    #: passes its after-results threshold).
    call_threshold: float = CALL_THRESHOLD
    #: Weigh each tool's fit, where the source can score (off: the share alone decides).
    by_fit: bool = True
    #: Ask the model's yes/no where it could change the verdict.
    ask: bool = True
    #: With fits, a call when the decision score is at least this.
    score_threshold: float = 0.0
    #: A call decided without fits goes to the best-ranked of several tools (else: all stay).
    rank_call: bool = False


@dataclass(frozen=True, slots=True)
class Choice:
    """The decision: the action, the first token's call share, the tools a call may use (the
    one picked, when it was), the verdict when fits weighed in, and the events to report."""

    action: Literal["call", "answer"]
    share: float
    tools: Sequence[Any]
    picked: str | None
    verdict: Verdict | None
    events: tuple[Any, ...]


async def call_or_answer(
    source: LogprobSource,
    tools: Sequence[Any],
    pick: dict[str, Any] | None,
    rules: Rules,
    *,
    after_results: bool = False,
) -> Choice:
    """Call or answer, and to which tool (see the module docstring). Raises
    :class:`~agentnb.providers.guidance.source.UnavailableError` when the source cannot give the
    first token's distribution (then nothing can be decided here)."""
    share = (await source.next_token()).call_share()
    events: list[Any] = []
    fits = await _fits(source, tools, pick, events) if rules.by_fit and not after_results and pick else None
    via = f" ({source.via})" if source.via else ""
    verdict = None
    if fits is None:
        call = share >= rules.call_threshold
        cmp = ">=" if call else "<"
        when = "after tool results, " if after_results else ""
        why = f"{when}call share {share:.2g} {cmp} {rules.call_threshold:g}{via}"
    else:
        assert pick is not None
        top = best(tools, fits)[0]
        missing = lacks_numbers(top.parameters, pick["query"])
        agree = None
        if rules.ask and agree_matters(share, fits, missing_numbers=missing, threshold=rules.score_threshold):
            agree = await _agree(source, events)
        verdict = decide(share, fits, missing_numbers=missing, agree=agree, threshold=rules.score_threshold)
        call = verdict.action == "call"
        why = verdict.reason + via
    chosen: Sequence[Any] = tools
    if call:
        if fits is not None:
            chosen = best(tools, fits)
        elif rules.rank_call:
            chosen, _, more = await ranked_best(source, tools, pick)
            events += more
    picked = chosen[0].name if call and len(chosen) == 1 else None
    event = CallDecision(
        0,
        "call" if call else "answer",
        why,
        score=verdict.score if verdict else None,
        threshold=verdict.threshold if verdict else rules.call_threshold,
        call_share=round(share, 6),
        ranking=verdict.tool_ranking if verdict else (),
        tool=picked,
    )
    return Choice("call" if call else "answer", share, chosen, picked, verdict, (*events, event))


async def _fits(
    source: LogprobSource, tools: Sequence[Any], pick: dict[str, Any], events: list[Any]
) -> dict[str, float] | None:
    """The tools' fits against "no tool", where UnTooled sent its text, the source can score and
    the budget allows (a skip is added to ``events``)."""
    prompts = pick.get("prompts") or {}
    if "none" not in pick or not source.can_score or any(t.name not in prompts for t in tools):
        return None
    try:
        heads = [pick["none"], *(prompts[t.name] for t in tools)]
        skipped = await source.too_costly(FIT_STEP, heads=heads, text=pick["query"])
        if skipped is not None:
            events.append(skipped)
            return None
        return await tool_fits(source, tools, pick)
    except UnavailableError:  # the decision goes on by the share alone
        return None


async def _agree(source: LogprobSource, events: list[Any]) -> float | None:
    """The model's yes/no log-odds to the probe; None when skipped for cost or unavailable."""
    from agentnb.providers.guidance.decide import PROBE

    skipped = await source.too_costly(ASK_STEP, asks=1)
    if skipped is not None:
        events.append(skipped)
        return None
    try:
        return (await source.next_token(PROBE)).yes_no()
    except UnavailableError:  # a passing failure: decide without the model's answer
        return None
