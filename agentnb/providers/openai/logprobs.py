"""Reading a server's log-probabilities: each generated token and its likeliest alternatives.

Servers send them in two forms: the legacy completions form (``tokens`` and ``top_logprobs``,
a dict per token: llama-cpp-python, vLLM) and the chat form (``content``, a list of ``{"token",
"logprob", "top_logprobs"}``: OpenAI's chat API, llama.cpp's ``llama-server``). Used by
:mod:`agentnb.providers.openai.steer` and :mod:`agentnb.providers.openai.decide`.
"""

from __future__ import annotations

from typing import Any


def positions(logprobs: Any) -> list[tuple[str, dict[str, float]]]:
    """Each streamed token's text and its alternatives, from the legacy completions form
    (``tokens`` and ``top_logprobs``: llama-cpp-python, vLLM) or the chat form (``content``, a
    list of ``{"token", "logprob", "top_logprobs"}``: llama.cpp's ``llama-server``).

    >>> positions({"content": [{"token": "a", "logprob": -0.1, "top_logprobs": [{"token": "b", "logprob": -2.0}]}]})
    [('a', {'b': -2.0, 'a': -0.1})]
    """
    if logprobs is None:
        return []
    data = logprobs if isinstance(logprobs, dict) else _as_dict(logprobs)
    tokens = data.get("tokens")
    if isinstance(tokens, list) and tokens:
        tops = data.get("top_logprobs") or []
        return [(str(t), alternatives(top)) for t, top in zip(tokens, tops, strict=False)]
    out = []
    for entry in data.get("content") or ():
        entry = entry if isinstance(entry, dict) else _as_dict(entry)
        own = entry.get("token")
        if not isinstance(own, str):
            continue
        top = alternatives(entry.get("top_logprobs"))
        if isinstance(entry.get("logprob"), int | float):
            top.setdefault(own, float(entry["logprob"]))
        out.append((own, top))
    return out


def _as_dict(value: Any) -> dict[str, Any]:
    if hasattr(value, "model_dump"):
        return dict(value.model_dump())
    return dict(getattr(value, "__dict__", {}))


def alternatives(top: Any) -> dict[str, float]:
    """A position's alternatives as text -> log-probability, from the legacy form (a dict) or
    the chat form (a list of ``{"token", "logprob"}``)."""
    if isinstance(top, dict):
        return dict(top)
    out: dict[str, float] = {}
    for item in top or ():
        token = item.get("token") if isinstance(item, dict) else getattr(item, "token", None)
        value = item.get("logprob") if isinstance(item, dict) else getattr(item, "logprob", None)
        if isinstance(token, str) and isinstance(value, int | float):
            out.setdefault(token, float(value))
    return out
