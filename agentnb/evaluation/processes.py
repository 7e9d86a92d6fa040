"""``executor="processes"``: the cases spread over warm local worker processes, one event loop each.

One process runs every run on one core. With hundreds of runs in flight against a fast server,
that core is the limit (the client's CPU per model call times the calls per second). This
executor forks ``workers`` processes (default: one per CPU) as the evaluation starts; each
inherits the agents as they are in memory (no pickling: tools defined in a notebook work), runs
the cases it is sent concurrently on its own event loop, and sends back each result as a plain
dict. The driver (this process) scores, logs and shows the rows, as with the other executors,
so the rows are the same.

Starting costs little (a fork of a process that has imported everything already: ~10-50 ms per
worker, against ~5 s for Ray's); each run's result crosses a pipe (~0.1 ms). It pays when the
client's CPU is the limit: many runs in flight (hundreds) against a server that answers fast,
with more than one core free. See the README's benchmark row.

Needs ``os.fork`` (Linux, macOS); elsewhere use ``"local"`` or ``"ray"``. A worker that dies
makes its runs in flight ``error`` rows; the others go on.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import selectors
from typing import Any

from agentnb.errors import UserError
from agentnb.evaluation.executors import Outcome, _failed, _output_type, model_gates, run_one
from agentnb.run.result import RunResult

__all__ = ["ProcessExecutor"]

#: Seconds a worker gets to end once told to, before it is killed.
STOP_WAIT = 5.0


class ProcessExecutor:
    """Runs on ``workers`` forked processes (default: one per CPU), ``concurrency`` split among them."""

    def __init__(self, agents: dict[str, Any], options: dict[str, Any], workers: int | None = None) -> None:
        if workers is not None and (not isinstance(workers, int) or workers < 1):
            raise UserError(f"workers must be a whole number >= 1 or None, not {workers!r}")
        self.agents = agents
        self.options = options
        self.workers = workers
        self._procs: list[Any] = []
        self._conns: list[Any] = []
        self._pending: dict[int, tuple[asyncio.Future[Any], int]] = {}
        self._load: list[int] = []
        self._ids = itertools.count()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self, concurrency: int) -> None:
        import multiprocessing

        if "fork" not in multiprocessing.get_all_start_methods():
            raise UserError("executor='processes' needs os.fork (Linux, macOS); use executor='local' or 'ray'")
        ctx = multiprocessing.get_context("fork")
        self._loop = asyncio.get_running_loop()
        if not isinstance(getattr(self._loop, "_selector", None), selectors.BaseSelector):
            # A forked worker must not touch the driver's event loop (see _serve): asyncio's own
            # loop can be kept apart; another (uvloop's) shares its kernel state with the fork.
            raise UserError(
                f"executor='processes' runs on asyncio's own event loop, not {type(self._loop).__name__}; "
                "use executor='local' on this loop"
            )
        n = self.workers or os.cpu_count() or 1
        for i in range(n):
            mine, theirs = ctx.Pipe()
            _roomy(mine, theirs)
            proc = ctx.Process(target=_serve, args=(theirs, self.agents, self.options, self._loop), daemon=True)
            proc.start()
            theirs.close()
            self._procs.append(proc)
            self._conns.append(mine)
            self._load.append(0)
            self._loop.add_reader(mine.fileno(), self._readable, i)

    async def run(self, name: str, case: Any, timeout: float | None) -> Outcome:
        assert self._loop is not None
        alive = [i for i, c in enumerate(self._conns) if c is not None]
        if not alive:
            why = "every worker process has ended"
            return Outcome(_failed(why, "error"), False, lost=why)
        worker = min(alive, key=self._load.__getitem__)  # the least busy
        rid = next(self._ids)
        future: asyncio.Future[Any] = self._loop.create_future()
        self._pending[rid] = (future, worker)
        self._load[worker] += 1
        try:
            self._conns[worker].send((rid, name, case.input, timeout))
            data, timed_out, waited = await future
        except asyncio.CancelledError:
            self._send(worker, ("cancel", rid))
            raise
        except (OSError, EOFError) as exc:
            why = f"the worker process failed ({type(exc).__name__}: {exc})"
            return Outcome(_failed(why, "error"), False, lost=why)
        finally:
            self._pending.pop(rid, None)
            self._load[worker] -= 1
        if isinstance(data, str):  # the worker died with this run in flight (lost), or its result could not come
            return Outcome(_failed(data, "error"), False, lost=data if timed_out is None else None)
        result = RunResult.from_dict(data, output_type=_output_type(self.agents[name], self.options))
        return Outcome(result, timed_out, waited)

    def _readable(self, worker: int) -> None:
        conn = self._conns[worker]
        try:
            while conn is not None and conn.poll():
                rid, data, timed_out, waited = conn.recv()
                entry = self._pending.get(rid)
                if entry is not None and not entry[0].done():
                    entry[0].set_result((data, timed_out, waited))
        except (EOFError, OSError):  # the worker ended: its runs in flight fail, the others go on
            self._drop(worker, f"the worker process (pid {self._procs[worker].pid}) ended during this run")

    def _drop(self, worker: int, why: str) -> None:
        conn = self._conns[worker]
        if conn is None:
            return
        assert self._loop is not None
        self._loop.remove_reader(conn.fileno())
        conn.close()
        self._conns[worker] = None
        for future, w in list(self._pending.values()):
            if w == worker and not future.done():
                future.set_result((why, None, 0.0))  # None: lost with its worker (a resume runs it again)

    def _send(self, worker: int, message: Any) -> None:
        conn = self._conns[worker]
        if conn is not None:
            try:
                conn.send(message)
            except OSError:
                pass

    async def close(self) -> None:
        for i in range(len(self._conns)):
            self._send(i, None)  # stop: the worker cancels what it still runs and exits
        for proc in self._procs:
            await asyncio.get_running_loop().run_in_executor(None, proc.join, STOP_WAIT)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for i in range(len(self._conns)):
            self._drop(i, "the evaluation ended")
        self._procs = []


def _roomy(*conns: Any) -> None:
    """Larger socket buffers for the pipe (a socket pair): a worker's results queue up there while
    the driver is busy, instead of blocking the worker's loop on a full 200 KB buffer."""
    import socket

    for conn in conns:
        try:
            with socket.socket(fileno=os.dup(conn.fileno())) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        except OSError:
            pass


