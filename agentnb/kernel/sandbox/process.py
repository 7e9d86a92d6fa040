"""The sandbox kernel process: start it under limits, run code, interrupt, see it die, stop it.

One :class:`KernelProcess` is one ipykernel started by jupyter_client (``KernelManager``, a
blocking client over IPC sockets in a private folder), its command :mod:`launch` (resource
limits) and its helper :mod:`inside`. Calls are blocking and come one at a time (the owner,
:class:`agentnb.kernel.sandbox.sandbox.Sandbox`, holds a lock); :meth:`KernelProcess.execute`
waits for the kernel in short polls, so a deadline, a cancellation or the process's death is
seen within :data:`POLL` seconds.
"""

from __future__ import annotations

import ast
import json
import os
import queue
import shutil
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentnb.errors import AgentnbError
from agentnb.kernel.sandbox.results import Collector

#: Seconds between looks at a deadline, a cancellation and the process while code runs.
POLL = 0.05
#: Seconds the kernel may take to start and answer.
START_SECONDS = 60.0
#: Seconds an interrupted kernel has to stop before it is restarted.
GRACE = 3.0
_HERE = Path(__file__).resolve().parent
_SIGNALS = {
    signal.SIGSEGV: "a segmentation fault (SIGSEGV)",
    signal.SIGKILL: "killed (SIGKILL: the system's out-of-memory killer, or a person)",
    signal.SIGXCPU: "the CPU time limit (SIGXCPU)",
    signal.SIGABRT: "an abort (SIGABRT)",
    signal.SIGBUS: "a bus error (SIGBUS)",
}


