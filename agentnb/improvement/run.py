"""``improve`` / ``aimprove``: check the input, split the data, run the search, then the test.

Every usage mistake is a :class:`~agentnb.errors.UserError` raised before the first run: an
empty dataset, a test set that shares cases with the training data (named), a budget too small
to score even one candidate, an unknown target.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from agentnb.errors import UserError
from agentnb.evaluation.cases import Case, load_cases
from agentnb.evaluation.log import check_log_path
from agentnb.evaluation.run import DEFAULT_CONCURRENCY, Stopper, progress_views
from agentnb.evaluation.scorers import as_scorers
from agentnb.improvement.events import ImproveStarted
from agentnb.improvement.reflect import as_reflector
from agentnb.improvement.result import Improvement
from agentnb.improvement.search import Search
from agentnb.improvement.texts import components

#: The training cases shown to one reflection (GEPA's reflection minibatch).
DEFAULT_MINIBATCH = 3
#: The share of the dataset kept for validation (selection) when no validation set is given.
DEFAULT_VALIDATION = 0.5


@dataclass
class Plan:
    """What one improvement will do, checked: made before any view is shown or any case runs."""

    agent: Any
    names: list[str]
    splits: tuple[list[Case], list[Case], list[Case]]
    scorers: list[Any]
    reflector: Any
    budget: int
    minibatch: int
    seed: int
    log: str | None
    reflector_limits: Any
    eval_options: dict[str, Any]


def plan(
    agent: Any,
    dataset: Any,
    scorers: Any = None,
    *,
    reflector: Any = None,
    test: Any = None,
    budget: int = 100,
    validation: Any = DEFAULT_VALIDATION,
    targets: Any = "system",
    minibatch: int = DEFAULT_MINIBATCH,
    seed: int = 0,
    log: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float | None = None,
    reflector_limits: Any = None,
    input: str = "input",
    expected: str | None = "expected",
    **run_options: Any,
) -> Plan:
    """Check every argument of :func:`improve` and split the data; a UserError before anything runs."""
    from agentnb.run.agent import Agent

    if not isinstance(agent, Agent):
        raise UserError(f"improve takes an agentnb Agent, not {type(agent).__name__}")
    checks = as_scorers(scorers)
    train, val = _split(load_cases(dataset, input=input, expected=expected), validation, seed, input, expected)
    tests = _test_cases(test, train + val, input, expected)
    if not checks:
        raise UserError("improve needs scorers=: what makes an answer right (e.g. ['contains'] or a function)")
    names = components(agent, targets)
    ask = as_reflector(reflector)
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise UserError(f"budget is a number of case runs (a whole number >= 1), not {budget!r}")
    least = len(val) + 2 * len(tests)
    if budget < least:
        need = f" and the test comparison ({len(tests)} cases, twice) need {least} runs" if tests else f" needs {least}"
        raise UserError(
            f"budget={budget} cannot score even one candidate: the original on the {len(val)} validation cases" + need
        )
    for name, value in (("concurrency", concurrency), ("minibatch", minibatch)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UserError(f"{name} must be a whole number >= 1, not {value!r}")
    if log is not None:
        check_log_path(log)
    options = {"concurrency": concurrency, "timeout": timeout, **run_options}
    return Plan(agent, names, (train, val, tests), checks, ask, budget, minibatch, seed, log, reflector_limits, options)


async def aimprove(
    agent: Any, dataset: Any, scorers: Any = None, *, progress: Any = "auto", stopper: Stopper | None = None,
    **options: Any,
) -> Improvement:  # fmt: skip
    """Improve ``agent``'s texts on ``dataset``; see :func:`improve` (this is its async twin).

    >>> import asyncio
    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> asyncio.run(aimprove(Agent(ScriptedProvider([])), [], ["contains"], reflector=ScriptedProvider([])))
    Traceback (most recent call last):
    agentnb.errors.UserError: the dataset is empty: improve needs cases with expected values
    """
    made = plan(agent, dataset, scorers, **options)
    return await _run(made, _views(progress), stopper or Stopper())


async def _run(p: Plan, views: list[Any], stopper: Stopper) -> Improvement:
    def emit(event: Any) -> None:
        for view in views:
            view.event(event)

    search = Search(
        p.agent, p.names, p.splits, p.scorers, p.reflector, budget=p.budget, minibatch=p.minibatch, seed=p.seed,
        log=p.log, stopper=stopper, emit=emit, reflector_limits=p.reflector_limits, eval_options=p.eval_options,
    )  # fmt: skip
    for view in views:
        view.start(stopper)
    train, val, tests = p.splits
    emit(ImproveStarted(len(train), len(val), len(tests), p.budget, tuple(p.names)))
    result = Improvement(search)
    try:
        await search.run()
        await search.test_phase()
        search.finish()
    finally:
        for view in views:
            view.finish(result)
    return result


def improve(agent: Any, dataset: Any, scorers: Any = None, **options: Any) -> Improvement:
    """Improve an agent's system prompt (or tool descriptions) from its failures; an :class:`Improvement`.

    A reflector model reads the failing *training* cases (input, output, expected value, each
    scorer's verdict, the trace of tool calls) and writes a new text; candidates that pass more
    are kept, chosen on a validation split (Pareto selection, as GEPA does). ``test=`` cases are
    never shown to the reflector nor used for selection: they only measure the result.

    Args:
        agent: the :class:`~agentnb.Agent` to improve; it is never modified (``.best`` is new).
        dataset: the training data, as :func:`agentnb.evaluate` takes it (cases with expected values).
        scorers: as :func:`agentnb.evaluate` takes them; a case passes when every scorer passes.
        reflector: an Agent, a provider or a spec such as ``"openai:gpt-4o-mini"``: writes the new texts.
        test: held-out cases; the original and the best are compared on them (McNemar).
        budget: the most case runs (one case by one candidate), the test comparison included.
        validation: the share of ``dataset`` kept to select candidates (default 0.5), or a dataset.
        targets: ``"system"`` (default), ``"tools"`` (tool and parameter descriptions), names such
            as ``"tool:NAME"`` / ``"tool:NAME.PARAM"``, or a list of those.
        minibatch: training cases per reflection (default 3).
        seed: the seed of the split, the minibatches and the Pareto draws.
        log: a JSONL file (the evaluation log): a killed improvement given the same arguments
            resumes without repeating finished case runs or reflections.
        concurrency / timeout / run options: passed to :func:`agentnb.evaluate`.
        reflector_limits: :class:`~agentnb.UsageLimits` for each reflection (tokens, cost, ...).
        progress: ``"auto"`` (a live table in a notebook, a bar in a terminal), True, False.

    >>> from agentnb import Agent
    >>> from agentnb.testing import FunctionProvider
    >>> student = Agent(FunctionProvider(lambda m, t: "4" if "digits" in (m[0].content or "") else "four"),
    ...                 system="Answer.")
    >>> reflector = FunctionProvider(lambda m, t: "```\\nAnswer in digits.\\n```")
    >>> data = [{"input": f"2+2 ({i})", "expected": "4"} for i in range(4)]
    >>> imp = improve(student, data, ["exact"], reflector=reflector, budget=12, progress=False)
    >>> imp.best.system, imp.candidates["status"].tolist()
    ('Answer in digits.', ['seed', 'accepted'])
    """
    from agentnb.run.sync import run_sync

    progress, stopper = options.pop("progress", "auto"), options.pop("stopper", None)
    made = plan(agent, dataset, scorers, **options)  # a mistake is reported before any view is shown
    # Views are made in the caller's thread: in Jupyter the search runs on a worker thread, and
    # a widget must be displayed from the cell's own thread to land in its output.
    views = _views(progress)
    return run_sync(lambda: _run(made, views, stopper or Stopper()))


def _split(cases: list[Case], validation: Any, seed: int, input: str, expected: str | None) -> tuple[list, list]:
    if not cases:
        raise UserError("the dataset is empty: improve needs cases with expected values")
    if isinstance(validation, float) and not isinstance(validation, bool):
        if not 0 < validation < 1:
            raise UserError(f"validation is a share between 0 and 1 or a dataset, not {validation!r}")
        if len(cases) < 2:
            raise UserError("one case cannot be split into training and validation: give more, or validation=DATASET")
        order = list(cases)
        random.Random(seed).shuffle(order)
        n = min(len(cases) - 1, max(1, round(len(cases) * validation)))
        train, val = order[n:], order[:n]
    else:
        train, val = cases, load_cases(validation, input=input, expected=expected)
        if not val:
            raise UserError("the validation set is empty")
        _refuse_overlap(val, train, "validation=")
    _unique_ids(train + val, "training data")
    return train, val


def _test_cases(test: Any, training: list[Case], input: str, expected: str | None) -> list[Case]:
    if test is None:
        return []
    tests = load_cases(test, input=input, expected=expected)
    if not tests:
        raise UserError("test= is empty: give held-out cases, or leave test out")
    _refuse_overlap(tests, training, "test=")
    _unique_ids(training + tests, "training data and test=")
    return tests


def _canon(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _refuse_overlap(held: list[Case], training: list[Case], what: str) -> None:
    seen = {_canon(c.input) for c in training}
    shared = [c for c in held if _canon(c.input) in seen]
    if shared:
        named = ", ".join(f"{c.id!r} ({_canon(c.input)[:60]!r})" for c in shared[:5])
        more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
        raise UserError(f"{what} shares {len(shared)} case(s) with the training data: {named}{more}")


def _unique_ids(cases: list[Case], what: str) -> None:
    seen: set[str] = set()
    dup = None
    for c in cases:
        if c.id in seen:
            dup = c.id
            break
        seen.add(c.id)
    if dup is not None:
        raise UserError(f"the case id {dup!r} appears twice in the {what}: ids name cases in the log; make them unique")


def _views(progress: Any) -> list[Any]:
    from agentnb.improvement import views

    return progress_views(progress, views.auto_view)
