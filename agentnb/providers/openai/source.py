"""A server's logprobs as a source of log-probabilities for the guidance.

:class:`ServerSource` implements :class:`~agentnb.providers.guidance.source.LogprobSource` for
one request of an :class:`~agentnb.providers.openai.OpenAIProvider` on the untooled route:

* scores: echoed prompts on the legacy ``/v1/completions`` endpoint, read as the server's
  convention has it (:mod:`.rank`: aligned or shifted, found with one probe), each remembered;
* the next token after the conversation (and after the yes/no probe): one one-token request in
  the server's chat template (:mod:`.templates`), with the :data:`~.steer.TOP` likeliest
  alternatives (:class:`~agentnb.providers.guidance.source.Alternatives`: texts only, so a call
  starts with ``{``);
* the cost of each: measured on this server and weighed against the step's budget (:mod:`.cost`).

What the server cannot do is remembered on the provider (its ranker and steering state): a
server without echoed logprobs is not asked to score again; one without a matching template or
``/v1/completions`` is not asked for next tokens again (a failed yes/no probe is a passing one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.events import ConstraintDropped
from agentnb.providers.base import Request
from agentnb.providers.guidance.source import Alternatives, Scored, UnavailableError
from agentnb.providers.openai.cost import PRICE, GuidanceTimeError, cost_of
from agentnb.providers.openai.errors import _server_message, brief


class ServerSource:
    """The guidance's measurements for one ``request`` to ``provider``'s server."""

    via = "server logprobs"

    def __init__(self, provider: Any, request: Request) -> None:
        self.provider = provider
        self.request = request
        self._messages: list[dict[str, Any]] | None = None

    @property
    def can_score(self) -> bool:
        ranker = self.provider._ranker
        return bool(ranker.enabled) and ranker.works is not False

    async def scores(self, heads: Sequence[str], text: str) -> list[Scored]:
        provider, ranker = self.provider, self.provider._ranker
        try:
            if ranker.convention is None:
                ranker.convention = await ranker._probe(provider)
            out = []
            for head in heads:
                score = await ranker._score(provider, head, text)
                out.append(Scored(score, ranker.sizes.get((head, text), 1)))
        except GuidanceTimeError:
            raise  # this step only: the server can score
        except Exception as exc:  # no endpoint, no echo, no logprobs: score no more on this server
            raise self._no_scores(exc) from exc
        ranker.works = True
        return out

    async def next_token(self, follow_up: str | None = None) -> Alternatives:
        provider, steering = self.provider, self.provider._steering
        try:
            if steering.template is None:
                steering.template = await steering._template(provider)
            if self._messages is None:
                self._messages = [provider._to_wire(m) for m in self.request.messages]
            messages = self._messages
            if follow_up is not None:
                messages = [*messages, {"role": "user", "content": follow_up}]
            return Alternatives(await _next(provider, steering.template.render(messages)))
        except GuidanceTimeError:
            raise
        except Exception as exc:
            if follow_up is None:  # no template, no completions endpoint, no logprobs
                steering.failed(provider, exc)
            raise UnavailableError(f"{type(exc).__name__}: {exc}") from exc

    async def too_costly(self, step: str, *, heads: Sequence[str] = (), text: str = "", asks: int = 0) -> Any:
        if heads:
            try:
                return await self.provider._ranker.too_costly(self.provider, list(heads), text, step)
            except GuidanceTimeError:
                raise
            except Exception as exc:  # pricing is an echo too
                raise self._no_scores(exc) from exc
        cost = cost_of(self.provider)
        if not cost.known("ask"):
            return None  # priced by its first request (agentnb.providers.openai.source._next)
        tokens = asks * self._prompt_tokens()
        what = "one request" if asks == 1 else f"{asks} requests"
        return cost.skip(step, cost.estimate(ask=tokens), f"{what} of ~{tokens} prompt tokens")

    def _prompt_tokens(self) -> int:
        """About how many tokens the conversation is, as the server reads it (its turn markers too)."""
        messages = self.request.messages
        text = " ".join(str(getattr(m, "content", None) or "") for m in messages)
        return self.provider._cost.tokens_in(text) + 8 * (len(messages) + 1) if messages else 8

    def _no_scores(self, exc: Exception) -> UnavailableError:
        """Scoring failed: never again on this provider; the event says so when asked for."""
        ranker = self.provider._ranker
        ranker.works = False
        flat = self.provider._key.redact(brief(_server_message(exc), 160))
        reason = f"{type(exc).__name__}: {flat}; every tool stays in the envelope"
        event = None
        if ranker.enabled != "auto":
            event = ConstraintDropped(0, self.provider.name, "tool ranking by prompt logprobs", reason)
        return UnavailableError(reason, event)


#: The guidance request that reads the next token's alternatives (in ``GuidanceSkipped``).
NEXT_STEP = "next-token alternatives"


async def _next(provider: Any, prompt: str) -> dict[str, float]:
    """The next token's likeliest alternatives after ``prompt`` (one one-token request).

    Its price (seconds per prompt token: the server reads the whole prompt with its logits) is
    read first from a two-token request; a request that would take the step past its guidance
    budget is not sent (:class:`~agentnb.providers.openai.cost.GuidanceTimeError`).
    """
    cost = cost_of(provider)
    tokens = cost.tokens_in(prompt)
    if cost.limit() is not None:
        if not cost.known("ask"):
            await _ask(provider, PRICE)
        skipped = cost.skip(NEXT_STEP, cost.estimate(ask=tokens), f"a one-token request of ~{tokens} prompt tokens")
        if skipped is not None:
            raise GuidanceTimeError(skipped)
    return await _ask(provider, prompt)


async def _ask(provider: Any, prompt: str) -> dict[str, float]:
    from agentnb.providers.openai.logprobs import positions
    from agentnb.providers.openai.steer import TOP

    cost = cost_of(provider)
    with cost.timing("ask") as counts:
        counts["tokens"] = cost.tokens_in(prompt)  # priced per prompt token
        response = await cost.within(
            NEXT_STEP,
            provider.client.with_options(max_retries=0).completions.create(
                model=provider.model,
                prompt=prompt,
                max_tokens=1,
                temperature=0.0,
                logprobs=TOP,
                extra_body={"repeat_penalty": 1.0},
            ),
        )
    found = positions(getattr(response.choices[0], "logprobs", None))
    if not found:
        raise ValueError("the server gives no log-probabilities")
    return found[0][1]
