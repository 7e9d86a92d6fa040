"""Pytest fixtures for the OpenAI provider tests: one wire server per session, reset per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai_wire_server import WireServer

from agentnb.providers.openai import OpenAIProvider

#: A key that must never show up in any output.
__all__ = ["KEY", "_wire_session", "provider", "wire"]

KEY = "sk-wire-0123456789-very-secret"


@pytest.fixture(scope="session")
def _wire_session() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture
def wire(_wire_session: WireServer) -> Iterator[WireServer]:
    """The running wire server with an empty queue and no recorded requests."""
    _wire_session.reset()
    yield _wire_session
    _wire_session.reset()


@pytest.fixture
def provider(wire: WireServer) -> OpenAIProvider:
    """An OpenAIProvider pointed at the wire server, with quick retries."""
    return OpenAIProvider("wire-model", api_key=KEY, base_url=wire.url, max_retries=2, timeout=10)
