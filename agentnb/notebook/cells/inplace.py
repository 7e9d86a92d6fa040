"""Waiting for a click in place: widget messages reach a run while its cell is still running.

Two ways a cell can wait for a run while the trace widget waits for Approve / Deny / Edit:

* ``%agent`` and ``await agent.arun(...)``: the cell awaits, the kernel's event loop is free,
  and ipykernel (>= 7.4) hands widget messages to their handlers at once, *concurrently* with
  the cell. It publishes no "idle" status for them, though, and ipywidgets' front end holds
  back a widget's next state update until the previous one was acknowledged that way: the
  second edit of the same text field would never arrive. :func:`acknowledge` publishes that
  status for an update of the panel's fields.
* ``agent.run()`` and ``evaluate(...)``: the run goes on a worker thread and the cell's thread waits
  (:mod:`agentnb.run.sync`). While a call waits for approval (and while an evaluation's progress
  widget is shown, for its Stop: :func:`lent_cell`), the run lends that thread
  :func:`serve_comms`: it reads the kernel's shell messages itself, hands widget messages
  (``comm_*``) to their handlers as ipykernel would, and keeps every other message (the next
  cell's ``execute_request``...) to give back to the kernel, in order, when it stops. Nothing is
  read while nothing waits for a click.

Kernels other than ipykernel 7 (where the shell messages arrive otherwise) cannot be served:
:func:`comm_server` returns None and the widget says to use ``%agent`` instead.

>>> comm_server(None) is None
True
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

#: comm message types served while a cell waits; every other message waits for the cell.
COMM_TYPES = frozenset({"comm_open", "comm_msg", "comm_close"})
_serving = threading.local()
_given_back: set[Any] = set()  # tasks of messages given back to the kernel (kept alive)


def current_kernel() -> Any:
    """The running IPython kernel, or None (plain Python, a terminal IPython)."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None  # type: ignore[attr-defined]
    return getattr(shell, "kernel", None)


@contextlib.contextmanager
def held_cell(name: str) -> Iterator[None]:
    """While the block runs (a call of tool ``name`` waits for a click), the cell that
    ``agent.run()`` holds serves the widget's messages; a kernel that cannot is a UserError."""
    from agentnb.run.sync import BLOCKING_CELL

    cell = BLOCKING_CELL.get()
    kernel = current_kernel() if cell is not None else None
    if cell is None or kernel is None:  # the cell awaits (%agent, arun), or no kernel: nothing to lend
        yield
        return
    job = comm_server(kernel)
    if job is None:
        from agentnb.errors import UserError

        raise UserError(
            f"{name} needs approval, but agent.run() holds the notebook cell and this kernel's messages "
            "cannot be served from it: use %agent, or 'await agent.arun(..., on_event=widget)'"
        )
    with cell.lend(job):
        yield


@contextlib.contextmanager
def lent_cell() -> Iterator[bool]:
    """While the block runs, the cell that a sync call holds (``evaluate(...)``, ``%agent_eval``)
    serves the kernel's widget messages, so a Stop button reaches the work; yields whether it does.

    Nothing to lend (the cell awaits, or no kernel, or a kernel that cannot be served): the block
    runs as it is, and only a kernel interrupt stops the work.
    """
    from agentnb.run.sync import BLOCKING_CELL

    cell = BLOCKING_CELL.get()
    job = comm_server(current_kernel()) if cell is not None else None
    if cell is None or job is None:
        yield False
        return
    with cell.lend(job):
        yield True


def lend_for_run() -> tuple[Callable[[], None], Callable[[], None]] | None:
    """Called on a run's own thread as it starts under ``agent.run()`` in a cell: lend the cell
    that waits for it to serve widget messages (a Stop click) until ``release()``, and give a
    ``stop()`` that cancels the run (as a kernel interrupt does). None where no cell waits for
    this run or its kernel cannot be served.
    """
    import asyncio

    from agentnb.run.sync import BLOCKING_CELL

    cell = BLOCKING_CELL.get()
    job = comm_server(current_kernel()) if cell is not None else None
    try:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
    except RuntimeError:
        return None
    if cell is None or job is None or task is None:
        return None
    lent = cell.lend(job)
    lent.__enter__()
    released: list[bool] = []

    def release() -> None:
        if not released:
            released.append(True)
            lent.__exit__(None, None, None)

    return (lambda: loop.call_soon_threadsafe(task.cancel)), release


def comm_server(kernel: Any) -> Callable[[Callable[[], bool]], None] | None:
    """A job for :meth:`agentnb.run.sync.BlockingCell.lend` that serves ``kernel``'s widget
    messages on the cell's thread until ``stop()``; None where this kernel cannot be served."""
    manager = getattr(getattr(kernel, "shell_channel_thread", None), "manager", None)
    if manager is not None:  # ipykernel 7 with a shell channel thread: main-shell messages
        pair = manager.get_shell_channel_to_subshell_pair(None)
        socket, reply = pair.to_socket, manager.get_subshell_to_shell_channel_socket(None)
    elif hasattr(kernel, "_main_asyncio_lock") and getattr(kernel, "shell_stream", None) is not None:
        socket, reply = kernel.shell_stream.socket, kernel.shell_stream  # ipykernel 7 without subshells
    else:
        return None
    if not hasattr(kernel, "shell_main"):
        return None
    return lambda stop: serve_comms(kernel, socket, reply, stop)


