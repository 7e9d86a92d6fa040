"""How an :class:`~agentnb.providers.openai.OpenAIProvider` reports a failure: the typed error of
:mod:`agentnb.errors` for an ``openai`` SDK exception, with the server's own message and never the
key (:func:`~agentnb.providers.openai.errors.classify`), and a body that is not a chat completion.

>>> from agentnb.providers.openai import OpenAIProvider
>>> p = OpenAIProvider("m", api_key="sk-secret-key-000", base_url="http://127.0.0.1:1/v1")
>>> str(p._garbage("an HTML page"))
"http://127.0.0.1:1/v1 sent an HTML page (is base_url the server's OpenAI-compatible /v1 URL?)"
"""

from __future__ import annotations

from typing import Any

from agentnb.errors import ProviderError
from agentnb.providers import retry
from agentnb.providers.openai.errors import _server_message, classify
from agentnb.providers.openai.route import rejects_tools
from agentnb.providers.openai.sdk import _sdk


class FailureReporting:
    """A mixin of :class:`~agentnb.providers.openai.OpenAIProvider`: its errors (it uses the
    provider's ``base_url``, ``model``, ``max_retries``, ``timeout``, ``_key`` and ``_route``)."""

    base_url: str | None
    model: str
    max_retries: int
    timeout: float
    _key: Any
    _route: Any

    def _garbage(self, what: str) -> ProviderError:
        where = self.base_url or "the OpenAI API"
        hint = " (is base_url the server's OpenAI-compatible /v1 URL?)" if self.base_url else ""
        return ProviderError(self._key.redact(f"{where} sent {what}{hint}"))

    def _message(self, exc: Exception) -> str:
        return _server_message(exc)

    def _error(self, exc: Exception, *, streaming: bool = False) -> ProviderError:
        """A typed agentnb error with the server's own message (and never the key)."""
        error = self._classify(exc, streaming)
        text = self._key.redact(str(error))
        if self._route.tool_calling == "native" and rejects_tools(text):
            text += " (this model or server takes no tools: use tool_calling='untooled', or 'auto')"
        detail = self._key.redact(error.detail)
        if text != str(error):
            error = type(error)(text, status=error.status)
        error.detail = detail
        return retry.carry(exc, error)

    def _classify(self, exc: Exception, streaming: bool) -> ProviderError:
        where = self.base_url or "the OpenAI API"
        return classify(
            _sdk(), exc, streaming, where=where, model=self.model, retries=self.max_retries, timeout=self.timeout
        )
