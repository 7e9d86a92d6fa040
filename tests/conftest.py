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


# Files that take minutes, started first so that neither worker is left with one at the end.
SLOW_FIRST = (
    "tests/test_openai_text_servers.py",
    "tests/test_binder.py",
    "tests/test_openai_transformers_serve.py",
    "tests/test_hf_local.py",
    "tests/test_transformers_smollm2.py",
    "tests/browser/",
    "notebooks/",
)
# Files whose tests are spread over both workers one by one (each worker then builds the module
# fixtures it needs, once): a file that alone would take longer than the rest of the suite.
PER_TEST = ("tests/test_openai_text_servers.py",)


def _rank(nodeid: str) -> int:
    return next((i for i, prefix in enumerate(SLOW_FIRST) if nodeid.startswith(prefix)), len(SLOW_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow files first (a stable sort: within a file, and a notebook's cells, order is kept)."""
    items.sort(key=lambda item: _rank(item.nodeid))


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """pytest-xdist: whole files per worker (module fixtures built once), in collection order,
    except the files in ``PER_TEST``. (``--dist loadgroup`` does not group on pytest 9.2.)
    """
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in PER_TEST else path

    config.option.loadscopereorder = False  # keep SLOW_FIRST's order, not "most tests first"
    return ByFile(config, log)
