"""A local OpenAI-compatible server's context window, asked of the server itself.

Three questions, in order, each only if the one before gave no window, all within one time
bound (:data:`~agentnb.providers.window.PROBE_TIMEOUT` in all):

* ``GET <root>/props`` (llama.cpp's server): ``default_generation_settings.n_ctx``, the window the
  server was started with (``-c``);
* ``GET <base_url>/models`` (vLLM): the served model's ``max_model_len``;
* ``POST <root>/api/show`` (Ollama): ``num_ctx`` in the model's parameters when set, else its
  ``model_info["<architecture>.context_length"]``.

An answer that is not JSON, not the shape expected, an error status, a refused connection or a
server that does not answer in time is no window (the next question is asked); none found is
unknown, with what each question got. Nothing here raises.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from typing import Any

from agentnb.providers.window import PROBE_TIMEOUT, Window, tokens_of, unknown

#: The longest answer read from one question (a model list or model card), in bytes.
_MAX_BODY = 1 << 20


async def server_window(base_url: str, model: str | None, key: str | None, timeout: float = PROBE_TIMEOUT) -> Window:
    """The window a server at ``base_url`` (its ``/v1`` URL) says it serves ``model`` with.

    >>> import asyncio
    >>> asyncio.run(server_window("http://127.0.0.1:9/v1", "m", None, timeout=1)).source
    'unknown: the server did not say its window (/props: cannot connect; /v1/models: cannot connect; /api/show: cannot connect)'
    """
    import aiohttp

    root = re.sub(r"/v1$", "", base_url.rstrip("/"))
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    deadline = time.monotonic() + timeout
    notes: list[str] = []
    questions: list[tuple[str, Callable[[Any], Any], Callable[[Any], int | None]]] = [
        ("/props", lambda s: s.get(f"{root}/props"), _from_props),
        ("/v1/models", lambda s: s.get(f"{base_url.rstrip('/')}/models"), lambda body: _from_models(body, model)),
        ("/api/show", lambda s: s.post(f"{root}/api/show", json={"model": model or ""}), _from_show),
    ]
    async with aiohttp.ClientSession(headers=headers) as session:
        for where, ask, read in questions:
            left = deadline - time.monotonic()
            if left <= 0:
                notes.append(f"{where}: not asked, {timeout:g}s passed")
                continue
            body, note = await _ask(session, ask, left)
            tokens = read(body) if note is None else None
            if tokens is not None:
                return Window(tokens, f"server:{where}")
            notes.append(f"{where}: {note or 'no window in the answer'}")
    return unknown(f"the server did not say its window ({'; '.join(notes)})")


async def _ask(session: Any, ask: Callable[[Any], Any], left: float) -> tuple[Any, str | None]:
    """``(body, None)``: the JSON answer; ``(None, why)``: none."""
    import aiohttp

    async def read() -> tuple[int, bytes]:
        async with ask(session) as response:
            return response.status, await response.content.read(_MAX_BODY + 1)

    try:
        status, raw = await asyncio.wait_for(read(), left)
    except asyncio.TimeoutError:
        return None, f"no answer in {left:.3g}s"
    except (aiohttp.ClientError, OSError, ValueError):
        return None, "cannot connect"
    if status >= 400:
        return None, f"HTTP {status}"
    if len(raw) > _MAX_BODY:
        return None, "answer too long"
    try:
        return json.loads(raw), None
    except (ValueError, RecursionError):
        return None, "not JSON"


def _get(value: Any, *path: str) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _from_props(body: Any) -> int | None:
    return tokens_of(_get(body, "default_generation_settings", "n_ctx")) or tokens_of(_get(body, "n_ctx"))


def _from_models(body: Any, model: str | None) -> int | None:
    rows = _get(body, "data")
    if not isinstance(rows, list):
        return None
    rows = [r for r in rows if isinstance(r, dict)]
    chosen = [r for r in rows if r.get("id") == model] or (rows if len(rows) == 1 else [])
    return tokens_of(chosen[0].get("max_model_len")) if chosen else None


def _from_show(body: Any) -> int | None:
    params = _get(body, "parameters")
    if isinstance(params, str):
        found = re.search(r"^num_ctx\s+(\d{1,10})\s*$", params, re.MULTILINE)
        if found:
            return tokens_of(int(found.group(1)))
    info = _get(body, "model_info")
    arch = _get(info, "general.architecture")
    return tokens_of(info.get(f"{arch}.context_length")) if isinstance(arch, str) and isinstance(info, dict) else None
