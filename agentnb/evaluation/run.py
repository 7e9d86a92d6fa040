"""The driver: every (case, agent, repeat) once, ``concurrency`` at a time, each case isolated.

A run that raises, times out or gives an invalid answer is a row with its stop reason and
error; the evaluation goes on. Each finished case is scored, appended to the log (when there is
one) and handed to the progress views. Cases already in the log are not run again. A Stop (the
widget's button, Ctrl-C, cancelling the task) ends the runs in flight and keeps what finished.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> from agentnb.evaluation import contains, evaluate
>>> agent = Agent(ScriptedProvider(["4", "7"]))
>>> ev = evaluate(agent, [{"input": "2+2", "expected": "4"}, {"input": "3+3", "expected": "6"}],
...               scorers=[contains()], concurrency=1, progress=False)
>>> [(r["output"], r["passed"]) for r in ev.rows]
[('4', True), ('7', False)]
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterator
from time import perf_counter
from typing import Any, TypeVar

from agentnb.errors import UserError
from agentnb.evaluation.cases import Case, load_cases
from agentnb.evaluation.executors import make_executor
from agentnb.evaluation.heap import Frozen, freeze_older, thaw
from agentnb.evaluation.log import EvalLog, _fallback, check_log_path, read_log
from agentnb.evaluation.results import Evaluation
from agentnb.evaluation.scorers import Scorer, apply, as_scorers

#: The default number of runs in flight at once.
DEFAULT_CONCURRENCY = 8

T = TypeVar("T")


class Stopper:
    """Stops an evaluation from any thread (the widget's Stop button): runs in flight end, what finished stays."""

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel: Callable[[], object] | None = None

    def stop(self) -> None:
        self.stopped.set()
        loop, cancel = self._loop, self._cancel
        if loop is not None and cancel is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(cancel)
            except RuntimeError:  # the loop closed meanwhile: nothing left to stop
                pass

    @contextlib.contextmanager
    def cancelling(self, cancel: Callable[[], object]) -> Iterator[None]:
        """While the block runs (on an event loop), a stop calls ``cancel`` on that loop."""
        self._loop, self._cancel = asyncio.get_running_loop(), cancel
        try:
            yield
        finally:
            self._cancel = None

    async def guard(self, work: Awaitable[T]) -> T | None:
        """Await ``work`` in a task of its own, which a stop cancels (as it cancels an evaluation's
        runs); None when it was cancelled before it gave a value. A cancellation of the caller
        (Ctrl-C) is a stop too: the work is cancelled and the caller goes on, as ``aevaluate`` does.

        >>> async def slow():
        ...     await asyncio.sleep(60)
        >>> async def main():
        ...     stopper = Stopper()
        ...     asyncio.get_running_loop().call_later(0.01, stopper.stop)
        ...     return await stopper.guard(slow()), stopper.stopped.is_set()
        >>> asyncio.run(main())
        (None, True)
        """
        task = asyncio.ensure_future(work)
        with self.cancelling(task.cancel):
            if self.stopped.is_set():
                task.cancel()
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                self.stopped.set()
                task.cancel()
                await asyncio.wait({task})
                _uncancel()
        return None if task.cancelled() else task.result()


async def aevaluate(
    agent: Any,
    dataset: Any,
    scorers: Any = None,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    repeats: int = 1,
    timeout: float | None = None,
    log: str | None = None,
    executor: str = "local",
    input: str = "input",
    expected: str | None = "expected",
    progress: Any = "auto",
    stopper: Stopper | None = None,
    ray_address: str | None = None,
    ray_workers: int | None = None,
    workers: int | None = None,
    freeze_gc: bool = True,
    **run_options: Any,
) -> Evaluation:
    """Evaluate ``agent`` (or a ``{name: agent}`` dict) on every case of ``dataset``; see :func:`evaluate`.

    >>> import asyncio
    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> ev = asyncio.run(aevaluate(Agent(ScriptedProvider(["hi"])), ["say hi"], progress=False))
    >>> ev.rows[0]["output"], ev.rows[0]["stop_reason"]
    ('hi', 'answer')
    """
    agents = _agents(agent)
    cases = load_cases(dataset, input=input, expected=expected)
    checks = as_scorers(scorers)
    if not isinstance(concurrency, int) or concurrency < 1:
        raise UserError(f"concurrency must be a whole number >= 1, not {concurrency!r}")
    if not isinstance(repeats, int) or repeats < 1:
        raise UserError(f"repeats must be a whole number >= 1, not {repeats!r}")
    if timeout is not None and not timeout > 0:
        raise UserError(f"timeout must be a number of seconds > 0 or None, not {timeout!r}")
    if log is not None:
        check_log_path(log)
    ev = Evaluation(list(agents), [s.name for s in checks], log=log, output_types=_output_types(agents, run_options))
    work = [(i, c, name, r) for i, c in enumerate(cases) for name in agents for r in range(repeats)]
    wanted = {_key(c, name, r) for _, c, name, r in work}
    if log is not None:
        for row, offset in read_log(log):
            if row["key"] in wanted and row["key"] not in ev.keys and not row.get("lost"):
                ev.add(row, offset=offset)
        ev.resumed = len(ev.rows)
    todo = iter([w for w in work if _key(w[1], w[2], w[3]) not in ev.keys])
    views = _views(progress)
    runner = _runner(executor, agents, run_options, ray_address, ray_workers, workers)
    stopper = stopper or Stopper()
    writer, frozen = await _begin(runner, concurrency, views, ev, len(work), stopper, log, freeze_gc)
    tasks: list[asyncio.Task[None]] = []
    try:
        loop = asyncio.get_running_loop()
        tasks = [
            loop.create_task(_worker(todo, runner, checks, timeout, ev, writer, views, stopper))
            for _ in range(concurrency)
        ]
        with stopper.cancelling(lambda: _cancel_all(tasks)):
            await asyncio.gather(*tasks)
    except asyncio.CancelledError:
        ev.stopped = True
        for w in tasks:
            w.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        _uncancel()  # keep what finished, like Agent.run
    finally:
        thaw(frozen)
        ev.stopped = ev.stopped or stopper.stopped.is_set()
        if writer is not None:
            writer.close()
        await runner.close()
        for view in views:
            view.finish(ev)
    return ev


def _runner(
    executor: str, agents: dict[str, Any], run_options: dict[str, Any], address: Any, ray_workers: Any, workers: Any
) -> Any:
    if executor == "processes":
        from agentnb.evaluation.processes import ProcessExecutor

        return ProcessExecutor(agents, run_options, workers=workers)
    return make_executor(executor, agents, run_options, address=address, workers=ray_workers)


async def _begin(
    runner: Any,
    concurrency: int,
    views: list[Any],
    ev: Evaluation,
    total: int,
    stopper: Stopper,
    log: str | None,
    freeze_gc: bool,
) -> tuple[EvalLog | None, Frozen]:
    """Start the executor, the views and the log; the log, and what was done to the collector."""
    # Older objects out of the collector's passes (agentnb.evaluation.heap); before the executor
    # starts, so that forked workers inherit it. On a failure here, the collector as it was.
    frozen = freeze_older(freeze_gc)
    try:
        await runner.start(concurrency)  # a tool that cannot travel to Ray fails here, before any case
        for view in views:
            view.start(ev, total, stopper)
        return (EvalLog(log) if log is not None else None), frozen
    except BaseException:
        thaw(frozen)
        raise


def evaluate(agent: Any, dataset: Any, scorers: Any = None, **options: Any) -> Evaluation:
    """Run an agent (or a ``{name: agent}`` dict of agents to compare) over a dataset; an :class:`Evaluation`.

    Args:
        agent: an :class:`~agentnb.Agent`, or a dict of named agents run on the same cases.
        dataset: a list of strings or dicts, a pandas DataFrame, or a ``.jsonl`` / ``.csv`` path.
        scorers: functions ``(case, result) -> bool | float`` or built-ins from
            :mod:`agentnb.evaluation.scorers` (a list, or a ``{name: scorer}`` dict).
        concurrency: runs in flight at once (default 8).
        repeats: run each case this many times per agent.
        timeout: seconds one run may take; then it is stopped and marked ``timeout``.
        log: a JSONL file: each finished case is appended with its transcript; cases already
            in it are skipped (resume).
        executor: ``"local"`` (asyncio, this process), ``"processes"`` (``workers`` forked
            processes, default one per CPU: for hundreds of runs in flight against a fast
            server, where one core is the limit; :mod:`agentnb.evaluation.processes`) or
            ``"ray"`` (Ray workers: ``ray_address=``, ``ray_workers=``).
        input / expected: the dataset's input column (or a ``{column}`` template) and expected column.
        progress: ``"auto"`` (a widget in a notebook, a bar in a terminal), True, False, or a view.
        freeze_gc: while the runs go on, leave the objects that existed before them out of the
            garbage collector's passes (``gc.freeze()``) and collect the youngest generation
            less often (its threshold at least 10,000); both undone at the end (see
            :mod:`agentnb.evaluation.heap`). At concurrency 1,000 the collector was half the
            CPU without them. False: the collector is left as it is.
        run_options: passed to each run (``output_type=``, ``stream=``).

    Works inside Jupyter's running loop, like :meth:`Agent.run` (``aevaluate`` is the async twin).

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> ev = evaluate(Agent(ScriptedProvider(["Paris"])), [{"input": "Capital of France?", "expected": "paris"}],
    ...               scorers=["contains"], progress=False)
    >>> ev.summary()["pass_rate"].tolist()
    [1.0]
    """
    from agentnb.run.sync import run_sync

    # Views are made here, in the caller's thread: in Jupyter the runs go to a worker thread,
    # and a widget must be displayed from the cell's own thread to land in its output.
    options["progress"] = _views(options.get("progress", "auto"))
    return run_sync(lambda: aevaluate(agent, dataset, scorers, **options))


async def _worker(
    todo: Iterator[tuple[int, Case, str, int]],
    runner: Any,
    checks: list[Scorer],
    timeout: float | None,
    ev: Evaluation,
    writer: EvalLog | None,
    views: list[Any],
    stopper: Stopper,
) -> None:
    for index, case, name, repeat in todo:
        if stopper.stopped.is_set():
            return
        start = perf_counter()
        outcome = await runner.run(name, case, timeout)
        result = outcome.result
        latency = perf_counter() - start - outcome.waited  # the run's own time, not its wait
        row = make_row(index, case, name, repeat, result, latency, timeout if outcome.timed_out else None)
        row["queue_wait"] = round(outcome.waited, 6)
        if outcome.lost is not None:
            row["lost"] = True  # not a verdict: a resume from the log runs the case again
        passed = row["error"] is None
        for check in checks:
            value, error = await apply(check, case, result)
            row["scores"][check.name] = value
            if error is not None:
                row["scorer_errors"][check.name] = error
            passed = passed and check.passes(value)
        row["passed"] = passed and row["stop_reason"] not in ("error", "invalid_output", "cancelled", "timeout")
        offset = writer.append(row, result.to_dict(redact=False)) if writer is not None else None
        ev.add(row, result=None if writer is not None else result, offset=offset)
        for view in views:
            view.row(row)


def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()


def _uncancel() -> None:
    """The current task's cancellation was handled (a stop): later awaits are not cancelled."""
    task = asyncio.current_task()
    if task is not None and getattr(task, "cancelling", lambda: 0)():  # Python >= 3.11
        task.uncancel()  # type: ignore[attr-defined,unused-ignore]


def make_row(
    index: int, case: Case, agent: str, repeat: int, result: Any, latency: float, timed_out: float | None
) -> dict[str, Any]:
    """One row of the table: what the run gave, its costs and how it ended (scores come after)."""
    tools = [e.name for e in result.events if e.kind == "tool_call"]
    error = result.error
    if timed_out is not None:
        error = f"TimeoutError: no answer within {timed_out:g} s"
    elif result.stop_reason == "invalid_output" and error is None:
        error = "invalid output: the answer never matched the output type"
    return {
        "key": _key(case, agent, repeat),
        "index": index,
        "case": case.id,
        "agent": agent,
        "repeat": repeat,
        "input": case.input,
        "output": result.output,
        "value": _fallback(result.value) if result.value is not None and not _plain(result.value) else result.value,
        "expected": case.expected,
        "scores": {},
        "scorer_errors": {},
        "passed": False,
        "stop_reason": "timeout" if timed_out is not None else result.stop_reason,
        "tool_calls": len(tools),
        "tools": tools,
        "model_calls": sum(1 for e in result.events if e.kind == "model_response"),
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
        "latency": round(latency, 6),
        "queue_wait": 0.0,
        "error": error,
        "run_id": uuid.uuid4().hex[:12],
        "metadata": case.metadata,
    }


def _plain(v: Any) -> bool:
    return isinstance(v, (str, int, float, bool, list, dict))


def _key(case: Case, agent: str, repeat: int) -> str:
    return f"{case.id}|{agent}|{repeat}"


def _agents(agent: Any) -> dict[str, Any]:
    from agentnb.run.agent import Agent

    agents = dict(agent) if isinstance(agent, dict) else {"agent": agent}
    if not agents:
        raise UserError("give an Agent or a non-empty dict of named agents")
    for name, a in agents.items():
        if not isinstance(a, Agent):
            raise UserError(f"agent {name!r} is a {type(a).__name__}, not an agentnb Agent")
        if "|" in str(name):
            raise UserError(f"agent name {name!r}: '|' is reserved (it separates the parts of a log key)")
    return {str(k): v for k, v in agents.items()}


def _output_types(agents: dict[str, Any], run_options: dict[str, Any]) -> dict[str, Any]:
    given = run_options.get("output_type")
    return {name: given if given is not None else a.output_type for name, a in agents.items()}


def _views(progress: Any) -> list[Any]:
    from agentnb.evaluation import progress as views

    return progress_views(progress, views.auto_view)


def progress_views(progress: Any, auto_view: Callable[..., Any]) -> list[Any]:
    """The views a ``progress=`` argument asks for: none, ``auto_view``'s (``"auto"``, True), or
    the views given (one or a list)."""
    if progress is False or progress is None:
        return []
    if progress == "auto" or progress is True:
        view = auto_view(force=progress is True)
        return [view] if view is not None else []
    return list(progress) if isinstance(progress, (list, tuple)) else [progress]
