"""The steering of one call's values: every bonus the guidance gives while a call is written.

Four biases, each a ``bonus(written) -> {token: logit bonus}`` over a
:class:`~agentnb.providers.guidance.steer.TokenTable`, summed:

* :class:`~agentnb.providers.guidance.steer.CopyBias`: values copy spans of the request;
* :class:`~agentnb.providers.guidance.optional.NamedOptionals`: the call stays open for an
  optional parameter the request names (one tool only);
* :class:`~agentnb.providers.guidance.lists.RepeatedItems`: a list closes once its items start
  coming back;
* :class:`~agentnb.providers.guidance.loops.LoopingStrings`: a string closes once it loops.

Both sources apply the same :class:`CallBias`; only the table differs. In-process
(:mod:`agentnb.providers.hf.steering`) it is the whole vocabulary, and the bonuses are added to
the logits at each decoding step, where the grammar's mask and the closing of a call whose
budget is spent also act. On a server (:mod:`agentnb.providers.openai.steer`) it is the few
alternatives the server streamed at one position, and the bonuses are added to their
log-probabilities to choose the text to write (the grammar, walked byte by byte, says which
are allowed). That application stays with each source: one is a logits processor inside a
decoding loop on tensors, the other a choice among texts that can end a streamed request.

>>> class Tok:
...     def batch_decode(self, ids):
...         return [["B", "ro", "oklyn", '"', "x"][i[0]] for i in ids]
>>> from agentnb.providers.guidance.steer import TokenTable
>>> bias = CallBias("Pizza in Brooklyn?", (), TokenTable(Tok(), 5), 6.0)
>>> bias.bonus('{"name": "f", "arguments": {"city": "Bro')
{2: 6.0}
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.providers.guidance.lists import RepeatedItems
from agentnb.providers.guidance.loops import LoopingStrings
from agentnb.providers.guidance.optional import NamedOptionals, named_optionals
from agentnb.providers.guidance.steer import CopyBias, TokenTable


class CallBias:
    """The summed bonuses for a call to one of ``tools`` whose values come from ``source``.

    ``strength`` 0 turns them all off. Without a ``source`` only the repeated items are
    guarded (times are counted as once each). ``named`` (the optional parameters the request
    names) is worked out from ``tools`` unless given (a server builds one table per position,
    and works it out once per call).
    """

    def __init__(
        self,
        source: str,
        tools: Sequence[Any],
        table: TokenTable,
        strength: float,
        named: list[str] | None = None,
    ) -> None:
        self.biases: list[Any] = []
        if not strength:
            return
        if source:
            self.biases.append(CopyBias(source, table, strength))
            if named is None:
                named = named_optionals(tools[0].parameters, source) if len(tools) == 1 else []
            if named:
                self.biases.append(NamedOptionals(named, table, strength))
        self.biases.append(RepeatedItems(source, table, strength))
        self.biases.append(LoopingStrings(source, table, strength))

    def bonus(self, written: str) -> dict[int, float]:
        """Each favoured (or, negative, disfavoured) token after ``written``, the call so far."""
        out: dict[int, float] = {}
        for bias in self.biases:
            for token, value in bias.bonus(written).items():
                out[token] = out.get(token, 0.0) + value
        return out


def named_in(source: str, tools: Sequence[Any]) -> list[str]:
    """The optional parameters of the one tool in ``tools`` that ``source`` names ([] for several)."""
    return named_optionals(tools[0].parameters, source) if source and len(tools) == 1 else []