def serve_comms(kernel: Any, socket: Any, reply: Any, stop: Callable[[], bool], poll_ms: int = 50) -> None:
    """Hand widget messages arriving on ``socket`` to the kernel's handlers until ``stop()``;
    keep the others, and give them back to the kernel (in order) before returning."""
    import asyncio

    import zmq

    kept: list[Any] = []
    _serving.on = True
    try:
        while not stop():
            if socket.poll(poll_ms, zmq.POLLIN):
                _take(kernel, socket, reply, kept)
        _take(kernel, socket, reply, kept)  # drain: the socket's event must not be lost
    finally:
        _serving.on = False
        if kept:  # the kernel's own path; they queue behind this cell, in order
            _keep(asyncio.get_event_loop().create_task(_give_back(kernel, kept)))


async def _give_back(kernel: Any, kept: list[Any]) -> None:
    """Hand ``kept`` to the kernel in order, behind any request it read before the cell blocked.

    ipykernel may have read the next request (Run All sends them all at once) just before the
    cell's code started; its handler then reaches ``shell_main`` two task hops later
    (``_async_in_context``). Queued at once, the requests kept here went ahead of it: the cell
    after an ``evaluate(...)`` ran after the ones after it. Yielding first lets it queue first.
    """
    import asyncio

    for _ in range(2):
        await asyncio.sleep(0)
    for frames in kept:  # each queues on the kernel's lock now, in the order they arrived
        _keep(asyncio.ensure_future(kernel.shell_main(None, frames)))


def _keep(task: Any) -> None:
    _given_back.add(task)
    task.add_done_callback(_given_back.discard)


def _take(kernel: Any, socket: Any, reply: Any, kept: list[Any]) -> None:
    """Read every message waiting now; serve the widget messages, keep the rest."""
    import zmq

    while True:
        try:
            frames = socket.recv_multipart(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return
        # Widget messages go past held-back requests, as ipykernel's own concurrent path does:
        # a cell run meanwhile must not keep the Approve click from the run that waits for it.
        msg = _comm_message(kernel, frames)
        if msg is None:
            kept.append(frames)
            continue
        idents, message = msg
        ident, parent = kernel._parent_ident["shell"], kernel.get_parent("shell")
        kernel.set_parent(idents, message, channel="shell")
        kernel._publish_status("busy", "shell")
        try:
            kernel.shell_handlers[message["header"]["msg_type"]](reply, idents, message)
        except Exception:  # as ipykernel does: logged, the kernel goes on
            kernel.log.error("Exception in widget message handler:", exc_info=True)
        finally:
            kernel._publish_status("idle", "shell")  # the widget's front end waits for it
            kernel.set_parent(ident, parent, channel="shell")  # output goes to the cell again
            _still_busy(kernel, parent)


def _still_busy(kernel: Any, parent: Any) -> None:
    """Say "busy" again for the cell that still runs: JupyterLab's kernel status takes the last
    status message, whatever its request, so the "idle" that acknowledges a widget message read
    "Idle" while the cell (an ``evaluate(...)``) still ran."""
    if isinstance(parent, dict) and parent.get("header", {}).get("msg_type") == "execute_request":
        kernel._publish_status("busy", "shell", parent=parent)


def _comm_message(kernel: Any, frames: list[Any]) -> tuple[list[Any], dict[str, Any]] | None:
    """``(idents, message)`` when ``frames`` is a widget message, else None."""
    session = kernel.session
    try:
        idents, rest = session.feed_identities(frames, copy=False)
        header = session.deserialize(rest, content=False, copy=False)["header"]
        if header.get("msg_type") not in COMM_TYPES:
            return None
        return idents, session.deserialize(rest, content=True, copy=False)
    except Exception:  # not a message we understand: the kernel's own path decides
        return None


def acknowledge(change: Any = None) -> None:
    """Publish "idle" for the widget message being handled concurrently with a running cell
    (ipykernel >= 7.4 does not), so the front end sends the widget's next update."""
    if getattr(_serving, "on", False):
        return  # serve_comms publishes it
    kernel = current_kernel()
    lock = getattr(kernel, "_main_asyncio_lock", None)
    if kernel is None or lock is None or not lock.locked() or threading.current_thread() is not threading.main_thread():
        return  # no cell runs: ipykernel acknowledges the message itself
    with contextlib.suppress(Exception):
        parent = kernel.get_parent("shell")
        if parent.get("header", {}).get("msg_type") == "comm_msg":
            kernel._publish_status("idle", "shell", parent=parent)
            # and "busy" again: the cell still runs (JupyterLab shows the last status it got;
            # the cell's own request is out of reach from here, the message's serves)
            kernel._publish_status("busy", "shell", parent=parent)
