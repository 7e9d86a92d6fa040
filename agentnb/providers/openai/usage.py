"""Token usage where the server reports none.

llama-cpp-python's server gives no usage on streams (it ignores ``stream_options``), and a
call steered token by token (:mod:`.steer`) is several streamed ``/v1/completions``
requests. Budgets and cost read :class:`~agentnb.messages.Usage`, so those replies are
counted here: by the server's own tokenizer where it has one (llama-cpp-python's
``/extras/tokenize/count``), else by the tokens the stream carried (one per chunk or
log-probability position) and, for the prompt, characters at the rate the server counted them.

Only llama-cpp-python has that endpoint, so only a server known to be llama-cpp-python is asked:
a ``llamacpp:`` provider, or a server whose model list says so (llama-cpp-python lists its models
as ``owned_by: "me"``; one ``GET /v1/models``, once per provider). The prompt goes through the
provider's own SDK client (its connections, its key handling), never a new HTTP client.

>>> root_url("http://127.0.0.1:8000/v1")
'http://127.0.0.1:8000'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentnb.messages import Usage


def root_url(base_url: str) -> str:
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


class TokenCounter:
    """Per provider: whether its server has llama-cpp-python's tokenizer endpoint (and it works)."""

    def __init__(self) -> None:
        self.works: bool | None = None

    async def _has_tokenizer(self, provider: Any) -> bool:
        server = getattr(provider, "server", None)
        if server is not None:  # a named server: only llama-cpp-python has the endpoint
            return bool(server == "llamacpp")
        try:
            listed = await provider.client.with_options(max_retries=0).models.list()
            return any(getattr(m, "owned_by", None) == "me" for m in listed.data)
        except Exception:  # no model list: not known to be llama-cpp-python
            return False

    async def count(self, provider: Any, text: str) -> int | None:
        """The server tokenizer's count of ``text``; None where the server has no tokenizer."""
        if not text:
            return 0
        if self.works is False or not provider.base_url:
            return None
        if self.works is None and not await self._has_tokenizer(provider):
            self.works = False
            return None
        import httpx

        try:
            reply = await provider.client.with_options(max_retries=0).post(
                root_url(provider.base_url) + "/extras/tokenize/count",
                body={"input": text, "model": provider.model},
                cast_to=httpx.Response,
            )
            count = reply.json().get("count") if reply.status_code == 200 else None
        except Exception:  # (the SDK's errors, a body that is not JSON)
            count = None
        if not isinstance(count, int) or count < 0:
            self.works = False
            return None
        self.works = True
        return count

    async def usage(self, provider: Any, prompts: Sequence[str], output: str, streamed: int) -> Usage:
        """Usage for requests with these ``prompts`` that wrote ``output`` over ``streamed`` tokens."""
        counted = [await self.count(provider, p) for p in prompts]
        if any(c is None for c in counted):
            per = _chars_per_token(provider)
            counted = [max(1, round(len(p) / per)) for p in prompts]
        out = await self.count(provider, output) if output else None
        return Usage(sum(c or 0 for c in counted), out if out is not None else streamed)


def chat_prompt(provider: Any, messages: Sequence[dict[str, Any]]) -> str:
    """The text a chat request's prompt is about (in the server's template when it is known)."""
    template = getattr(getattr(provider, "_steering", None), "template", None)
    if template is not None:
        try:
            return str(template.render(list(messages)))
        except Exception:  # a message the template cannot render: count the contents
            pass
    return "\n".join(str(m.get("content") or "") for m in messages)


def _chars_per_token(provider: Any) -> float:
    cost = getattr(provider, "_cost", None)
    rate = getattr(getattr(cost, "_chars", None), "per_token", lambda: None)()
    return float(rate or 3.5)
