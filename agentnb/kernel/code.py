"""``run_python(code)`` in the user's namespace: what a cell shows, a timeout that stops the code.

The code runs on a thread of its own (the run's event loop, and the kernel's, stay free). It is
compiled as IPython compiles a cell: every statement but a last expression is executed, the last
expression evaluated and its value returned. The thread's stdout and stderr are captured
(:mod:`agentnb.kernel.capture`): only its own writes, bounded.

Stopping: on a timeout, a Stop, or the kernel's interrupt (both cancel the awaiting coroutine),
:func:`stop_thread` raises :class:`CodeStopped` in the thread with
``PyThreadState_SetAsyncExc``, again and again until the thread ends (code that catches it is
stopped on its next try), within :data:`STOP_WAIT` seconds. Its limit: the exception is raised
only between Python bytecodes, so a thread blocked in one C call (``time.sleep(60)``, a long
numpy operation, a socket read) runs on until that call returns; the result says so, and what it
prints meanwhile is discarded, never written into a later cell.

>>> runner = CodeRunner({"x": 2})
>>> r = runner.run("y = x * 21\\nprint('ok')\\ny")
>>> r.stdout, r.value, [n.name for n in r.names]
('ok\\n', 42, ['y'])
"""

from __future__ import annotations

import ast
import asyncio
import ctypes
import itertools
import linecache
import threading
import traceback
from time import perf_counter
from typing import Any

from agentnb.kernel import capture
from agentnb.kernel.results import CodeResult, identities, names_changed
from agentnb.tools.running import exception_text

#: Seconds a run_python call may take unless its tool or agent says otherwise.
CODE_TIMEOUT = 60.0
#: Characters of stdout (and of stderr) a result keeps; the rest is counted.
MAX_OUTPUT = 10_000
#: Seconds spent re-raising CodeStopped in a thread that does not end.
STOP_WAIT = 1.0
#: Frames of a traceback kept (the innermost).
MAX_FRAMES = 8

_counter = itertools.count(1)


class CodeStopped(BaseException):
    """Raised inside running code to stop it (a BaseException: ``except Exception`` does not catch it)."""


class CodeRunner:
    """Runs code in ``namespace`` (a kernel's ``user_ns`` or a dict) and reports what it showed."""

    def __init__(self, namespace: dict[str, Any], max_output: int = MAX_OUTPUT) -> None:
        self.namespace = namespace
        self.max_output = max_output

    def run(self, code: str, timeout: float | None = None) -> CodeResult:
        """Run ``code`` to its end (or ``timeout`` seconds), blocking; for Python callers and tests."""
        job = Job(self, code)
        job.thread.start()
        job.thread.join(timeout)
        if job.thread.is_alive():
            return job.stop(f"timed out after {timeout:g} s")
        return job.result()

    async def arun(self, code: str, timeout: float | None = None) -> CodeResult:
        """Run ``code`` without blocking the event loop; a cancellation stops the code, then propagates."""
        job = Job(self, code)
        loop = asyncio.get_running_loop()
        job.done_future = loop.create_future()
        job.loop = loop
        job.thread.start()
        try:
            await asyncio.wait_for(asyncio.shield(job.done_future), timeout)
        except (TimeoutError, asyncio.TimeoutError):
            return job.stop(f"timed out after {timeout:g} s")
        except asyncio.CancelledError:
            job.stop("the run was stopped")
            raise
        return job.result()


