"""Call or answer under ``tool_choice="auto"`` on a text-only server, as the in-process backend decides.

Left to choose inside the JSON envelope (:mod:`agentnb.providers.untooled.envelope`), a small
model behind a server answers in text most of the time, even when a tool is plainly needed:
SmolLM2-135M behind llama-cpp-python called on 32% of the fc cases. The in-process backend
decides with four measurements and a rule fitted on benchmarks/data
(:mod:`agentnb.providers.guidance.decide`); a server that steers calls
(:mod:`agentnb.providers.openai.steer`) gives the same measurements:

* **call share**: the first token of the reply, with the server's 20 likeliest alternatives
  (one one-token request in the server's chat template): the share of their probability on
  tokens that start a JSON call. No such token among them counts as the least of them (an
  upper bound);
* **fit**: each tool's and "no tool"'s score of the request, from the server's echoed prompt
  log-probabilities (:meth:`agentnb.providers.openai.rank.ToolRanker.fits`, remembered per
  request). A server without them decides by the call share alone, as in-process does
  without a ranking;
* **missing numbers**: as in-process;
* **the model's yes/no** to :data:`~agentnb.providers.guidance.decide.PROBE`, one more one-token
  request, only when it could change the verdict.

The verdict is a :class:`~agentnb.events.CallDecision` event. A call goes to the best-fitting
tool (then steered); an answer is asked for as text. Right after tool results the call share
alone decides, against :data:`CALL_THRESHOLD_AFTER_RESULTS` (as in-process); a call there is
left to the envelope, which leaves out the tools just called.

>>> call_share({'{"': -1.0, "The": -0.5, " ": -2.0})
0.3775...
>>> yes_no({"Yes": -0.2, "No": -2.0, "yes": -3.0})
1.8...
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

from agentnb.events import CallDecision
from agentnb.providers.base import OutputConstraint, Request
from agentnb.providers.openai.route import AFTER_RESULTS_HINT, ANSWER_HINT

Action = Literal["call", "answer"]
#: The call share under which, without a ranking, the reply is text (in-process's default).
CALL_THRESHOLD = 0.0015
#: The same right after tool results (in-process's default): answering is the norm there.
CALL_THRESHOLD_AFTER_RESULTS = 0.9


def call_share(alternatives: dict[str, float]) -> float:
    """The share of the first token's probability (among ``alternatives``) on starting a call.

    Tokens that start with ``{`` start a call; text may not start with ``{``, ``[`` or
    whitespace (the in-process grammar's rule), so those are left out of the text's share.
    """
    values = [v for v in alternatives.values() if isinstance(v, int | float) and math.isfinite(v)]
    if not values:
        return 0.0
    call = sum(math.exp(v) for t, v in alternatives.items() if t.startswith("{"))
    text = sum(math.exp(v) for t, v in alternatives.items() if t and t[0] not in "{[" and not t[0].isspace())
    if call == 0.0:
        call = math.exp(min(values))  # not among them: at most the least of them
    return call / (call + text)


def yes_no(alternatives: dict[str, float]) -> float:
    """The log-odds of "yes" against "no" as the next token (each spelling summed)."""

    def mass(word: str) -> float:
        return sum(math.exp(v) for t, v in alternatives.items() if t.strip().lower() == word)

    return math.log(mass("yes") + 1e-9) - math.log(mass("no") + 1e-9)


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
        from agentnb.providers.guidance.decide import decide, lacks_numbers

        c = request.constraint
        assert c is not None
        steering = provider._steering
        try:
            if steering.template is None:
                steering.template = await steering._template(provider)
            messages = [provider._to_wire(m) for m in request.messages]
            share = call_share(await self._next(provider, steering.template.render(messages)))
        except Exception as exc:  # no template, no completions endpoint, no logprobs: the envelope decides
            steering.failed(provider, exc)
            return request, ()
        if request.settings.get(AFTER_RESULTS_HINT):
            # After tool results answering is the norm, and the request is the one the tools
            # already served: the call share alone decides, against a high bar (as in-process)
            action: Action = "call" if share >= CALL_THRESHOLD_AFTER_RESULTS else "answer"
            cmp = ">=" if action == "call" else "<"
            why = f"after tool results, call share {share:.2g} {cmp} {CALL_THRESHOLD_AFTER_RESULTS:g} (server logprobs)"
            event = CallDecision(0, action, why, call_share=share)
            if action == "answer":
                return dataclasses.replace(request, settings={**request.settings, ANSWER_HINT: True}), (event,)
            return request, (event,)  # the envelope picks among the tools not just called
        pick = request.settings["untooled_pick"]
        fits = None
        if provider._ranker.enabled and provider._ranker.works is not False and "none" in pick:
            try:
                fits = await provider._ranker.fits(provider, pick, [t.name for t in c.tools])
            except Exception:
                provider._ranker.works = False
        if fits is None:
            action = "call" if share >= CALL_THRESHOLD else "answer"
            cmp = ">=" if action == "call" else "<"
            event = CallDecision(0, action, f"call share {share:.2g} {cmp} {CALL_THRESHOLD:g} (server logprobs)",
                                 call_share=share)  # fmt: skip
            best = c.tools[0] if len(c.tools) == 1 else None
        else:
            best = max(c.tools, key=lambda t: fits[t.name])
            question = [*messages, {"role": "user", "content": _probe()}]

            def ask() -> float:  # decide() calls it synchronously: measured beforehand, lazily
                raise _AnswerNeededError

            verdict = None
            try:
                verdict = decide(share, fits, missing_numbers=lacks_numbers(best.parameters, pick["query"]), agree=ask)
            except _AnswerNeededError:
                try:
                    agree: float | None = yes_no(await self._next(provider, steering.template.render(question)))
                except Exception:  # a passing failure: decide without the model's answer
                    agree = None
                missing = lacks_numbers(best.parameters, pick["query"])
                verdict = decide(share, fits, missing_numbers=missing, agree=agree)
            action = "call" if verdict.action == "call" else "answer"
            event = CallDecision(0, action, verdict.reason + " (server logprobs)", verdict.score,
                                 verdict.threshold, share, verdict.tool_ranking,
                                 best.name if verdict.action == "call" else None)  # fmt: skip
        if action == "answer":  # the envelope without tools: {"answer": ...}
            return dataclasses.replace(request, settings={**request.settings, ANSWER_HINT: True}), (event,)
        narrowed = (
            OutputConstraint((best,), best.name, False, None)
            if best
            else dataclasses.replace(c, tool_choice="required")
        )
        return dataclasses.replace(request, constraint=narrowed), (event,)

    async def _next(self, provider: Any, prompt: str) -> dict[str, float]:
        """The next token's likeliest alternatives after ``prompt`` (one one-token request)."""
        from agentnb.providers.openai.logprobs import positions
        from agentnb.providers.openai.steer import TOP

        response = await provider.client.with_options(max_retries=0).completions.create(
            model=provider.model,
            prompt=prompt,
            max_tokens=1,
            temperature=0.0,
            logprobs=TOP,
            extra_body={"repeat_penalty": 1.0},
        )
        found = positions(getattr(response.choices[0], "logprobs", None))
        if not found:
            raise ValueError("the server gives no log-probabilities")
        return found[0][1]


class _AnswerNeededError(Exception):
    """Raised by the yes/no callback: decide() wants the model's answer."""


def _probe() -> str:
    from agentnb.providers.guidance.decide import PROBE

    return PROBE
