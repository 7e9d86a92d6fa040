"""Helpers of the OpenAI-compatible providers: the secrets' wrapper and reading server failures.

Shared by :mod:`agentnb.providers.openai` and the other HTTP providers; no SDK import here.

>>> _Secret("sk-0123456789").redact("http://me:pw@h/v1 refused sk-0123456789")
'http://***@h/v1 refused ***'
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentnb.errors import AuthenticationError, ModelNotFoundError, ProviderError, RateLimitError, ServerError
from agentnb.tracing.redact import Secret as _Secret  # the one wrapper of a provider's secrets

__all__ = ["_Secret", "_cause", "_never_connected", "_server_message", "_without_userinfo", "classify"]


def _server_message(exc: Exception) -> str:
    """The server's own words in an SDK error: OpenAI's ``{"error": {"message"}}``, a bare
    ``{"error": "..."}``, FastAPI's ``{"detail": ...}``, or the body as text.

    >>> class E(Exception):
    ...     body = {"detail": [{"loc": ["body", "tools"], "msg": "Extra inputs are not permitted"}]}
    >>> _server_message(E())
    'body.tools: Extra inputs are not permitted'
    """
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
        detail = inner.get("detail") if isinstance(inner, dict) else None
        if isinstance(detail, str) and detail.strip():
            return detail.strip()
        if isinstance(detail, list) and detail:
            return "; ".join(_detail_line(d) for d in detail[:5])
    if isinstance(body, str) and body.strip():
        return body.strip()
    return str(getattr(exc, "message", None) or exc)


def _detail_line(item: Any) -> str:
    """One entry of FastAPI's validation ``detail``: ``loc: msg``."""
    if not isinstance(item, dict):
        return str(item)[:200]
    loc = ".".join(str(part) for part in item.get("loc") or ())
    msg = str(item.get("msg", ""))[:200]
    return f"{loc}: {msg}" if loc else msg


def _never_connected(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) is a failure to connect, not a broken response."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if type(seen).__name__ in (
            "ConnectError",
            "ConnectTimeout",
            "ConnectionRefusedError",
            "gaierror",
            "UnsupportedProtocol",
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _cause(exc: BaseException) -> str:
    inner = exc.__cause__ or exc.__context__
    return f"{type(inner).__name__}: {inner}" if inner is not None else str(exc)


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def classify(
    sdk: Any, exc: Exception, streaming: bool, *, where: str, model: str, retries: int, timeout: float
) -> ProviderError:
    """The typed agentnb error for an ``openai`` SDK exception, with the server's own message.

    ``where``: the server (its base URL, or "the OpenAI API"); ``streaming``: chunks had arrived.
    """
    message = _server_message(exc)
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status in (401, 403):
            return AuthenticationError(f"{where} rejected the API key ({status}): {message}", status=status)
        if status == 404:
            hint = "check the model name, and that base_url ends in /v1"
            return ModelNotFoundError(f"model {model!r} not found at {where} (404): {message} ({hint})", status=status)
        retried = f"after {retries} retries ({status}): {message}"
        if status == 429:
            return RateLimitError(f"rate limited by {where} {retried}", status=status)
        if status >= 500:
            return ServerError(f"{where} failed {retried}", status=status)
        return ProviderError(f"{where} refused the request ({status}): {message}", status=status)
    if isinstance(exc, sdk.APITimeoutError):
        return ProviderError(f"{where} did not answer within {timeout:g} s")
    if isinstance(exc, sdk.APIConnectionError):
        if streaming:  # chunks had arrived
            return ProviderError(f"the connection to {where} broke mid-stream: {_cause(exc)}")
        if _never_connected(exc):
            return ProviderError(f"could not connect to {where} ({_cause(exc)}); is the server running?")
        return ProviderError(f"the connection to {where} broke before the response was complete: {_cause(exc)}")
    return ProviderError(f"{where}: {message}")
