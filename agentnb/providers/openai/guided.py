"""The guidance steps of an :class:`~agentnb.providers.openai.OpenAIProvider` on the untooled
route, in order, each where the server allows it and where it fits the step's budget: the
call-or-answer decision (:mod:`.decide`), the tool ranking (:mod:`.rank`) and the steered call
(:mod:`.steer`); what each costs is measured and weighed in :mod:`.cost`.
"""

from __future__ import annotations

from typing import Any

from agentnb.messages import Usage
from agentnb.providers.base import Completion, Request
from agentnb.providers.openai.cost import GuidanceCost, GuidanceTimeError
from agentnb.providers.openai.decide import ServerDecision
from agentnb.providers.openai.rank import ToolRanker
from agentnb.providers.openai.steer import ServerSteering
from agentnb.providers.openai.usage import TokenCounter, chat_prompt


class GuidedSending:
    """A mixin: the provider's guidance state and the step that runs it (``_prepare``)."""

    name: str

    def _guidance(self, rank_tools: Any, steer: Any, chat_template: str | None, budget: Any) -> None:
        self._ranker = ToolRanker(rank_tools)
        self._steering = ServerSteering(steer, chat_template)
        self._decision = ServerDecision()
        self._cost = GuidanceCost(budget)
        self._counter = TokenCounter()

    async def _count_usage(self, kwargs: dict[str, Any], reader: Any) -> Usage:
        """A streamed reply's usage where the server reported none: counted (:mod:`.usage`)."""
        text = reader.text
        prompt = chat_prompt(self, kwargs.get("messages") or ())
        return await self._counter.usage(self, [prompt], text, reader.received)

    async def _prepare(self, request: Request) -> tuple[Request, tuple[Any, ...], Completion | None]:
        """Before a chat request on the untooled route: the call-or-answer decision, the tool
        ranking and the steered call, each where the server allows it. Returns the request as
        narrowed, the events so far, and the steered call when there is one (then it is the reply)."""
        self._cost.begin_step()
        self._cost.names = self.name
        notes: tuple[Any, ...] = ()
        try:
            request, decided = await self._decision.narrow(self, request)
            notes += decided
            request, ranked = await self._ranker.narrow(self, request)
            notes += ranked
        except GuidanceTimeError as exc:  # the budget ran out: the step goes on as narrowed so far
            return request, (*notes, exc.event, *self._steering.drain()), None
        steered = await self._steering.completion(self, request, notes)  # (it stops itself in time)
        return request, (*notes, *self._steering.drain()), steered
