"""The price of model calls, from the maintained ``genai-prices`` table (no table of our own).

Every model response's usage is priced when it arrives: ``ModelResponse.usage.cost`` and
``RunResult.usage.cost`` (US dollars) add up. A model the table does not know costs ``None``
("unknown"), never a guess; in-process models cost 0. The fakes of :mod:`agentnb.testing` are
priced only when their usage says so (``Usage(10, 2, cost=0.001)``).

Which table entry prices a provider:

* ``provider.price_as``, when set: a genai-prices provider id such as ``"openai"``, for a proxy
  or a local server that serves a known model under its usual name;
* else the provider's own ``price_provider`` (``"openai"`` for ``OpenAIProvider`` on the OpenAI
  API, ``"anthropic"`` for ``AnthropicProvider``); a provider with a ``base_url`` elsewhere is
  looked up by that URL (genai-prices knows the hosted APIs), so a local server is unknown;
* ``in_process = True`` (in-process models): 0.

Install the table with ``pip install 'agentnb[cost]'``; without it every price is unknown.

>>> from agentnb.messages import Usage
>>> from agentnb.providers import OpenAIProvider
>>> api = OpenAIProvider("gpt-4o-mini", api_key="sk-none-0000", base_url="https://api.openai.com/v1")
>>> price(api, Usage(1_000_000, 0))
0.15
>>> local = OpenAIProvider("gpt-4o-mini", base_url="http://127.0.0.1:8000/v1")
>>> price(local, Usage(1000, 100)) is None  # a local server: unknown, unless priced as openai
True
>>> local.price_as = "openai"
>>> price(local, Usage(1_000_000, 0))
0.15
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from agentnb.messages import Usage

#: The OpenAI and Anthropic APIs' own URLs: a provider pointed there is priced by its provider id.
_OFFICIAL = ("https://api.openai.com", "https://api.anthropic.com")


def price(provider: Any, usage: Usage) -> float | None:
    """The price of ``usage`` on ``provider`` in US dollars; None when unknown."""
    if usage.cost is not None:
        return usage.cost
    ref = price_ref(provider)
    if ref is None:
        return None
    if ref == "free":
        return 0.0
    return _calc(ref[0], ref[1], ref[2], usage.input_tokens, usage.output_tokens)


def priced(provider: Any, usage: Usage) -> Usage:
    """``usage`` with its ``cost`` set (unchanged when already priced or unknown)."""
    if usage.cost is not None or not (usage.input_tokens or usage.output_tokens):
        return usage
    cost = price(provider, usage)
    return usage if cost is None else Usage(usage.input_tokens, usage.output_tokens, cost)


def price_ref(provider: Any) -> tuple[str | None, str | None, str] | str | None:
    """How ``provider`` is priced: ``"free"``, ``(provider_id, api_url, model)``, or None (unknown)."""
    for _ in range(8):  # wrappers (UnTooled) price as what they wrap
        if getattr(provider, "in_process", False):
            return "free"
        inner = getattr(provider, "inner", None)
        if inner is None or getattr(provider, "price_provider", None) is not None:
            break
        provider = inner
    model = getattr(provider, "model", None)
    if not isinstance(model, str) or not model:
        return None
    chosen = getattr(provider, "price_as", None)
    if chosen:
        return (str(chosen), None, model)
    own = getattr(provider, "price_provider", None)
    if own is None:
        return None
    base = getattr(provider, "base_url", None)
    if base and not str(base).startswith(_OFFICIAL):
        return (None, str(base), model)  # a hosted API genai-prices knows by its URL, else unknown
    return (own, None, model)


@lru_cache(maxsize=4096)
def _calc(provider_id: str | None, api_url: str | None, model: str, inputs: int, outputs: int) -> float | None:
    try:
        import genai_prices
    except ImportError:
        return None
    usage = genai_prices.Usage(input_tokens=inputs, output_tokens=outputs)
    try:
        if provider_id is not None:
            result = genai_prices.calc_price(usage, model, provider_id=provider_id)
        else:
            result = genai_prices.calc_price(usage, model, provider_api_url=api_url)
    except (LookupError, ValueError):
        return None
    return float(result.total_price)


def format_cost(cost: float | None) -> str:
    """A price for people: ``$0.0012``, ``$0`` or ``unknown``.

    >>> format_cost(0.00123456), format_cost(0.0), format_cost(None), format_cost(12.5)
    ('$0.001235', '$0', 'unknown', '$12.50')
    """
    if cost is None:
        return "unknown"
    if cost == 0:
        return "$0"
    if cost >= 1:
        return f"${cost:.2f}"
    return f"${cost:.4g}" if cost >= 0.001 else f"${cost:.3g}"
