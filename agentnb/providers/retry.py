"""The one retry layer of the HTTP providers: rate limits, server errors, dropped connections.

The OpenAI (Chat Completions and Responses) and Anthropic providers send each request through
:func:`send_with_retries`; their SDK clients are built with ``max_retries=0``, so no request is
ever retried by two layers. What is retried, at most ``retries`` times and within
:attr:`RetryPolicy.total` seconds of waiting:

* HTTP 429, honouring the server's ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP
  date) when it sends one;
* HTTP 5xx (and 408, 409: the request timed out or collided on the server);
* a connection that broke or could not be made.

A response that says ``x-should-retry: false`` is not retried, and neither is a request that
*timed out*: a server that took the whole timeout is not asked again (with retries off, a
timeout is an error at once). The wait grows exponentially (``initial * factor ** n``, at most
``max_delay``) with ±``jitter`` so that many clients do not retry in step.

Each retry is a :class:`~agentnb.events.RequestRetried` event ("rate limited, retrying in
2.0 s"). In a run it comes out of the event stream as the wait begins (:mod:`agentnb.providers.live`);
called outside a run, the provider attaches it to its completion (``Completion.events``).

>>> policy = RetryPolicy(initial=1.0, factor=2.0, jitter=0.0)
>>> [policy.backoff(n) for n in range(4)]
[1.0, 2.0, 4.0, 8.0]
>>> retry_after({"retry-after-ms": "1500"}), retry_after({"Retry-After": "2"}), retry_after({})
(1.5, 2.0, None)
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from agentnb.events import RequestRetried
from agentnb.providers.live import LIVE_NOTES

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long to wait between attempts, and for how long at most in all."""

    initial: float = 0.5
    factor: float = 2.0
    max_delay: float = 30.0
    #: Seconds of waiting, all retries of one request together; a longer wait is not made.
    total: float = 60.0
    jitter: float = 0.2

    def backoff(self, attempt: int) -> float:
        """The wait before retry ``attempt`` (0 first) when the server did not say."""
        base = min(self.max_delay, self.initial * self.factor**attempt)
        if self.jitter:
            base *= 1 + random.uniform(-self.jitter, self.jitter)
        return max(0.0, base)


DEFAULT_POLICY = RetryPolicy()


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """The server's requested wait in seconds (``retry-after-ms``, else ``Retry-After``), or None."""
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_reason(exc: BaseException) -> tuple[str, int | None, float | None] | None:
    """``(reason, status, server's wait)`` when ``exc`` (an SDK error) is worth retrying, else None."""
    name = type(exc).__name__
    if "Timeout" in name:
        return None  # the server had the whole timeout: not asked again
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    status = getattr(exc, "status_code", None)
    if headers is not None and str(headers.get("x-should-retry", "")).lower() == "false":
        return None
    if isinstance(status, int):
        if status == 429:
            return "rate limited", status, retry_after(headers)
        if status >= 500 or status in (408, 409):
            return f"server error {status}", status, retry_after(headers)
        return None
    if name == "APIConnectionError" or isinstance(exc, (ConnectionError, OSError)):
        return "connection failed", None, None
    return None


async def send_with_retries(
    send: Callable[[], Awaitable[T]],
    *,
    retries: int,
    provider: str,
    notes: list[Any],
    policy: RetryPolicy = DEFAULT_POLICY,
    refused: Callable[[Exception], bool] | None = None,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> T:
    """``await send()``, again after a retryable failure; each retry appends a
    :class:`~agentnb.events.RequestRetried` to ``notes``. The last failure is raised, and so is
    at once any failure ``refused(exc)`` says is a refusal (not worth sending again)."""
    waited = 0.0
    attempt = 0
    while True:
        try:
            return await send()
        except Exception as exc:
            if attempt >= retries:
                _keep(exc, notes)
                raise
            why = retry_reason(exc)
            if why is None or (refused is not None and refused(exc)):
                _keep(exc, notes)
                raise
            reason, status, asked = why
            delay = asked if asked is not None else policy.backoff(attempt)
            if waited + delay > policy.total:
                _keep(exc, notes)
                raise  # past the time budget: fail now rather than wait in vain
        attempt += 1
        waited += delay
        note = RequestRetried(0, provider, attempt, retries, reason, round(delay, 3), status)
        live = LIVE_NOTES.get()
        if live is None:
            notes.append(note)  # reported with the completion (or the failure)
        else:
            live(note)  # reported now, in the run's events, before the wait
        await sleep(delay)


def with_events(completion: Any, notes: list[Any]) -> Any:
    """``completion`` with the retry events first among its events (unchanged without any)."""
    if not notes:
        return completion
    import dataclasses

    return dataclasses.replace(completion, events=(*notes, *completion.events))


async def send(provider: Any, make: Callable[[], Awaitable[T]], notes: list[Any]) -> T:
    """:func:`send_with_retries` with ``provider``'s ``max_retries`` and name."""
    return await send_with_retries(make, retries=provider.max_retries, provider=provider.name, notes=notes)


def _keep(exc: Exception, notes: list[Any]) -> None:
    """Remember the retries on the failure that ends them (see :func:`carry`)."""
    if notes:
        try:
            exc._agentnb_retries = tuple(notes)  # type: ignore[attr-defined]
        except AttributeError:  # an exception type without a __dict__
            pass


def carry(sdk_error: BaseException, error: Any) -> Any:
    """``error`` (the provider's typed error) with the retries ``sdk_error`` took as its ``events``."""
    notes = getattr(sdk_error, "_agentnb_retries", ())
    if notes:
        error.events = notes
    return error
