"""The ``openai`` SDK's HTTP client on aiohttp connections: the SDK builds, authenticates and
reads every request as always; only the sockets underneath change.

Why: with many runs in flight the SDK's default pool (``httpcore``) scans every connection for
each request. Measured here (benchmarks/eval_throughput.py, 100 ms server, 3 calls per run,
``client.post`` as :class:`~agentnb.providers.openai.OpenAIProvider` sends): 1.07 ms of client
CPU per call at concurrency 100 and 3.06 ms at 1,000 on the default pool, 0.58 and 0.65 ms on
aiohttp. The SDK ships a similar adapter (``openai.DefaultAioHttpClient``), but it reports a
refused connection as a connect *timeout* ("did not answer within 120 s", never retried); this
one maps aiohttp's failures onto the HTTP library's own exceptions the way its pool would:
refused or unresolvable → ``ConnectError``, a dropped connection → ``RemoteProtocolError`` or
``ReadError`` (retried by :mod:`agentnb.providers.retry`), a real timeout → the matching
``*Timeout``.

Used when aiohttp is installed (the ``openai`` extra installs it) and the caller gave no
``http_client`` of their own; proxies from the environment still go through the HTTP library's
own proxy transports. The connections close when the client is closed, or, quietly, when the
transport is garbage-collected (e.g. a run's event loop ended).

>>> import openai
>>> client = http_client(openai)
>>> type(client._transport).__name__ if client is not None else "AiohttpTransport"
'AiohttpTransport'
"""

from __future__ import annotations

import asyncio
import importlib
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any

__all__ = ["close_on", "http_client", "with_http_client"]

#: Connections per client at most (the SDK's own default limit).
MAX_CONNECTIONS = 1000
#: Seconds an idle connection is kept (httpx's default keep-alive expiry).
KEEPALIVE = 5.0

_classes: dict[str, type] = {}
#: Every live transport, so that a loop about to close can close its connections first.
_live: weakref.WeakSet[Any] = weakref.WeakSet()


def http_client(sdk: Any) -> Any | None:
    """``sdk.DefaultAsyncHttpxClient`` on an aiohttp transport; None without aiohttp."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return None
    http = _http_module(sdk)
    return sdk.DefaultAsyncHttpxClient(transport=_transport_class(http)())


def with_http_client(sdk: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The SDK client's options with this transport's ``http_client``, unless they name their own."""
    if "http_client" in options:
        return options
    http = http_client(sdk)
    return options if http is None else {**options, "http_client": http}


def _http_module(sdk: Any) -> Any:
    """The HTTP library the SDK is built on (``httpx2`` for openai 3, ``httpx`` before)."""
    for base in sdk.DefaultAsyncHttpxClient.__mro__:
        if base.__name__ == "AsyncClient":
            return importlib.import_module(base.__module__.split(".")[0])
    import httpx

    return httpx


async def close_on(loop: asyncio.AbstractEventLoop) -> None:
    """Close the connections opened on ``loop`` (``Agent.run`` calls this before its loop ends)."""
    for transport in list(_live):
        session = transport._session
        if session is not None and session._loop is loop:
            await transport.aclose()


def _ssl_context(http: Any) -> Any:
    """The HTTP library's own default TLS context (its CA bundle, ``SSL_CERT_FILE``), made once:
    HTTPS is verified against the same certificates as on the SDK's default pool."""
    if "ssl" not in _ssl:
        make = getattr(http, "create_ssl_context", None)
        _ssl["ssl"] = make() if make is not None else True  # True: aiohttp's default verification
    return _ssl["ssl"]


_ssl: dict[str, Any] = {}


def _close_connector(connector: Any) -> None:
    # Synchronous and quiet: closes the sockets on a live loop, only marks them closed on a
    # finished one (the sockets then close with their transports). The session then counts as
    # closed too, so neither warns "Unclosed client session / connector" when collected.
    connector._close()


def _transport_class(http: Any) -> type:
    name = http.__name__
    if name not in _classes:
        _classes[name] = _make_transport_class(http)
    return _classes[name]


def _error_mapper(http: Any) -> Callable[[BaseException], BaseException]:
    """The function that turns an aiohttp exception into the SDK's HTTP library's."""
    import aiohttp

    def mapped(exc: BaseException) -> BaseException:
        """The HTTP library's exception for an aiohttp one (timeouts first: they are OSErrors too)."""
        text = str(exc) or type(exc).__name__
        if isinstance(exc, getattr(aiohttp, "ConnectionTimeoutError", ())):
            return http.ConnectTimeout(text)
        if isinstance(exc, (aiohttp.ServerTimeoutError, asyncio.TimeoutError)):
            return http.ReadTimeout(text)
        if isinstance(exc, aiohttp.ClientConnectorError):  # refused, DNS, TLS handshake
            return http.ConnectError(text)
        if isinstance(exc, (aiohttp.InvalidURL, getattr(aiohttp, "NonHttpUrlClientError", ()))):
            return http.UnsupportedProtocol(text)
        if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientResponseError)):
            return http.RemoteProtocolError(text)
        if isinstance(exc, (aiohttp.ClientPayloadError, aiohttp.ClientOSError, ConnectionError)):
            return http.ReadError(text)
        return http.TransportError(text)

    return mapped


def _make_transport_class(http: Any) -> type:
    import aiohttp

    mapped = _error_mapper(http)
    errors = (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError)

    class ResponseStream(http.AsyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, response: Any) -> None:
            self._response = response

        async def __aiter__(self) -> AsyncIterator[bytes]:
            try:
                async for chunk in self._response.content.iter_any():
                    yield chunk
            except errors as exc:
                raise mapped(exc) from exc

        async def aclose(self) -> None:
            self._response.release()

    class AiohttpTransport(http.AsyncBaseTransport):  # type: ignore[misc, name-defined]
        """An ``AsyncBaseTransport`` of the SDK's HTTP library on one ``aiohttp.ClientSession``."""

        def __init__(self) -> None:
            self._session: Any = None
            _live.add(self)

        def _live_session(self) -> Any:
            session = self._session
            if session is None or session.closed or session._loop is not asyncio.get_running_loop():
                if session is not None and not session.closed:
                    _close_connector(session.connector)  # it belongs to another loop
                connector = aiohttp.TCPConnector(
                    limit=MAX_CONNECTIONS, keepalive_timeout=KEEPALIVE, ssl=_ssl_context(http)
                )
                session = aiohttp.ClientSession(
                    connector=connector, cookie_jar=aiohttp.DummyCookieJar(), auto_decompress=False
                )
                weakref.finalize(self, _close_connector, connector)
                self._session = session
            return session

        async def handle_async_request(self, request: Any) -> Any:
            timeout = request.extensions.get("timeout", {})
            try:
                body = await request.aread()
                response = await self._live_session().request(
                    request.method,
                    str(request.url),
                    headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw],
                    data=body or None,
                    allow_redirects=False,
                    skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
                    timeout=aiohttp.ClientTimeout(
                        total=None,
                        connect=timeout.get("pool"),
                        sock_connect=timeout.get("connect"),
                        sock_read=timeout.get("read"),
                    ),
                )
            except errors as exc:
                raise mapped(exc) from exc
            return http.Response(
                status_code=response.status,
                headers=list(response.raw_headers),
                stream=ResponseStream(response),
                request=request,
                extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode()},
            )

        async def aclose(self) -> None:
            if self._session is not None:
                await self._session.close()
                self._session = None

    return AiohttpTransport
