"""What :class:`~agentnb.testing.server.ScriptedServer` does with a window: count a request's
prompt as a server would, and refuse one too long in a real server's words (OpenAI's, vLLM's
share them, or llama.cpp's).

>>> overflow_reply(9120, 8000, "openai")[1]["error"]["code"]
'context_length_exceeded'
>>> overflow_reply(2100, 2048, "llamacpp")[0]
'request (2100 tokens) exceeds the available context size (2048 tokens), try increasing it'
"""

from __future__ import annotations

import json
from typing import Any


def prompt_tokens(body: dict[str, Any], chars_per_token: float = 4.0) -> int:
    """A chat request's prompt in tokens, as the server counts them: each message 4 tokens and
    its text (content, calls' names and arguments), and the tools' JSON, ``chars_per_token``
    characters a token.

    >>> prompt_tokens({"messages": [{"role": "user", "content": "x" * 40}]})
    14
    """
    chars, n = 0, 0
    for m in body.get("messages") or ():
        n += 1
        content = m.get("content") if isinstance(m, dict) else None
        chars += len(content if isinstance(content, str) else json.dumps(content or ""))
        for c in (m.get("tool_calls") or ()) if isinstance(m, dict) else ():
            fn = c.get("function") or {}
            chars += len(str(fn.get("name", ""))) + len(str(fn.get("arguments", "")))
    if body.get("tools"):
        chars += len(json.dumps(body["tools"]))
    return 4 * n + int(chars / chars_per_token + 0.999)


def overflow_reply(tokens: int, window: int, style: str) -> tuple[str, dict[str, Any]]:
    """The message and the JSON body of HTTP 400 for a prompt larger than the window, in
    OpenAI's or llama.cpp's server's words."""
    if style == "llamacpp":
        said = f"request ({tokens} tokens) exceeds the available context size ({window} tokens), try increasing it"
        err: dict[str, Any] = {"code": 400, "message": said, "type": "exceed_context_size_error"}
        return said, {"error": {**err, "n_prompt_tokens": tokens, "n_ctx": window}}
    said = (
        f"This model's maximum context length is {window} tokens. However, your messages resulted in "
        f"{tokens} tokens. Please reduce the length of the messages."
    )
    err = {"message": said, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}
    return said, {"error": err}
