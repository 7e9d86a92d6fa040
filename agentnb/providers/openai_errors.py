"""Helpers of the OpenAI-compatible providers: the key wrapper and reading server failures.

Shared by :mod:`agentnb.providers.openai` and the other HTTP providers; no SDK import here.

>>> _Secret("sk-0123456789").redact("key sk-0123456789 refused")
'key *** refused'
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["_Secret", "_cause", "_never_connected", "_server_message", "_without_userinfo"]


class _Secret:
    """Holds the API key so that no repr, ``vars()`` dump or log line can show it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<secret>"

    def redact(self, text: str) -> str:
        # Short strings are no secret worth hiding, and replacing them would garble the text.
        return text.replace(self.value, "***") if len(self.value) >= 8 else text


def _server_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    if isinstance(body, str) and body.strip():
        return body.strip()
    return str(getattr(exc, "message", None) or exc)


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
