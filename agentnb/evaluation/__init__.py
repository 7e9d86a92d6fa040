"""Many runs: evaluate agents over a dataset, resumably, locally or on Ray.

Layer: a view of many runs, beside :mod:`agentnb.notebook`; may import the run, the
providers, the tools and everything below them, never the CLI.

``evaluate(agent | {name: agent}, dataset, scorers=..., concurrency=8, repeats=1, timeout=None,
log=None, executor="local")`` returns an :class:`Evaluation` (table, summary, comparison, traces).
Parts: :mod:`.cases` (dataset in), :mod:`.scorers`, :mod:`.run` (the driver),
:mod:`.executors` (local / Ray), :mod:`.log` (JSONL, resume), :mod:`.results`,
:mod:`.progress` and :mod:`.report` (views).

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> ev = evaluate(Agent(ScriptedProvider(["4"])), [{"input": "2 + 2?", "expected": "4"}], scorers=[exact()],
...               progress=False)
>>> ev.table[["input", "output", "exact", "passed"]].values.tolist()
[['2 + 2?', '4', True, True]]
"""

from __future__ import annotations

from agentnb.evaluation.cases import Case, load_cases
from agentnb.evaluation.compare import Comparison
from agentnb.evaluation.results import Evaluation
from agentnb.evaluation.run import DEFAULT_CONCURRENCY, Stopper, aevaluate, evaluate
from agentnb.evaluation.scorers import (
    Scorer,
    at_most,
    called,
    contains,
    exact,
    judge,
    no_tool,
    number,
    regex,
    value_equals,
)

__all__ = [
    "DEFAULT_CONCURRENCY",
    "Case",
    "Comparison",
    "Evaluation",
    "Scorer",
    "Stopper",
    "aevaluate",
    "at_most",
    "called",
    "contains",
    "evaluate",
    "exact",
    "judge",
    "load_cases",
    "no_tool",
    "number",
    "regex",
    "value_equals",
]
