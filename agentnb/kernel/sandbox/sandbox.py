"""A sandbox: a kernel process started when first needed, seeded with copies, restarted when it dies.

:class:`Sandbox` owns at most one :class:`~agentnb.kernel.sandbox.process.KernelProcess` at a
time. It starts it on the first :meth:`Sandbox.run` or :meth:`Sandbox.pull` (never when the
tools are made), copies the shared variables in (their values at that moment), and stops it
when asked, when the sandbox is garbage-collected (with the agent and tools that hold it) and at
interpreter exit (``weakref.finalize``). A process that died -- a segfault, ``os._exit``, a
limit -- is replaced by a fresh one, re-seeded, and the result says so.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from agentnb.kernel.sandbox.copying import pickled, read_copy, temp_path, write_seed
from agentnb.kernel.sandbox.process import KernelProcess, Limits, Outcome, SandboxError, read_expression
from agentnb.kernel.sandbox.results import CodeError, CodeResult


class _Holder:
    """The running process, apart from the :class:`Sandbox` so that its finalizer can stop it."""

    def __init__(self) -> None:
        self.process: KernelProcess | None = None

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            process.stop()


class Sandbox:
    """Code runs here, in a separate kernel, on copies of the notebook's ``share``\\ d variables."""

    def __init__(
        self, namespace: Mapping[str, Any], share: Sequence[str], limits: Limits, timeout: float | None
    ) -> None:
        self.namespace = namespace
        self.share = tuple(share)
        self.limits = limits
        self.timeout = timeout
        self._lock = threading.Lock()
        self._holder = _Holder()
        self._finalizer = weakref.finalize(self, self._holder.stop)

    @property
    def process(self) -> KernelProcess | None:
        """The running kernel process (None before the first call and after :meth:`shutdown`)."""
        return self._holder.process

    def run(self, code: str, cancelled: threading.Event | None = None) -> CodeResult:
        """Run ``code`` as a cell in the sandbox (blocking); what it showed."""
        cancelled = cancelled or threading.Event()
        with self._lock:
            notes = self._ready()
            process = self._holder.process
            assert process is not None
            deadline = time.monotonic() + self.timeout if self.timeout else None
            outcome = process.execute(code, deadline, cancelled)
            return self._shape(outcome, notes)

    def pull(self, name: str) -> Any:
        """A copy of the sandbox's variable ``name`` (unpickled here)."""
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_"):
            raise SandboxError(f"pull takes a variable's name (letters, digits, '_'; not private), not {name!r}")
        with self._lock:
            if self._holder.process is None or not self._holder.process.alive():
                raise SandboxError(f"the sandbox has no variable {name!r}: it has not run any code since it started")
            path = temp_path()
            try:
                why = self._holder.process.run_silently("", f"__agentnb__.dump({json.dumps(name)}, {json.dumps(path)})")
            except BaseException:
                _remove(path)
                raise
            if why is not None:
                _remove(path)
                raise SandboxError(str(why))
            return read_copy(path)

    def restart(self) -> list[str]:
        """A fresh sandbox now, seeded again; the notes about the copies."""
        with self._lock:
            self._holder.stop()
            return self._start()

    def shutdown(self) -> None:
        """Stop the sandbox's process (a later call starts a fresh one)."""
        with self._lock:
            self._holder.stop()

    # --- inside the lock ------------------------------------------------------------------

    def _ready(self) -> list[str]:
        process = self._holder.process
        if process is None:
            return self._start()
        if process.alive():
            return []
        why = process.death()
        self._holder.stop()
        notes = self._start()
        return [
            f"(The sandbox had died since the last call ({why}); it was restarted and its variables are gone.)",
            *notes,
        ]

    def _start(self) -> list[str]:
        process = KernelProcess(self.limits)
        self._holder.process = process
        path = None
        try:
            process.launch()
            # The copies are made while the kernel boots (a separate process: the two overlap).
            blobs, why = pickled(self.namespace, self.share) if self.share else ({}, {})
            path = write_seed(blobs) if blobs else None
            process.ready()
            return self._load(process, path, blobs, why)
        except BaseException:
            self._holder.stop()
            raise
        finally:
            if path is not None:
                _remove(path)

    def _seed(self, process: KernelProcess) -> list[str]:
        """Copy the shared variables into ``process`` again (their values now)."""
        blobs, why = pickled(self.namespace, self.share)
        path = write_seed(blobs) if blobs else None
        try:
            return self._load(process, path, blobs, why)
        finally:
            if path is not None:
                _remove(path)

    def _load(
        self, process: KernelProcess, path: str | None, blobs: dict[str, bytes], why: dict[str, str]
    ) -> list[str]:
        if path is not None:
            failed = process.run_silently("", f"__agentnb__.load({json.dumps(path)})") or {}
            why.update({k: f"{k} could not be loaded in the sandbox: {v}" for k, v in dict(failed).items()})
        copied = [n for n in blobs if n not in why]
        notes = [f"(Copies of the notebook's {', '.join(copied)} are in the sandbox.)"] if copied else []
        notes += [f"(Not copied: {text}.)" for text in why.values()]
        return notes

    def _shape(self, outcome: Outcome, notes: list[str]) -> CodeResult:
        process = self._holder.process
        assert process is not None
        if outcome.ending == "died":
            why = process.death()
            self._holder.stop()
            again = self._start()
            message = f"the sandbox died ({why}); it was restarted and its variables are gone"
            if self.share:
                message += "; shared variables were copied again"
            return dataclasses.replace(
                outcome.collector.result(notes=notes + again), error=CodeError("SandboxDied", message, "")
            )
        content = outcome.reply["content"] if outcome.reply is not None else {}
        after = read_expression(content, "a")
        if after is None and outcome.stopped:  # an error: the kernel evaluated no expression
            after = process.run_silently("", "__agentnb__.after()")
        after = after if isinstance(after, dict) else {}
        value = after.get("value") if isinstance(after.get("value"), str) else None
        changed = [str(n) for n in after.get("changed") or ()]
        result = outcome.collector.result(changed, notes, value)
        if outcome.ending == "done":
            return result
        seconds = f"{self.timeout:g} s" if self.timeout else "its time"
        if outcome.stopped:
            message = f"the code did not finish within {seconds}: it was interrupted; the sandbox kept its variables"
            return dataclasses.replace(result, error=CodeError("Timeout", message, ""))
        self._holder.stop()
        again = self._start()
        message = (
            f"the code did not finish within {seconds} and did not stop when interrupted: the sandbox was "
            "restarted and its variables are gone" + ("; shared variables were copied again" if self.share else "")
        )
        return dataclasses.replace(result, error=CodeError("Timeout", message, ""), notes=tuple(notes + again))


def _remove(path: str) -> None:
    import os

    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
