"""Executors: where the runs happen. ``local``: this process's event loop; ``ray``: Ray actors;
``processes``: forked worker processes (:mod:`agentnb.evaluation.processes`).

Each takes (agent name, case, timeout) and gives back a :class:`~agentnb.run.result.RunResult`
and whether the run timed out; the driver alone scores, logs and shows rows, so all give the
same rows. A Ray worker builds its agents once (they travel pickled when the workers start) and
runs many cases at once on its own event loop (an async actor).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import warnings
from typing import Any, NamedTuple

from agentnb.errors import UserError
from agentnb.messages import Usage
from agentnb.run.result import RunResult
from agentnb.tools.running import SYNC_TOOLS_IN_THREAD

#: Seconds a run gets to end cleanly once stopped (a timeout or Stop) before it is left behind.
GRACE = 5.0
#: Sends of one case to Ray workers (a worker that died is replaced between them).
TRIES = 3


def make_executor(kind: str, agents: dict[str, Any], options: dict[str, Any], **ray: Any) -> Any:
    if kind == "local":
        return LocalExecutor(agents, options)
    if kind == "ray":
        return RayExecutor(agents, options, **ray)
    raise UserError(f"executor must be 'local', 'processes' or 'ray', not {kind!r}")


async def run_one(
    agent: Any, prompt: Any, timeout: float | None, options: dict[str, Any], gate: asyncio.Lock | None = None
) -> tuple[RunResult, bool, float]:
    """One run, bounded by ``timeout``; anything it raises becomes an ``error`` result.

    Returns the result, whether it timed out, and the seconds it waited for ``gate`` (its
    in-process model, busy with another run) before it started: that wait is not the run's time.
    """
    waited = 0.0
    if gate is not None:
        start = time.perf_counter()
        await gate.acquire()
        waited = time.perf_counter() - start
    try:
        result, timed_out = await _bounded(agent, prompt, timeout, options)
    finally:
        if gate is not None:
            gate.release()
    return result, timed_out, waited


async def _bounded(agent: Any, prompt: Any, timeout: float | None, options: dict[str, Any]) -> tuple[RunResult, bool]:
    task = asyncio.ensure_future(_guarded(agent, prompt, options, threads=timeout is not None))
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:  # Stop: let the run end cleanly, then go on stopping
        task.cancel()
        await asyncio.wait({task}, timeout=GRACE)
        raise
    if done:
        return task.result(), False
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=GRACE)
    if done and not task.cancelled():
        return task.result(), True
    return _failed("the run did not stop within its grace time after the timeout", "cancelled"), True


def in_process_model(provider: Any) -> Any:
    """The in-process model behind ``provider`` (through wrappers such as UnTooled), or None.

    Such a model serves one request at a time: runs that share it wait for each other.
    """
    for _ in range(8):
        if provider is None:
            return None
        if getattr(provider, "in_process", False):
            weights = getattr(provider, "weights", None)  # loaded or not (agentnb.providers.hf.lazy)
            if weights is not None:
                return weights
            model = getattr(provider, "model", None)
            return provider if model is None or isinstance(model, str) else model
        provider = getattr(provider, "inner", None)
    return None


def model_gates(agents: dict[str, Any]) -> dict[str, asyncio.Lock]:
    """One lock per in-process model, for the agents that run one: a run holds its model's lock,
    so its latency is its own time and the wait before it is measured apart (``queue_wait``)."""
    locks: dict[int, asyncio.Lock] = {}
    gates = {}
    for name, agent in agents.items():
        model = in_process_model(agent.provider)
        if model is not None:
            gates[name] = locks.setdefault(id(model), asyncio.Lock())
    return gates


def warn_if_queued(agents: dict[str, Any], gates: dict[str, asyncio.Lock], concurrency: int) -> None:
    """Warn when every agent runs an in-process model and ``concurrency`` can only add waiting."""
    models = len({id(g) for g in gates.values()})
    if agents and len(gates) == len(agents) and concurrency > models:
        warnings.warn(
            f"every agent runs an in-process model, which serves one run at a time: with concurrency={concurrency} "
            f"the runs of a model wait for each other (concurrency={models} does the same work). Each row's latency "
            "is its own run's time; the wait before it is the queue_wait column",
            UserWarning,
            stacklevel=3,
        )


async def _guarded(agent: Any, prompt: Any, options: dict[str, Any], threads: bool) -> RunResult:
    # With a timeout, sync tools run on threads, so that a timeout can end a run whose tool
    # blocks. Without one they run on the loop, as in Agent.arun: a thread per tool call
    # cost ~1 ms of the loop's time per call at concurrency 100 (benchmarks/eval_throughput.py).
    if threads:
        SYNC_TOOLS_IN_THREAD.set(True)
    try:
        result: RunResult = await agent.arun(prompt, on_cancel="return", **options)
        return result
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a UserError from this case's input, or a bug: this case only
        return _failed(f"{type(exc).__name__}: {exc}", "error")


def _failed(message: str, reason: Any) -> RunResult:
    return RunResult("", (), (), Usage(), reason, 0, 0.0, message)


class Outcome(NamedTuple):
    """What an executor gives back for one case."""

    result: RunResult
    timed_out: bool
    waited: float = 0.0  # seconds the run waited for its in-process model before it started
    #: An infrastructure failure (a dead worker, a lost cluster), not a verdict on the case: the
    #: row is an error now, and a resume from the log runs the case again.
    lost: str | None = None


class LocalExecutor:
    """Runs on the calling event loop: the runs share it and each provider's HTTP client."""

    def __init__(self, agents: dict[str, Any], options: dict[str, Any]) -> None:
        self.agents = agents
        self.options = options
        self.gates: dict[str, asyncio.Lock] = {}

    async def start(self, concurrency: int) -> None:
        self.gates = model_gates(self.agents)
        warn_if_queued(self.agents, self.gates, concurrency)

    async def run(self, name: str, case: Any, timeout: float | None) -> Outcome:
        return Outcome(*await run_one(self.agents[name], case.input, timeout, self.options, self.gates.get(name)))

    async def close(self) -> None:
        pass