def _serve(conn: Any, agents: dict[str, Any], options: dict[str, Any], parent: Any) -> None:
    """A worker process: run what the driver sends, send back each result, until told to stop."""
    import signal

    # The driver's event loop came along in the fork, and its epoll instance is shared with the
    # driver: closing an inherited connection here (an HTTP client replaced by this process's
    # own) would unregister the driver's socket there. That loop gets a selector of its own.
    if isinstance(getattr(parent, "_selector", None), selectors.BaseSelector):
        parent._selector = selectors.DefaultSelector()
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the driver, which stops the workers
    except ValueError:
        pass
    asyncio.run(_worker_loop(conn, agents, options))


async def _worker_loop(conn: Any, agents: dict[str, Any], options: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    tasks: dict[int, asyncio.Task[None]] = {}

    gates = model_gates(agents)  # an in-process model serves one run at a time, in each worker

    async def one(rid: int, name: str, prompt: Any, timeout: float | None) -> None:
        result, timed_out, waited = await run_one(agents[name], prompt, timeout, options, gates.get(name))
        try:
            conn.send((rid, result.to_dict(redact=False), timed_out, waited))
        except (OSError, EOFError):  # the driver is gone
            pass
        except Exception as exc:  # a value the run returned cannot be sent: this row fails, not the driver
            conn.send((rid, f"the run's result could not be sent back ({type(exc).__name__}: {exc})", False, 0.0))

    def readable() -> None:
        try:
            while conn.poll():
                message = conn.recv()
                if message is None:
                    raise EOFError
                if message[0] == "cancel":
                    task = tasks.get(message[1])
                    if task is not None:
                        task.cancel()
                    continue
                rid = message[0]
                task = loop.create_task(one(*message))
                tasks[rid] = task
                task.add_done_callback(functools.partial(_forget, tasks, rid))
        except (EOFError, OSError):  # told to stop, or the driver is gone
            if not ended.done():
                ended.set_result(None)

    loop.add_reader(conn.fileno(), readable)
    await ended
    loop.remove_reader(conn.fileno())
    for task in list(tasks.values()):
        task.cancel()
    await asyncio.gather(*tasks.values(), return_exceptions=True)


def _forget(tasks: dict[int, Any], rid: int, _: Any) -> None:
    tasks.pop(rid, None)
