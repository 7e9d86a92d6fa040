"""End to end: spans exported over OTLP/HTTP to a real receiver (Phoenix) and read back from it.

The receiver is Arize Phoenix's local server (``phoenix serve``), started on 127.0.0.1 on free
ports in a temporary working directory, and stopped afterwards. Phoenix lives in a virtual
environment of its own (853 MB; ``./dev`` makes ``.venv-phoenix``); ``AGENTNB_PHOENIX`` names
another ``phoenix`` executable.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from agentnb import Agent, tool
from agentnb.messages import Usage
from agentnb.testing import ScriptedProvider, call
from agentnb.tracing.otel import SpanWatcher

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def phoenix_executable() -> str:
    found = os.environ.get("AGENTNB_PHOENIX") or str(ROOT / ".venv-phoenix" / "bin" / "phoenix")
    if not os.access(found, os.X_OK):
        pytest.fail(
            f"no Phoenix OTLP receiver at {found}: run ./dev setup (it makes .venv-phoenix), or "
            "python3 -m venv .venv-phoenix && .venv-phoenix/bin/pip install arize-phoenix==20.26.0"
        )
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read().decode()) if r.headers.get_content_type() == "application/json" else r.read()


@pytest.fixture(scope="module")
def phoenix() -> Any:
    port, grpc = free_port(), free_port()
    work = tempfile.mkdtemp(prefix="agentnb-phoenix-")
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": work,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = open(os.path.join(work, "server.log"), "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [phoenix_executable(), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"phoenix exited with {proc.returncode}: {Path(work, 'server.log').read_text()[-2000:]}"
                )
            try:
                get(base + "/healthz")
                break
            except (OSError, http.client.HTTPException):  # not up yet
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield base
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_spans_reach_a_real_otlp_receiver(phoenix: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "agentnb-test"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=phoenix + "/v1/traces")))
    helper = Agent(ScriptedProvider(["It is 3."], usage=Usage(5, 2)), name="helper")
    agent = Agent(
        ScriptedProvider([call("add", a=1, b=2), call("helper", prompt="check 3"), "3"], usage=Usage(7, 3)),
        tools=[add, helper.as_tool()],
        name="calc",
        instrument=SpanWatcher(provider, openinference=True),
    )
    agent.run("1 + 2?")
    provider.force_flush()
    provider.shutdown()
    deadline = time.monotonic() + 30
    while True:
        spans = get(phoenix + "/v1/projects/default/spans?limit=100")["data"]
        if len(spans) >= 7 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    names = sorted(s["name"] for s in spans)
    assert names == sorted(
        [
            "invoke_agent calc",
            "chat scripted",
            "chat scripted",
            "chat scripted",
            "execute_tool add",
            "execute_tool helper",
            "invoke_agent helper",
            "chat scripted",
        ]
    )
    by_id = {s["context"]["span_id"]: s for s in spans}
    parent = {s["name"]: by_id.get(s["parent_id"], {}).get("name") for s in spans}
    assert parent["invoke_agent calc"] is None
    assert parent["execute_tool add"] == "invoke_agent calc"
    assert parent["invoke_agent helper"] == "execute_tool helper"
    root = next(s for s in spans if s["name"] == "invoke_agent calc")
    assert root["span_kind"] == "AGENT"
    assert root["attributes"]["gen_ai.agent.name"] == "calc"
    assert root["attributes"]["gen_ai.usage.input_tokens"] == 3 * 7 + 5
