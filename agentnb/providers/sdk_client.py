"""One SDK client per event loop, for the providers built on an official async SDK.

An HTTP connection pool belongs to the event loop that opened it, and ``Agent.run`` drives
each run on a fresh loop outside Jupyter, so a new loop gets a new client.

>>> made = []
>>> clients = LoopBoundClient(lambda: made.append(object()) or made[-1])
>>> clients.get() is clients.get(), len(made)
(True, 1)
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any


class LoopBoundClient:
    """Makes a client with ``make`` on first use, and again whenever the running loop changes."""

    __slots__ = ("_make", "_client", "_loop")

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._client: Any = None
        self._loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def get(self) -> Any:
        """The client for the running event loop (or for none, outside one)."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if self._client is None or (self._loop is not None and self._loop() is not loop):
            self._client = self._make()
            self._loop = weakref.ref(loop) if loop is not None else None
        return self._client

    def __getstate__(self) -> tuple[Any, ...]:
        # A copy (pickled to a Ray worker) travels without the live client: it holds locks and
        # sockets, and belongs to this process's loop. The copy makes its own on first use.
        return (self._make,)

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self._make, self._client, self._loop = state[0], None, None

    async def aclose(self) -> None:
        """Close the current client's connections; the next :meth:`get` makes a new one."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def sdk_options(sdk: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The caller's client options, with the SDK's plain HTTP client unless one was given.

    The SDK's own default HTTP client schedules its close on whatever loop is running when it
    is garbage-collected: a client left behind by a finished ``Agent.run`` would then fail
    noisily ("Event loop is closed") inside the next run. The plain one does not.
    """
    return {"http_client": sdk.DefaultAsyncHttpxClient(), **options} if "http_client" not in options else dict(options)


def option_secrets(options: dict[str, Any]) -> dict[str, Any]:
    """The secrets among a client's options, as :class:`~agentnb.tracing.redact.Secret` takes them:
    the default headers and query parameters, and an ``auth_token``.

    >>> option_secrets({"default_headers": {"X-Key": "abc"}, "auth_token": "t", "timeout": 3})
    {'headers': {'X-Key': 'abc'}, 'query': None, 'more': ['t']}
    """
    token = options.get("auth_token")
    return {
        "headers": options.get("default_headers"),
        "query": options.get("default_query"),
        "more": [token] if isinstance(token, str) else [],
    }
