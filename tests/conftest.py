"""Shared test setup. Tests never reach a paid API: real OpenAI hosts are refused here."""

from __future__ import annotations

import os

import pytest

# Any OpenAI client built without an explicit base_url would go to the real API; point the
# default at a closed local port so such a mistake fails fast instead of spending money.
os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
os.environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def _refuse_paid_api(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    real = socket.getaddrinfo

    def guarded(host, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(host, str) and host.endswith(("openai.com", "anthropic.com", "huggingface.co")):
            raise OSError(f"tests must not reach {host}")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
