"""One background thread with its own event loop, where every MCP session lives.

An MCP session is bound to the event loop that opened it (its streams, task groups and the
server process's pipes). ``Agent.run`` drives each run on a fresh loop (in a worker thread
inside Jupyter), and ``arun`` runs on the caller's loop, so sessions cannot live on the
caller's loop: they live here, and calls are bridged in with
:func:`asyncio.run_coroutine_threadsafe`. The thread is a daemon; at interpreter exit (and so
at kernel shutdown) an ``atexit`` hook closes every open server first, so no server process
outlives the Python that started it.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Closable(Protocol):
    """What the runtime keeps track of: an open server it closes at exit (an MCPServer)."""

    def close(self, timeout: float = 10.0) -> None: ...


_lock = threading.Lock()
_runtime: Runtime | None = None
#: Open servers, closed at exit. Weak: a server nobody holds is closed by its finaliser.
_open: weakref.WeakSet[Closable] = weakref.WeakSet()


class Runtime:
    """The MCP thread and its loop."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, name="agentnb-mcp", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the MCP loop; cancelling the future cancels the task."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def on_own_thread(self) -> bool:
        return threading.current_thread() is self.thread


def runtime() -> Runtime:
    """The shared runtime, started on first use."""
    global _runtime
    with _lock:
        if _runtime is None:
            _runtime = Runtime()
        return _runtime


def register(server: Closable) -> None:
    _open.add(server)


def unregister(server: Closable) -> None:
    _open.discard(server)


def open_servers() -> list[Closable]:
    """Every server whose session is open now."""
    return list(_open)


def close_all(timeout: float = 10.0) -> None:
    """Close every open server (their processes end); used at interpreter exit."""
    for server in list(_open):
        try:
            server.close(timeout=timeout)
        except Exception:  # at exit, one stubborn server must not keep the others open
            pass


atexit.register(close_all)
