"""The ``openai`` SDK, imported on first use (``import agentnb`` works without it)."""

from __future__ import annotations

from typing import Any

from agentnb.errors import MissingDependencyError


def _sdk() -> Any:
    try:
        import openai
    except ImportError:
        raise MissingDependencyError("OpenAIProvider", "openai") from None
    return openai