class RayExecutor:
    """Runs on Ray actors (``workers`` of them; default: one per CPU of the cluster).

    Uses a running Ray (``ray.init`` called before), else starts one at ``address`` (None: a
    local one) and shuts it down at the end. A worker that dies (its process killed, its node
    lost) is replaced, and the cases it held are sent again, to the next worker: up to
    :data:`TRIES` sends per case; after that the case is an infrastructure error
    (:attr:`Outcome.lost`), which a resume from the log runs again.
    """

    def __init__(
        self, agents: dict[str, Any], options: dict[str, Any], address: str | None = None, workers: int | None = None
    ) -> None:
        self.agents = agents
        self.options = options
        self.address = address
        self.workers = workers
        self.replaced = 0  # workers started again after one died
        self._actors: list[Any] = []
        self._actor: Any = None
        self._payload = b""
        self._owned = False
        self._next = 0
        self._replacing: asyncio.Lock | None = None

    async def start(self, concurrency: int) -> None:
        try:
            import ray
            from ray import cloudpickle
        except ImportError:
            from agentnb.errors import MissingDependencyError

            raise MissingDependencyError("executor='ray'", "ray") from None
        self._payload = _pickled(cloudpickle, self.agents, self.options)
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            self._owned = True
        n = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        per = max(1, math.ceil(concurrency / n))
        self._actor = ray.remote(num_cpus=0)(_Worker).options(max_concurrency=per)
        self._actors = [self._actor.remote(self._payload) for _ in range(n)]
        self._replacing = asyncio.Lock()
        try:
            await asyncio.gather(*[a.ready.remote() for a in self._actors])
        except Exception as exc:  # the workers could not unpickle the agents
            await self.close()
            cause = str(exc).strip().splitlines()[-1]
            raise UserError(
                f"Ray workers could not load the agents ({cause}). Tools and providers travel pickled: a module "
                "that defines them must be importable on the workers (ray.init(runtime_env=...)), or define "
                "them in the notebook / script itself"
            ) from None

    async def run(self, name: str, case: Any, timeout: float | None) -> Outcome:
        import ray

        lost = ""
        for _ in range(TRIES):
            slot = self._next % len(self._actors)
            self._next += 1
            actor = self._actors[slot]
            ref = actor.run.remote(name, case.input, timeout)
            try:
                data, timed_out, waited = await ref
            except asyncio.CancelledError:
                ray.cancel(ref)
                raise
            except ray.exceptions.RayTaskError as exc:  # the worker's own code raised: this case's error
                return Outcome(_failed(f"{type(exc).__name__}: {_first_line(exc)}", "error"), False)
            except Exception as exc:  # the worker died, or the cluster went away: not the case's fault
                lost = f"{type(exc).__name__}: {_first_line(exc)}"
                await self._replace(slot, actor)
                continue
            return Outcome(
                RunResult.from_dict(data, output_type=_output_type(self.agents[name], self.options)), timed_out, waited
            )
        message = f"infrastructure error, not a verdict on the case (a resume runs it again): {lost}"
        return Outcome(_failed(message, "error"), False, 0.0, lost)

    async def _replace(self, slot: int, dead: Any) -> None:
        """Start a new worker in ``slot`` where ``dead`` was (once, however many runs saw it die)."""
        import ray

        assert self._replacing is not None
        async with self._replacing:
            if self._actors[slot] is not dead:
                return  # another run replaced it already
            with contextlib.suppress(Exception):
                ray.kill(dead)
            fresh = self._actor.remote(self._payload)
            try:
                await fresh.ready.remote()
            except Exception:  # the cluster cannot start one now: the next send tries another slot
                with contextlib.suppress(Exception):
                    ray.kill(fresh)
                return
            self._actors[slot] = fresh
            self.replaced += 1

    async def close(self) -> None:
        import ray

        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._actors = []
        if self._owned:
            ray.shutdown()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _output_type(agent: Any, options: dict[str, Any]) -> Any:
    return options.get("output_type") or agent.output_type


