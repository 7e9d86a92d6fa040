"""Non-streamed requests prepared once by the SDK, then sent again with a new body.

``client.post`` builds every request from nothing: a pydantic options model, the merged
headers, an HTTP-library request with its URL parsed, a response object around the body. With
many runs in flight that was most of the client's CPU: 0.9 of 1.5 ms per model call at
concurrency 100 (benchmarks/eval_throughput.py, profiled with py-spy). For agentnb's own client
(aiohttp connections, no ``http_client`` of the caller's) with a fixed key (no key provider,
workload identity, custom auth or provider runtime of the SDK's), every chat request of a
provider carries the same URL, headers and timeouts; only the body changes. So:

* the first request per client and options goes through ``client.post``, as before;
* after it succeeded, the SDK builds the request once more (``_build_request``, not sent) and its
  URL, headers and timeouts are kept; later requests send the SDK's JSON of their body with those
  headers straight on the same aiohttp connections;
* what comes back is read as the SDK reads it: a 2xx is the body's bytes; a 4xx or 5xx is the
  SDK's own ``APIStatusError`` subclass (``client._make_status_error_from_response``, so
  ``RateLimitError``, ``retry-after`` headers and the message are the same); a timeout is
  ``APITimeoutError`` and a failed connection ``APIConnectionError``, as the SDK raises them;
* anything else (a redirect, a compressed body, a request with headers or query of its own)
  goes through ``client.post``.

tests/test_prepared_posting.py checks that both paths put the same bytes on the wire and raise
the same errors.

>>> prepared_for(object()) is None  # not an SDK client agentnb made: always client.post
True
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["PreparedPost", "post", "prepared_for"]

#: Attributes of the SDK client under which a key, a token or a request changes per call.
_DYNAMIC = ("_provider_runtime", "_api_key_provider", "workload_identity", "_workload_identity_auth")

_posters: weakref.WeakKeyDictionary[Any, PreparedPost | None] = weakref.WeakKeyDictionary()


async def post(client: Any, url: str, body: dict[str, Any], options: dict[str, Any]) -> Any:
    """``client.post(url, body=body, cast_to=bytes, options=options)``, on a prepared request where one can be."""
    try:
        poster = _posters[client]
    except KeyError:
        poster = _posters[client] = prepared_for(client)
    if poster is None or (options and options.keys() != {"timeout"}):
        return await client.post(url, body=body, cast_to=bytes, options=options)
    return await poster.post(client, url, body, options)


def prepared_for(client: Any) -> PreparedPost | None:
    """A :class:`PreparedPost` for ``client``, or None when its requests may differ call to call."""
    from agentnb.providers import aiohttp_transport

    try:
        http = client._client
        transport = http._transport
    except AttributeError:
        return None
    if not aiohttp_transport.is_transport(transport) or getattr(client, "_idempotency_header", None):
        return None
    if client.custom_auth is not None or callable(getattr(client, "api_key", None)):
        return None
    if any(getattr(client, name, None) is not None for name in _DYNAMIC):
        return None
    try:
        from openai._utils._json import openapi_dumps  # the SDK's JSON of a body (openai >= 2)
    except ImportError:
        return None
    return PreparedPost(http, transport, openapi_dumps)


class PreparedPost:
    """The prepared requests of one SDK client (one per URL and timeout). It holds no reference
    to the client (the client is the key of a weak mapping to it)."""

    def __init__(self, http: Any, transport: Any, dumps: Any) -> None:
        import openai

        from agentnb.providers.aiohttp_transport import _http_module

        self.http = http
        self.transport = transport
        self.sdk = openai
        self.lib = _http_module(openai)  # the HTTP library: its exceptions, Request, Response
        self.dumps = dumps
        self._prepared: dict[tuple[str, Any], tuple[list[tuple[str, str]], Any] | None] = {}

    async def post(self, client: Any, url: str, body: dict[str, Any], options: dict[str, Any]) -> Any:
        key = (url, options.get("timeout"))
        try:
            prepared = self._prepared[key]
        except KeyError:  # the first one: the SDK's whole path, then its request kept
            result = await client.post(url, body=body, cast_to=bytes, options=options)
            try:
                self._prepared[key] = await self._prepare(client, url, body, options)
            except Exception:  # an SDK whose requests cannot be prepared this way: client.post always
                self._prepared[key] = None
            return result
        if prepared is None:
            return await client.post(url, body=body, cast_to=bytes, options=options)
        headers, timeout = prepared
        data = self.dumps(body)
        sdk, http = self.sdk, self.lib
        try:
            status, raw, content = await self.transport.post(
                url, [*headers, ("Content-Length", str(len(data)))], data, timeout
            )
        except http.TimeoutException as exc:
            raise sdk.APITimeoutError(request=self._request(url, headers, data)) from exc
        except http.TransportError as exc:
            raise sdk.APIConnectionError(request=self._request(url, headers, data)) from exc
        if 200 <= status < 300 and not _encoded(raw):
            return content
        if 300 <= status < 400:  # a redirect: the HTTP client follows it, as for any request
            return await client.post(url, body=body, cast_to=bytes, options=options)
        response = http.Response(
            status_code=status,
            headers=list(raw),
            stream=http.ByteStream(content),
            request=self._request(url, headers, data),
        )
        await response.aread()  # decoded as the HTTP client decodes it (gzip, br, ...)
        if 200 <= status < 300:
            return response.content
        raise client._make_status_error_from_response(response) from None

    async def _prepare(self, client: Any, url: str, body: dict[str, Any], options: dict[str, Any]) -> Any:
        """The request the SDK builds for this URL and options: headers and timeouts; None when
        the HTTP client would send it elsewhere (a proxy from the environment)."""
        from openai._models import FinalRequestOptions

        opts = FinalRequestOptions.construct(method="post", url=url, json_data=body, **options)
        opts = await client._prepare_options(opts)
        request = client._build_request(opts)
        await client._prepare_request(request)
        pick = getattr(self.http, "_transport_for_url", None)  # where the HTTP client would send it
        if pick is None or str(request.url) != url or pick(request.url) is not self.transport:
            return None
        headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw if k.lower() != b"content-length"
        ]
        return headers, self.transport.timeout(request.extensions.get("timeout", {}))

    def _request(self, url: str, headers: list[tuple[str, str]], data: bytes) -> Any:
        """The HTTP library's request, for an error to carry (as the SDK's errors do)."""
        return self.lib.Request("POST", url, headers=headers, content=data)


def _encoded(raw: Any) -> bool:
    return any(k.lower() == b"content-encoding" and v.strip().lower() not in (b"", b"identity") for k, v in raw)
