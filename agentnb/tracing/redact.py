"""Secrets out of span content: known key values and key-shaped strings become ``***``.

Content is recorded on spans only when asked for (``instrument(content=True)``); even then
API keys must not leave. The keys a provider holds never reach events (see
:class:`agentnb.providers.openai.errors._Secret`), but a prompt, a tool result or a model's
reply can carry one. :class:`Redactor` replaces the values of secret-looking environment
variables (``*_API_KEY``, ``*_TOKEN``, ``*SECRET*``, ``*PASSWORD*``), secrets given to it,
and strings shaped like keys (``sk-...``, ``Bearer ...``).

>>> Redactor(["hunter2-long-secret"]).redact("pw hunter2-long-secret and sk-abcdefghijklmnop1234")
'pw *** and ***'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

_SECRET_NAME = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_SHAPES = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{16,}"  # OpenAI / Anthropic / Stripe-style keys
    r"|\bBearer\s+[A-Za-z0-9._\-~+/]{16,}=*"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|\bhf_[A-Za-z0-9]{20,}"  # Hugging Face tokens
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key ids
)
_MIN = 8  # shorter values are no secret worth hiding, and replacing them garbles text


class Redactor:
    """Replaces secrets in text with ``***`` (see the module docstring)."""

    def __init__(self, secrets: Iterable[str] = (), *, environ: bool = True) -> None:
        found = {s for s in secrets if isinstance(s, str) and len(s) >= _MIN}
        if environ:
            found |= {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN}
        # Longest first, so a secret containing another is replaced whole.
        self.values = tuple(sorted(found, key=len, reverse=True))

    def redact(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, "***")
        return _SHAPES.sub("***", text)
