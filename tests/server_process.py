"""Start a real model server on 127.0.0.1 for a test, and always stop it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from typing import IO

import pytest


def llama_cpp_server(port: int) -> list[str]:
    """The command that serves the embedded SmolLM2 GGUF with llama-cpp-python's server on ``port``.

    One thread for generation and one for prompts: llama.cpp's threads wait for each other by
    spinning, so two of them on a machine whose cores are busy (the other test worker, a torch
    model) slow each request many times over. Measured here (2 cores, ``pytest -n 2
    tests/test_openai_text_servers.py``): 147 s with 2 threads, 63 s with 1; the steered-call
    test 85 s and 21 s.
    """
    import sys

    from agentnb.providers.hf import smollm2_path

    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_path()), "--host", "127.0.0.1"]
    return [
        *cmd,
        "--port",
        str(port),
        "--n_ctx",
        "2048",
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--verbose",
        "False",
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running(cmd: Sequence[str], url: str, *, env: dict[str, str] | None = None, timeout: float = 180) -> Iterator[str]:
    """Run ``cmd`` until ``url``/models answers; yield ``url``; terminate it (kill if need be)."""
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(list(cmd), env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until_up(proc, url, log, " ".join(cmd[:3]), timeout)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_until_up(proc: subprocess.Popen[bytes], url: str, log: IO[bytes], name: str, timeout: float = 180) -> None:
    """Wait until ``url``/models answers; fail the test (with the server's log) if it exits or times out."""
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            log.seek(0)
            pytest.fail(f"{name} exited ({proc.returncode}):\n{log.read().decode()[-3000:]}")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not come up within {timeout:g} s")
            time.sleep(0.3)
