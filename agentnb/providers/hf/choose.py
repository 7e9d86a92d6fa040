"""Which branch a constrained request decodes: a call (and to which tool) or an answer.

:class:`ToolChoice` is the part of :class:`~agentnb.providers.hf.TransformersProvider` that turns a
request's :class:`~agentnb.providers.OutputConstraint` into an llguidance guide. The decision and
the ranking are the guidance's (:mod:`agentnb.providers.guidance.call_or_answer`,
:mod:`agentnb.providers.guidance.rank`), measured on this model through
:class:`~agentnb.providers.hf.source.InProcessSource`; what is left here is what only the
in-process backend has: the grammar's guide for the branch, the options that set the rules, and
the batched forward pass that scores a request under each tool's description
(:meth:`ToolChoice.rank_tools`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.providers.base import OutputConstraint
from agentnb.providers.guidance.call_or_answer import Rules, call_or_answer
from agentnb.providers.guidance.rank import pick_tool
from agentnb.providers.guidance.source import drive
from agentnb.providers.hf.options import Decision, GenerationOptions
from agentnb.providers.hf.source import InProcessSource


class ToolChoice:
    """Call or answer, and which tool (mixed into the provider; uses its model and tokenizer)."""

    model: Any
    tokenizer: Any
    vocab_size: int
    eos_ids: frozenset[int]
    last_decision: Decision | None
    _call_tools: tuple[Any, ...]
    _rankings: dict[tuple[str, str], float]
    cache: Any

    def _guide(
        self,
        constraint: OutputConstraint,
        logits: Any,
        options: GenerationOptions,
        pick: dict[str, Any] | None = None,
        after_results: bool = False,
        notes: list[Any] | None = None,
        source: InProcessSource | None = None,
    ) -> Any:
        """The guide for this reply: the branch (call or answer) and, for a call, the tools.

        ``source`` measures on this reply's prompt (its yes/no probe included); without it, the
        first token's ``logits`` alone, and no probe.
        """
        tools: Sequence[Any] = constraint.tools
        choice = constraint.tool_choice
        if choice not in ("auto", "required", "none"):
            tools = tuple(t for t in tools if t.name == choice)
        compiler = _compiler(self.tokenizer, self.vocab_size, self.eos_ids)
        output = constraint.output
        if choice == "none" or not tools:
            return compiler.guide((), "text", output=output)
        single = not constraint.parallel and options.pick_tool_first
        source = source or InProcessSource(self, [], logits)
        if choice != "auto":
            # A call is required: only the tools' order matters, so no "no tool" row, and
            # nothing to rank when one tool is on offer.
            events: tuple[Any, ...] = ()
            if single:
                tools, events = drive(pick_tool(source, tools, pick))
            picked = tools[0].name if len(tools) == 1 else None
            self.last_decision = Decision("call", None, picked)
            self._call_tools = tuple(tools)
            if notes is not None:
                notes.extend(events)
            return compiler.guide(tools, "call", parallel=constraint.parallel)
        offered = tools
        source.masks = lambda: (compiler.guide(offered, "call").allowed(), compiler.guide(offered, "text").allowed())
        rules = Rules(
            call_threshold=options.call_threshold,
            # after tool results the share alone decides (call_or_answer leaves the fits out)
            by_fit=bool(single and pick and options.decide_by_fit),
            ask=options.ask_model and source.probe is not None,
            score_threshold=options.call_score_threshold,
            rank_call=bool(single and pick),
        )
        decided = drive(call_or_answer(source, tools, pick, rules, after_results=after_results))
        mode = "call" if decided.action == "call" else "text"
        tools = decided.tools if single else tools
        self.last_decision = Decision(mode, decided.share, decided.picked)
        self._call_tools = tuple(tools)
        if notes is not None:
            notes.extend(decided.events)
        # "answer" was weighed as prose; with an output schema the answer is its JSON value.
        return compiler.guide(tools, mode, parallel=constraint.parallel, output=output)

    def rank_tools(self, descriptions: Sequence[str], query: str) -> list[float]:
        """How well each tool explains the user's request: ``log P(query | description)``.

        Scoring the request given each tool's description (a "noisy channel" choice) picks the
        right function among candidates more often than letting a small model write the name:
        measured with SmolLM2-135M on the fc cases' "multiple" category, 31/34 right against
        the greedy name's 26/34 (and 23/34 for the mean log-probability of the whole name).
        One batched forward pass, outside the prefix cache; the scores are remembered, so the
        later steps of a run (same request, same tools) do not pay for it again.
        """
        known = {d: self._rankings[d, query] for d in descriptions if (d, query) in self._rankings}
        missing = [d for d in dict.fromkeys(descriptions) if d not in known]
        if missing:
            known.update(zip(missing, self._score(missing, query), strict=True))
            if len(self._rankings) + len(missing) > 256:  # bounded: forget the older requests
                self._rankings.clear()
            self._rankings.update(((d, query), known[d]) for d in missing)
        return [known[d] for d in descriptions]

    def _score(self, descriptions: Sequence[str], query: str) -> list[float]:
        import torch

        tok = self.tokenizer
        asked = list(tok.encode(query, add_special_tokens=False))
        heads = [list(tok.encode(d, add_special_tokens=False)) for d in descriptions]
        rows = [head + asked for head in heads]
        width = max(len(r) for r in rows)
        # Right padding: the pad tokens come after everything scored, so no mask is needed.
        batch = torch.tensor([r + [r[-1]] * (width - len(r)) for r in rows], device=self.model.device)
        with torch.inference_mode():
            logits = self.model(input_ids=batch, use_cache=False).logits.float()
        logprobs = torch.log_softmax(logits[:, :-1], dim=-1).gather(2, batch[:, 1:].unsqueeze(-1)).squeeze(-1)
        return [float(logprobs[i, len(head) - 1 : len(head) + len(asked) - 1].sum()) for i, head in enumerate(heads)]


_COMPILERS: dict[int, tuple[Any, Any]] = {}


def _compiler(tokenizer: Any, vocab_size: int, eos_ids: frozenset[int]) -> Any:
    """One grammar compiler per tokenizer (building llguidance's tokenizer takes ~1 s)."""
    from agentnb.providers.guidance.constraint import GrammarCompiler

    entry = _COMPILERS.get(id(tokenizer))
    if entry is None or entry[0] is not tokenizer:
        entry = (tokenizer, GrammarCompiler(tokenizer, vocab_size, sorted(eos_ids)))
        _COMPILERS[id(tokenizer)] = entry
    return entry[1]
