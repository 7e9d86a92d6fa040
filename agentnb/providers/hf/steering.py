"""The in-process side of steering: the guidance's token bonuses applied to torch logits.

:mod:`agentnb.providers.guidance` decides which tokens to favour (:class:`~agentnb.providers.
guidance.call_bias.CallBias` for a call's values, :class:`~agentnb.providers.guidance.ground.
ResultBias` for prose after tool results: ``bonus(written) -> {token: logit bonus}``); these two
classes add those bonuses to the model's logits at each decoding step. The server route applies
the same bonuses to the alternatives a server streams (:mod:`agentnb.providers.openai.steer`);
what stays here is what only a decoding loop over logits can do: adding to a tensor, and
narrowing the grammar's mask to closing tokens once the call's budget is spent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.providers.guidance.call_bias import CallBias
from agentnb.providers.guidance.ground import ResultBias
from agentnb.providers.guidance.partial_json import scan
from agentnb.providers.guidance.steer import TokenTable

__all__ = ["Grounding", "Steering"]


class Steering:
    """The steering of one call as it is decoded: the text so far, and each step's adjustment.

    ``adjust(logits, allowed, closing=...)`` takes the model's logits and the grammar's mask (a
    numpy bool array), and returns both, adjusted; ``closing`` once the token budget is spent.
    """

    def __init__(self, table: TokenTable, bias: CallBias) -> None:
        self.table = table
        self.bias = bias
        self.written = ""

    def took(self, tokens: Sequence[int]) -> None:
        self.written += "".join(self.table.texts[t] for t in tokens)

    def adjust(self, logits: Any, allowed: Any, *, closing: bool = False) -> tuple[Any, Any]:
        if closing:
            closer = scan(self.written).closer()
            closes = allowed & self.table.closing_mask(closer) if closer else allowed
            if closes.any():
                allowed = closes
        bonus = self.bias.bonus(self.written)
        if bonus:
            import torch

            index = torch.tensor(list(bonus), device=logits.device)
            values = torch.tensor(list(bonus.values()), dtype=logits.dtype, device=logits.device)
            logits = logits.index_add(0, index, values)
        return logits, allowed


class Grounding:
    """The prose of one reply as it is decoded, and each step's adjustment (see :class:`ResultBias`)."""

    def __init__(self, table: TokenTable, bias: ResultBias) -> None:
        self.table = table
        self.bias = bias
        self.written = ""

    def took(self, tokens: Sequence[int]) -> None:
        self.written += "".join(self.table.texts[t] for t in tokens)

    def adjust(self, logits: Any) -> Any:
        bonus = self.bias.bonus(self.written)
        if not bonus:
            return logits
        import torch

        index = torch.tensor(list(bonus), device=logits.device)
        values = torch.tensor(list(bonus.values()), dtype=logits.dtype, device=logits.device)
        return logits.index_add(0, index, values)
