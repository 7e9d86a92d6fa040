"""Which tool fits the request: each tool scored by how well its description explains it.

Before a call is written, the user's request is scored under each tool's description,
``log P(request | "Function: ... Example request for this function: \\"")`` (a "noisy channel"
choice), and the call is constrained to the best tool. A small model picks the right function
more often that way than by writing its name: measured with SmolLM2-135M on the fc cases'
"multiple" category, 31/34 right against the greedy name's 26/34.

A tool's **fit** is that score less the score under "no tool" (UnTooled's ``none`` text), per
token of the request; without the baseline it is the score per token (the order is the same).
The scores come from a :class:`~agentnb.providers.guidance.source.LogprobSource`: one batched
forward pass in-process, one echoed prompt per tool on a server.

>>> from agentnb.providers.guidance.source import Scored, drive
>>> class Fake:
...     via, can_score = "", True
...     async def scores(self, heads, text):
...         return [Scored({"add:": -20.0, "mul:": -4.0, "none:": -16.0}[h], 4) for h in heads]
...     async def too_costly(self, step, *, heads=(), text="", asks=0):
...         return None
>>> class T:
...     def __init__(self, name):
...         self.name = name
>>> tools, pick = [T("add"), T("mul")], {"query": "6 times 7", "prompts": {"add": "add:", "mul": "mul:"}, "none": "none:"}
>>> drive(tool_fits(Fake(), tools, pick))
{'add': -1.0, 'mul': 3.0}
>>> chosen, events = drive(pick_tool(Fake(), tools, pick))
>>> [t.name for t in chosen], events[0].ranking
(['mul'], (('mul', -1.0), ('add', -5.0)))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.events import CallDecision
from agentnb.providers.guidance.source import LogprobSource, UnavailableError

#: The step's name in a :class:`~agentnb.events.GuidanceSkipped` event.
RANK_STEP = "tool ranking"


async def tool_fits(
    source: LogprobSource, tools: Sequence[Any], pick: dict[str, Any], *, baseline: bool = True
) -> dict[str, float] | None:
    """Each tool's fit to ``pick["query"]``, per request token: against "no tool" (``pick["none"]``)
    when ``baseline``, else against 0. None when a tool has no description in ``pick["prompts"]``.

    One call to :meth:`~agentnb.providers.guidance.source.LogprobSource.scores`, the tools'
    descriptions first and "no tool" last. Raises :class:`UnavailableError` as the source does.
    """
    prompts = pick.get("prompts") or {}
    if any(t.name not in prompts for t in tools):
        return None
    none = pick.get("none") if baseline else None
    heads = [prompts[t.name] for t in tools] + ([none] if none else [])
    scored = await source.scores(heads, pick["query"])
    zero = scored[-1].logprob if none else 0.0
    # the request's length in tokens, as the "no tool" row (or, without it, the first) counts it
    size = max(1, scored[-1].tokens if none else scored[0].tokens)
    return {t.name: (s.logprob - zero) / size for t, s in zip(tools, scored, strict=False)}


def best(tools: Sequence[Any], fits: dict[str, float] | None) -> Sequence[Any]:
    """The tool that fits the request best, alone; all of them when there is no ranking."""
    if not fits or len(tools) < 2:
        return tools
    return (max(tools, key=lambda t: fits[t.name]),)


def ranked(fits: dict[str, float]) -> tuple[tuple[str, float], ...]:
    """The fits best first, rounded (a :class:`~agentnb.events.CallDecision`'s ``ranking``)."""
    return tuple(sorted(((k, round(v, 3)) for k, v in fits.items()), key=lambda x: -x[1]))


async def ranked_best(
    source: LogprobSource, tools: Sequence[Any], pick: dict[str, Any] | None
) -> tuple[Sequence[Any], dict[str, float] | None, tuple[Any, ...]]:
    """The best of several ``tools`` (or all of them, when they cannot be ranked), the fits it
    was picked by, and the events to report: a skip for cost, or why ranking stopped working."""
    prompts = (pick or {}).get("prompts") or {}
    if not pick or len(tools) < 2 or not source.can_score or any(t.name not in prompts for t in tools):
        return tools, None, ()
    try:
        skipped = await source.too_costly(RANK_STEP, heads=[prompts[t.name] for t in tools], text=pick["query"])
        if skipped is not None:  # every tool stays, this step
            return tools, None, (skipped,)
        fits = await tool_fits(source, tools, pick, baseline=False)
    except UnavailableError as exc:
        return tools, None, (() if exc.event is None else (exc.event,))
    return best(tools, fits), fits, ()


async def pick_tool(
    source: LogprobSource, tools: Sequence[Any], pick: dict[str, Any] | None
) -> tuple[Sequence[Any], tuple[Any, ...]]:
    """When a call is required among several ``tools``: the best alone, and the
    :class:`~agentnb.events.CallDecision` with the ranking (all of them, and no decision, when
    they cannot be ranked)."""
    chosen, fits, events = await ranked_best(source, tools, pick)
    if not fits or len(fits) < 2:
        return chosen, events
    via = f" ({source.via})" if source.via else ""
    name = chosen[0].name
    why = f"tool_choice='required': a call is required; {name} fits the request best{via}"
    return chosen, (*events, CallDecision(0, "call", why, ranking=ranked(fits), tool=name))
