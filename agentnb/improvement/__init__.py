"""Improve an agent from its evaluation: reflective optimisation of its system prompt and tool texts.

``improve(agent, dataset, scorers, reflector=..., test=..., budget=...)`` returns an
:class:`Improvement`. A reflector model reads the failing training cases (input, output,
expected value, each scorer's verdict and the trace of tool calls) and writes a new text;
candidates are scored through :func:`agentnb.evaluate` and selected on a validation split (Pareto
selection, after GEPA); ``test=`` only measures the result. Parts: :mod:`.texts` (what may change,
a new agent from new texts), :mod:`.reflect` (what the reflector reads and what is taken from its
reply), :mod:`.pareto` (selection, minibatches), :mod:`.search` (the loop and its budget),
:mod:`.run` (input checks, the split), :mod:`.result`, :mod:`.report` and :mod:`.views`.

>>> from agentnb import Agent
>>> from agentnb.testing import FunctionProvider
>>> student = Agent(FunctionProvider(lambda m, t: "4" if "digits" in (m[0].content or "") else "four"),
...                 system="Answer.")
>>> reflector = FunctionProvider(lambda m, t: "```\\nAnswer in digits.\\n```")
>>> cases = [{"input": f"2+2 ({i})", "expected": "4"} for i in range(6)]
>>> imp = improve(student, cases[:4], ["exact"], reflector=reflector, test=cases[4:], budget=16, progress=False)
>>> imp.best.system, student.system
('Answer in digits.', 'Answer.')
>>> (imp.compare().only_a, imp.compare().only_b)
(0, 2)
"""

from __future__ import annotations

from agentnb.improvement.result import Improvement
from agentnb.improvement.run import DEFAULT_MINIBATCH, DEFAULT_VALIDATION, aimprove, improve

__all__ = ["DEFAULT_MINIBATCH", "DEFAULT_VALIDATION", "Improvement", "aimprove", "improve"]
