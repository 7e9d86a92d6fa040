"""Call or answer under ``tool_choice="auto"`` on a text-only server, as the in-process backend decides.

Left to choose inside the JSON envelope (:mod:`agentnb.providers.untooled.envelope`), a small
model behind a server answers in text most of the time, even when a tool is plainly needed:
SmolLM2-135M behind llama-cpp-python called on 32% of the fc cases. The guidance decides with
four measurements and a rule fitted on benchmarks/data
(:mod:`agentnb.providers.guidance.call_or_answer`, :mod:`agentnb.providers.guidance.decide`); a
server that steers calls (:mod:`agentnb.providers.openai.steer`) gives them
(:class:`~agentnb.providers.openai.source.ServerSource`):

* **call share**: the first token of the reply, with the server's 20 likeliest alternatives
  (one one-token request in the server's chat template): the share of their probability on
  tokens that start a JSON call. No such token among them counts as the least of them (an
  upper bound);
* **fit**: each tool's and "no tool"'s score of the request, from the server's echoed prompt
  log-probabilities (:mod:`agentnb.providers.openai.rank`, remembered per request). A server
  without them decides by the call share alone, as in-process does without a ranking;
* **missing numbers**: as in-process;
* **the model's yes/no** to :data:`~agentnb.providers.guidance.decide.PROBE`, one more one-token
  request, only when it could change the verdict.

This module holds what the route does with the verdict: a call goes to the best-fitting tool
(then steered), or, among several tools without a ranking, to the route's tool ranking (a call
required); an answer is asked for as text. Right after tool results the call share alone
decides, against :data:`CALL_THRESHOLD_AFTER_RESULTS` (as in-process); a call there is left to
the envelope, which leaves out the tools just called.

>>> call_share({'{"': -1.0, "The": -0.5, " ": -2.0})
0.3775...
>>> yes_no({"Yes": -0.2, "No": -2.0, "yes": -3.0})
1.8...
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agentnb.providers.base import OutputConstraint, Request
from agentnb.providers.guidance.call_or_answer import CALL_THRESHOLD, CALL_THRESHOLD_AFTER_RESULTS, Rules
from agentnb.providers.guidance.source import Alternatives, UnavailableError
from agentnb.providers.openai.route import AFTER_RESULTS_HINT, ANSWER_HINT

__all__ = ["CALL_THRESHOLD", "CALL_THRESHOLD_AFTER_RESULTS", "ServerDecision", "call_share", "yes_no"]


def call_share(alternatives: dict[str, float]) -> float:
    """The share of the first token's probability (among ``alternatives``) on starting a call
    (:meth:`agentnb.providers.guidance.source.Alternatives.call_share`)."""
    return Alternatives(alternatives).call_share()


def yes_no(alternatives: dict[str, float]) -> float:
    """The log-odds of "yes" against "no" as the next token (each spelling summed)."""
    return Alternatives(alternatives).yes_no()


class ServerDecision:
    """The decision for one provider; uses its steering (template) and ranking (fits)."""

    def applies(self, provider: Any, request: Request) -> bool:
        c = request.constraint
        pick = request.settings.get("untooled_pick")
        return (
            provider._steering.enabled is not False
            and provider._steering.works is not False
            and c is not None
            and c.tool_choice == "auto"
            and bool(c.tools)
            and not c.parallel
            and c.output is None
            and isinstance(pick, dict)
        )

    async def narrow(self, provider: Any, request: Request) -> tuple[Request, tuple[Any, ...]]:
        """``request`` narrowed to the verdict (a call to the best tool, or text), and the
        :class:`~agentnb.events.CallDecision` saying why; unchanged when it cannot decide."""
        if not self.applies(provider, request):
            return request, ()
        from agentnb.providers.guidance.call_or_answer import call_or_answer
        from agentnb.providers.openai.source import ServerSource

        c = request.constraint
        assert c is not None
        after = bool(request.settings.get(AFTER_RESULTS_HINT))
        rules = Rules(call_threshold=CALL_THRESHOLD_AFTER_RESULTS if after else CALL_THRESHOLD)
        source = ServerSource(provider, request)
        pick = request.settings["untooled_pick"]
        try:
            choice = await call_or_answer(source, c.tools, pick, rules, after_results=after)
        except UnavailableError:  # no template, no completions endpoint, no logprobs: the envelope decides
            return request, ()
        if choice.action == "answer":  # the envelope without tools: {"answer": ...}
            return dataclasses.replace(request, settings={**request.settings, ANSWER_HINT: True}), choice.events
        if after:
            return request, choice.events  # the envelope picks among the tools not just called
        if len(choice.tools) == 1:
            best = choice.tools[0]
            narrowed = OutputConstraint((best,), best.name, False, None)
            return dataclasses.replace(request, constraint=narrowed), choice.events
        # several tools and no fits: a call is required, and the route's ranking picks the tool
        return dataclasses.replace(request, constraint=dataclasses.replace(c, tool_choice="required")), choice.events
