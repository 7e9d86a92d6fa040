"""Helpers of the OpenAI-compatible providers: the secrets' wrapper and reading server failures.

Shared by :mod:`agentnb.providers.openai` and the other HTTP providers; no SDK import here.

>>> _Secret("sk-0123456789").redact("http://me:pw@h/v1 refused sk-0123456789")
'http://***@h/v1 refused ***'
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agentnb.errors import AuthenticationError, ModelNotFoundError, ProviderError, RateLimitError, ServerError
from agentnb.tracing.redact import Secret as _Secret  # the one wrapper of a provider's secrets

__all__ = ["_Secret", "_cause", "_never_connected", "_server_message", "_without_userinfo", "brief", "classify"]


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


#: Where a server's message turns into its traceback (Python's frames, or the header).
_TRACEBACK = re.compile(r'Traceback \(most recent call last\)|\bFile "[^"]*", line \d+')
#: One entry of a validation error printed as a Python dict (FastAPI's ``RequestValidationError``).
_VALIDATION = re.compile(r"""'loc': \(([^)]*)\), 'msg': (?:'([^']*)'|"([^"]*)")""")
#: A path to a file of the server's: a name with an extension under some folders (not a URL's
#: path: no scheme, host or dot before its first slash; not a route such as /v1/chat/completions).
_PATH = re.compile(r"(?<![\w:/.~-])(?:[A-Za-z]:)?[/\\](?:[\w.+~-]+[/\\])+([\w+~-][\w.+~-]*\.[A-Za-z0-9]{1,8})\b")


def brief(message: str, width: int = 240) -> str:
    """A server's message made short for a trace, an event or an error line: without its
    traceback, a validation error dump as ``loc: msg``, a file path of the server's as its file
    name, on one line of at most ``width`` characters. (The whole message stays on the error.)

    >>> said = "1 validation error: {'loc': ('body', 'response_format', 'type'), 'msg': 'Input should be text'}"
    >>> brief(said + ' File "/srv/app.py", line 3, in create')
    'body.response_format.type: Input should be text'
    >>> brief("Model path does not exist: /home/me/models/smol.gguf (see http://host:8080/v1/models)")
    'Model path does not exist: …/smol.gguf (see http://host:8080/v1/models)'
    """
    cut = _TRACEBACK.search(message)
    text = message[: cut.start()] if cut else message
    found = [(loc, one or two) for loc, one, two in _VALIDATION.findall(text)]
    if found:
        parts = [".".join(p.strip(" '\"") for p in loc.split(",") if p.strip(" '\"")) for loc, _ in found]
        text = "; ".join(f"{loc}: {msg}" if loc else msg for loc, (_, msg) in zip(parts, found, strict=True))
    text = _PATH.sub(r"…/\1", " ".join(text.split()).rstrip(" :-"))
    return text if len(text) <= width else text[: width - 1] + "…"


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
    The server's message is given :func:`brief`; the whole of it is the error's ``detail``.
    """
    whole = _server_message(exc)
    message = brief(whole, 500)
    error = _classified(sdk, exc, streaming, message, where=where, model=model, retries=retries, timeout=timeout)
    if message != " ".join(whole.split()):
        error.detail = whole
    return error


def _classified(
    sdk: Any, exc: Exception, streaming: bool, message: str, *, where: str, model: str, retries: int, timeout: float
) -> ProviderError:
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
