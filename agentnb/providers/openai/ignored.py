"""Whether a server silently drops ``tools`` (the ``auto`` route's second way to switch).

Some servers take ``tools`` without an error and never show them to the model:
llama-cpp-python's default chat formats, or any server whose model's chat template has no
place for tools (``transformers serve`` with such a model). The model then answers in prose
and never calls a tool, and nothing tells ``tool_calling="auto"`` to switch. One measurement
tells: the prompt a server counts with the tools and without them. Equal counts mean the
tools never reached the prompt.

The check runs once per provider, *before* its first request with tools (:func:`ahead`): two
one-token requests, with the tools and without. A server that drops them is then never sent
a request with tools: the step goes untooled at once, and what the two requests took counts
against the step's guidance budget. (Checked after the reply instead, a server that ignores
the tools first writes a whole reply in prose: 21 s of it, against llama-cpp-python, before the
guidance could start.) The named servers that never drop tools silently (:data:`SHOWN_OR_REFUSED`)
are checked the old way, on the first reply that calls no tool (a reply with a call shows the
tools work): one extra request of one token without the tools, and, where the reply carried
no token counts, one with them. So is a server the check ahead could not read (no counts).

>>> same_prompt(412, 412), same_prompt(412, 530), same_prompt(None, 412)
(True, False, None)
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from agentnb.events import RouteSwitched
from agentnb.providers.base import Completion

#: What a probe may keep of the original request (the rest: sampling, streaming, tools).
_KEPT = ("model", "messages", "extra_body", "extra_headers", "extra_query")
#: Named servers (``ollama:``...) that refuse ``tools`` with an error or put them in the
#: prompt, never drop them silently (docs/native.md): no check before their first reply.
SHOWN_OR_REFUSED = frozenset({"ollama", "vllm", "sglang"})


def same_prompt(with_tools: int | None, without_tools: int | None) -> bool | None:
    """Whether the two prompt sizes are the same (None: a size is unknown, so nothing is known)."""
    if not with_tools or not without_tools:
        return None
    return with_tools == without_tools


def reason(tokens: int) -> str:
    """The RouteSwitched reason for a server that dropped the tools."""
    return (
        f"the server ignored `tools`: the prompt was {tokens} tokens with them and without them, "
        "so the model never saw them"
    )


async def prompt_tokens(client: Any, kwargs: dict[str, Any], *, tools: bool) -> int | None:
    """The server's prompt size for ``kwargs`` (with or without its tools), from a one-token
    reply; None when the server does not say or the request fails (a probe is never retried)."""
    try:
        return await _counted(client, kwargs, tools=tools)
    except Exception:
        return None


async def _counted(client: Any, kwargs: dict[str, Any], *, tools: bool) -> int | None:
    """:func:`prompt_tokens`, raising what the request raised."""
    probe = {k: kwargs[k] for k in _KEPT if k in kwargs}
    if tools:
        probe.update((k, kwargs[k]) for k in ("tools", "tool_choice") if k in kwargs)
    response = await client.with_options(max_retries=0).chat.completions.create(**probe, max_tokens=1)
    usage = getattr(response, "usage", None)
    count = getattr(usage, "prompt_tokens", None)
    return count if isinstance(count, int) and count > 0 else None


async def ignored_tools(client: Any, kwargs: dict[str, Any], with_tools: int | None) -> int | None:
    """The prompt size when the server left ``kwargs``' tools out of the prompt, else None.

    ``with_tools`` is the size the server reported for the request itself (0 or None when it
    reported none: then a one-token probe with the tools measures it).
    """
    if not with_tools:
        with_tools = await prompt_tokens(client, kwargs, tools=True)
        if with_tools is None:
            return None
    without = await prompt_tokens(client, kwargs, tools=False)
    return with_tools if same_prompt(with_tools, without) else None


def pending(route: Any, request: Any, base_url: str | None) -> bool:
    """Whether this reply is the one to check: ``auto`` still on the native route, tools sent,
    a server of the user's own (OpenAI's API takes tools), not checked before."""
    return bool(request.tools) and base_url is not None and route.can_switch() and not route.tools_checked


async def check(provider: Any, kwargs: dict[str, Any], called: bool, tokens: int) -> RouteSwitched | None:
    """The switch to untooled when the server dropped the tools of ``kwargs`` (``tokens``: the
    prompt size it reported for them); checked once per provider."""
    route = provider._route
    route.tools_checked = True
    if called:
        return None
    size = await ignored_tools(provider.client, kwargs, tokens)
    return None if size is None else route.switch(provider.name, reason(size))


async def ahead(provider: Any, request: Any) -> RouteSwitched | None:
    """Before the first request with tools: the switch to untooled when the server would drop
    them (then ``request`` goes untooled). The probes' time counts against the step's budget.

    Nothing is sent where :func:`pending` says no, for a named server in :data:`SHOWN_OR_REFUSED`,
    or once checked. A probe that fails or reads no counts leaves the check to the reply.
    """
    route = provider._route
    if not pending(route, request, provider.base_url) or provider.api != "chat" or provider.server in SHOWN_OR_REFUSED:
        return None
    start = time.perf_counter()
    try:
        return await _checked(provider, request)
    finally:
        provider._cost.carry(time.perf_counter() - start)  # the step's, whichever route it takes


async def _checked(provider: Any, request: Any) -> RouteSwitched | None:
    """:func:`ahead`'s requests: the prompt size with the tools, then without."""
    route, kwargs = provider._route, provider.build_request(request)
    try:
        with_tools = await _counted(provider.client, kwargs, tools=True)
    except Exception as exc:  # a server that refuses tools says so here rather than to the native try
        return provider._switch_for(exc, request)  # type: ignore[no-any-return]
    without = None if with_tools is None else await prompt_tokens(provider.client, kwargs, tools=False)
    same = same_prompt(with_tools, without)
    if same is not None:
        route.tools_checked = True
    if not same:
        return None
    assert with_tools is not None
    return route.switch(provider.name, reason(with_tools))


def with_switch(item: Any, switch: RouteSwitched | None) -> Any:
    """A streamed ``item`` as it is, a completion with the ``switch`` (if any) first among its events."""
    if switch is None or not isinstance(item, Completion):
        return item
    return dataclasses.replace(item, events=(switch, *item.events))
