"""Executors: where the runs happen. ``local``: this process's event loop; ``ray``: Ray actors.

Both take (agent name, case, timeout) and give back a :class:`~agentnb.run.result.RunResult`
and whether the run timed out; the driver alone scores, logs and shows rows, so both give the
same rows. A Ray worker builds its agents once (they travel pickled when the workers start) and
runs many cases at once on its own event loop (an async actor).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import Usage
from agentnb.run.result import RunResult
from agentnb.tools.running import SYNC_TOOLS_IN_THREAD

#: Seconds a run gets to end cleanly once stopped (a timeout or Stop) before it is left behind.
GRACE = 5.0


def make_executor(kind: str, agents: dict[str, Any], options: dict[str, Any], **ray: Any) -> Any:
    if kind == "local":
        return LocalExecutor(agents, options)
    if kind == "ray":
        return RayExecutor(agents, options, **ray)
    raise UserError(f"executor must be 'local' or 'ray', not {kind!r}")


async def run_one(agent: Any, prompt: Any, timeout: float | None, options: dict[str, Any]) -> tuple[RunResult, bool]:
    """One run, bounded by ``timeout``; anything it raises becomes an ``error`` result."""
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


class LocalExecutor:
    """Runs on the calling event loop: the runs share it and each provider's HTTP client."""

    def __init__(self, agents: dict[str, Any], options: dict[str, Any]) -> None:
        self.agents = agents
        self.options = options

    async def start(self, concurrency: int) -> None:
        pass

    async def run(self, name: str, case: Any, timeout: float | None) -> tuple[RunResult, bool]:
        return await run_one(self.agents[name], case.input, timeout, self.options)

    async def close(self) -> None:
        pass


class RayExecutor:
    """Runs on Ray actors (``workers`` of them; default: one per CPU of the cluster).

    Uses a running Ray (``ray.init`` called before), else starts one at ``address`` (None: a
    local one) and shuts it down at the end.
    """

    def __init__(
        self, agents: dict[str, Any], options: dict[str, Any], address: str | None = None, workers: int | None = None
    ) -> None:
        self.agents = agents
        self.options = options
        self.address = address
        self.workers = workers
        self._actors: list[Any] = []
        self._owned = False
        self._next = 0

    async def start(self, concurrency: int) -> None:
        try:
            import ray
            from ray import cloudpickle
        except ImportError:
            from agentnb.errors import MissingDependencyError

            raise MissingDependencyError("executor='ray'", "ray") from None
        payload = _pickled(cloudpickle, self.agents, self.options)
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
            self._owned = True
        n = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        per = max(1, math.ceil(concurrency / n))
        actor = ray.remote(num_cpus=0)(_Worker).options(max_concurrency=per)
        self._actors = [actor.remote(payload) for _ in range(n)]
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

    async def run(self, name: str, case: Any, timeout: float | None) -> tuple[RunResult, bool]:
        import ray

        actor = self._actors[self._next % len(self._actors)]
        self._next += 1
        ref = actor.run.remote(name, case.input, timeout)
        try:
            data, timed_out = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        except Exception as exc:  # the worker died, or the result could not come back
            return _failed(f"{type(exc).__name__}: {exc}", "error"), False
        return RunResult.from_dict(data, output_type=_output_type(self.agents[name], self.options)), timed_out

    async def close(self) -> None:
        import ray

        for actor in self._actors:
            ray.kill(actor)
        self._actors = []
        if self._owned:
            ray.shutdown()


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

    async def ready(self) -> bool:
        return True

    async def run(self, name: str, prompt: Any, timeout: float | None) -> tuple[dict[str, Any], bool]:
        result, timed_out = await run_one(self.agents[name], prompt, timeout, self.options)
        return result.to_dict(), timed_out