class Job:
    """One code run on its own thread."""

    def __init__(self, runner: CodeRunner, code: str) -> None:
        self.runner = runner
        self.code = code
        self.filename = f"<run_python #{next(_counter)}>"
        self.buffers = (capture.Buffer(runner.max_output), capture.Buffer(runner.max_output))
        self.outcome: dict[str, Any] = {}
        self.before: dict[str, Any] = {}
        self.start = perf_counter()
        self.done_future: asyncio.Future[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        #: True while the code may still be running (CodeStopped may be raised only then).
        self.live = True
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._work, name="agentnb-run_python", daemon=True)

    def _work(self) -> None:
        capture.start(threading.get_ident(), self.buffers)
        try:
            try:
                self.before = identities(self.runner.namespace)
                self.outcome["before"] = True
                self._execute()
            except CodeStopped:
                pass
            except BaseException as exc:  # SystemExit and KeyboardInterrupt are the code's, as data
                self.outcome["error"] = exception_text(exc)
                self.outcome["traceback"] = self._traceback(exc)
        except CodeStopped:  # delivered while the handler ran
            pass
        self._finish()

    def _finish(self) -> None:
        """The code is over: no CodeStopped may arrive after this one returns."""
        ident = threading.get_ident()
        while True:
            try:
                with self.lock:
                    self.live = False
                _delivered()  # a CodeStopped set before live turned False is raised here, at the latest
                break
            except CodeStopped:  # raised late: once more (none is set after live is False)
                continue
        linecache.cache.pop(self.filename, None)
        capture.end(ident)
        if self.loop is not None and self.done_future is not None:
            try:
                self.loop.call_soon_threadsafe(_settle, self.done_future)
            except RuntimeError:  # the loop closed meanwhile
                pass

    def _execute(self) -> None:
        tree = ast.parse(self.code, self.filename, "exec")
        source = self.code if self.code.endswith("\n") else self.code + "\n"
        linecache.cache[self.filename] = (len(source), None, source.splitlines(True), self.filename)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        assert last is None or isinstance(last, ast.Expr)
        ns = self.runner.namespace
        if tree.body:
            exec(compile(tree, self.filename, "exec"), ns)
        if last is not None:
            expr = ast.Expression(last.value)
            value = eval(compile(expr, self.filename, "eval"), ns)
            if value is not None:  # as a cell: None is not shown
                self.outcome["value"] = value

    def _traceback(self, exc: BaseException) -> str | None:
        """The frames of the code and below it (not agentnb's), the innermost kept."""
        if isinstance(exc, SyntaxError) and exc.filename == self.filename:
            return "".join(traceback.format_exception_only(exc)).rstrip()
        frames: list[traceback.FrameSummary] = list(traceback.extract_tb(exc.__traceback__))
        own = next((i for i, f in enumerate(frames) if f.filename == self.filename), None)
        if own is None:
            return None
        frames = frames[own:]
        head = ""
        if len(frames) > MAX_FRAMES:
            head = f"  [... {len(frames) - MAX_FRAMES} outer frames cut ...]\n"
            frames = frames[-MAX_FRAMES:]
        return "Traceback (most recent call last):\n" + head + "".join(traceback.format_list(frames)).rstrip()

    def result(self, stopped: str | None = None) -> CodeResult:
        out, err = self.buffers
        names = names_changed(self.before, self.runner.namespace) if "before" in self.outcome else ()
        self.before = {}  # the snapshot holds references: let go of them
        return CodeResult(
            stdout=out.text(),
            stderr=err.text(),
            value=self.outcome.get("value"),
            has_value="value" in self.outcome,
            error=self.outcome.get("error"),
            traceback=self.outcome.get("traceback"),
            names=names,
            stopped=stopped,
            cut=out.cut + err.cut,
            duration=perf_counter() - self.start,
        )

    def stop(self, why: str) -> CodeResult:
        """Stop the thread (see the module's text) and say what it showed until then."""
        if not stop_thread(self):
            why += (
                "; the code could not be interrupted (it is blocked in a C call) and goes on in the background "
                "until that call returns; what it prints is discarded"
            )
        return self.result(stopped=why)


def stop_thread(job: Job, wait: float = STOP_WAIT) -> bool:
    """Raise :class:`CodeStopped` in the job's thread until its code ends or ``wait`` seconds
    pass; whether the code ended."""
    ident = job.thread.ident
    deadline = perf_counter() + wait
    set_async = ctypes.pythonapi.PyThreadState_SetAsyncExc
    while ident is not None:
        with job.lock:
            if not job.live:
                break
            set_async(ctypes.c_ulong(ident), ctypes.py_object(CodeStopped))
        job.thread.join(0.005)
        if perf_counter() > deadline:
            break
    return not job.live


def _delivered() -> None:
    """A call: the interpreter raises a pending asynchronous exception on entering a function.

    (Not ``PyThreadState_SetAsyncExc(ident, NULL)`` to clear it: on CPython 3.11.7, after that,
    the next agent run on the main thread stalled in traced code (``sys.settrace``) for good.)
    """


def _settle(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