def _pickled(cloudpickle: Any, agents: dict[str, Any], options: dict[str, Any]) -> bytes:
    """The agents as bytes for the workers; one clear error naming what cannot travel."""
    try:
        return bytes(cloudpickle.dumps((agents, options)))
    except Exception as whole:
        for name, agent in agents.items():
            parts = [("provider", agent.provider)] + [(f"tool {t!r}", tool) for t, tool in agent.tools.items()]
            for what, obj in parts:
                try:
                    cloudpickle.dumps(obj)
                except Exception as exc:
                    raise UserError(
                        f"agent {name!r}: its {what} cannot be sent to Ray workers ({type(exc).__name__}: {exc}); "
                        "build what it holds (a connection, a lock, an open file) inside the function instead"
                    ) from None
        raise UserError(f"the agents cannot be sent to Ray workers ({type(whole).__name__}: {whole})") from None


class _Worker:
    """A Ray actor: unpickles the agents once, then runs cases concurrently on its event loop."""

    def __init__(self, payload: bytes) -> None:
        from ray import cloudpickle

        self.agents, self.options = cloudpickle.loads(payload)
        self.gates = model_gates(self.agents)

    async def ready(self) -> int:
        import os

        return os.getpid()

    async def run(self, name: str, prompt: Any, timeout: float | None) -> tuple[dict[str, Any], bool, float]:
        result, timed_out, waited = await run_one(
            self.agents[name], prompt, timeout, self.options, self.gates.get(name)
        )
        return result.to_dict(redact=False), timed_out, waited