class SandboxError(AgentnbError):
    """The sandbox kernel could not be started or stopped answering."""


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use: ``memory`` bytes of address space, ``cpu_seconds`` per call."""

    memory: int | None
    cpu_seconds: float | None


@dataclass
class Outcome:
    """How an execution ended: ``"done"``, ``"timeout"``, ``"cancelled"`` or ``"died"``."""

    ending: str
    collector: Collector
    reply: dict[str, Any] | None = None
    stopped: bool = True  # after a timeout or cancellation: did the interrupt stop the code?


class KernelProcess:
    """One running sandbox kernel; :meth:`start` it, then :meth:`execute` and :meth:`call`."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.km: Any = None
        self.kc: Any = None
        self.folder = tempfile.mkdtemp(prefix="agentnb-sandbox-")

    # --- life -----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the kernel, wait until it answers, install its helper."""
        self.launch()
        self.ready()

    def launch(self) -> None:
        """Start the kernel's process (it boots meanwhile: :meth:`ready` waits for it)."""
        from jupyter_client import KernelManager
        from jupyter_client.kernelspec import KernelSpec

        km = KernelManager(transport="ipc", ip=os.path.join(self.folder, "k"))
        km.connection_file = os.path.join(self.folder, "connection.json")
        km._kernel_spec = KernelSpec(  # our command: the launcher, then ipykernel's arguments
            argv=[sys.executable, str(_HERE / "launch.py"), "-f", "{connection_file}"],
            display_name="agentnb sandbox",
            language="python",
        )
        env = {
            **os.environ,
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
            "MPLBACKEND": "module://matplotlib_inline.backend_inline",
        }
        if self.limits.memory:
            env["AGENTNB_SANDBOX_MEMORY"] = str(int(self.limits.memory))
        if self.limits.cpu_seconds:
            env["AGENTNB_SANDBOX_CPU"] = str(int(START_SECONDS + self.limits.cpu_seconds))
        self.km = km
        km.start_kernel(env=env)

    def ready(self) -> None:
        """Wait until the launched kernel answers; install its helper."""
        kc = self.km.client()
        kc.start_channels()
        self.kc = kc
        try:
            kc.wait_for_ready(timeout=START_SECONDS)
        except RuntimeError as exc:
            raise SandboxError(f"the sandbox kernel did not start: {exc}") from None
        cpu = self.limits.cpu_seconds
        helper = json.dumps(str(_HERE / "inside.py"))
        self.run_silently(f"import runpy as _r; _r.run_path({helper})['install'](get_ipython(), {cpu!r}); del _r")

    def alive(self) -> bool:
        process = self._popen()
        return process is not None and process.poll() is None

    def death(self) -> str:
        """Why the process ended, in words."""
        process = self._popen()
        code = process.poll() if process is not None else None
        if code is None:
            return "it stopped answering"
        if code < 0:
            return _SIGNALS.get(-code, f"signal {-code}")  # type: ignore[call-overload]
        return f"it exited with code {code}"

    def stop(self) -> None:
        """Stop the kernel now (it is killed) and remove its files; safe to call twice."""
        kc, km, self.kc, self.km = self.kc, self.km, None, None
        if kc is not None:
            kc.stop_channels()
        if km is not None:
            try:
                km.shutdown_kernel(now=True)
            except Exception:  # already gone
                process = getattr(km.provisioner, "process", None) if km.provisioner else None
                if process is not None and process.poll() is None:
                    process.kill()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _popen(self) -> Any:
        provisioner = getattr(self.km, "provisioner", None) if self.km is not None else None
        return getattr(provisioner, "process", None)

    # --- calls ----------------------------------------------------------------------------

    def run_silently(self, code: str, expression: str | None = None, seconds: float = START_SECONDS) -> Any:
        """Run ``code`` (not in the history), then the JSON ``expression``'s value; errors raise."""
        exprs = {"r": expression} if expression else {}
        msg_id = self.kc.execute(code, silent=True, store_history=False, user_expressions=exprs, allow_stdin=False)
        reply = self._reply(msg_id, time.monotonic() + seconds)
        if reply is None:
            raise SandboxError(f"the sandbox did not answer within {seconds:g} s ({self.death()})")
        content = reply["content"]
        if content.get("status") != "ok":
            raise SandboxError(f"the sandbox's helper failed: {content.get('ename')}: {content.get('evalue')}")
        return read_expression(content, "r") if expression else None

    def execute(self, code: str, deadline: float | None, cancelled: threading.Event) -> Outcome:
        """Run ``code`` as a cell; stop at ``deadline`` (monotonic) or when ``cancelled`` is set."""
        exprs = {"a": "__agentnb__.after(True)"}
        msg_id = self.kc.execute(
            code, store_history=True, user_expressions=exprs, allow_stdin=False, stop_on_error=False
        )
        collector = Collector()
        ending = self._collect(msg_id, collector, deadline, cancelled)
        if ending == "died":
            return Outcome("died", collector)
        if ending == "done":
            return Outcome("done", collector, self._reply(msg_id, time.monotonic() + START_SECONDS))
        self.km.interrupt_kernel()
        never = threading.Event()
        stopped = self._collect(msg_id, collector, time.monotonic() + GRACE, never) == "done"
        reply = self._reply(msg_id, time.monotonic() + GRACE) if stopped else None
        return Outcome(ending, collector, reply, stopped)

    def _collect(self, msg_id: str, collector: Collector, deadline: float | None, cancelled: threading.Event) -> str:
        get = self.kc.get_iopub_msg
        while True:
            try:
                msg = get(timeout=POLL)
            except queue.Empty:
                if not self.alive():
                    return "died"
            else:
                if msg.get("parent_header", {}).get("msg_id") == msg_id:
                    if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                        return "done"
                    collector.add(msg)
            if cancelled.is_set():
                return "cancelled"
            if deadline is not None and time.monotonic() > deadline:
                return "timeout"

    def _reply(self, msg_id: str, deadline: float) -> dict[str, Any] | None:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive():
                return None
            try:
                msg = self.kc.get_shell_msg(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if msg.get("parent_header", {}).get("msg_id") == msg_id:
                return msg  # type: ignore[no-any-return]


def read_expression(content: dict[str, Any], key: str) -> Any:
    """The JSON value of user expression ``key`` in an execute reply's content (None if absent)."""
    found = (content.get("user_expressions") or {}).get(key)
    if not found or found.get("status") != "ok":
        return None
    text = str((found.get("data") or {}).get("text/plain", ""))
    if len(text) > 5_000_000:
        return None
    try:
        return json.loads(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
