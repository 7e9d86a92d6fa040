"""A server's error, as the trace, the printer and the run's error show it: short, on one line,
without the server's traceback or its file paths; the whole message stays on the exception.

The messages are llama-cpp-python 0.3.36's own (its server answers an unexpected exception
with ``str(exc)``, which for a request it cannot validate holds the frame of its own source).
"""

from __future__ import annotations

import pytest

from agentnb import Agent, tool
from agentnb.events import ConstraintDropped
from agentnb.notebook.trace.notes import note_html
from agentnb.printer import format_event
from agentnb.providers import OpenAIProvider
from agentnb.providers.openai.errors import brief
from agentnb.testing import ScriptedServer
from agentnb.testing.server import error, text

#: What llama-cpp-python 0.3.36's server answered to ``response_format: json_schema`` (HTTP 500).
LLAMA_CPP_PYTHON = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n"
    '  File "/home/someone/.venv/lib/python3.11/site-packages/llama_cpp/server/app.py", line 376, '
    "in create_chat_completion\n    POST /v1/chat/completions"
)
KEY = "sk-server-error-test-0000"
CALL = '{"name": "add", "arguments": {"a": 2, "b": 3}}'


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_a_refused_constraint_is_said_in_the_servers_words_without_its_traceback():
    with ScriptedServer() as server:
        p = OpenAIProvider("m", base_url=server.url, max_retries=0, timeout=20, tool_calling="untooled")
        server.script(error(500, LLAMA_CPP_PYTHON), text(CALL), text('{"answer": "5"}'))
        r = Agent(p, [add]).run("2 + 3?")
    assert r.output == "5" and p.constraint_format == "json_object"
    dropped = next(e for e in r.events if isinstance(e, ConstraintDropped))
    said = "body.response_format.type: Input should be 'text' or 'json_object'; trying json_object"
    assert dropped.reason == said
    for shown in (dropped.reason, format_event(dropped) or "", note_html(dropped)):
        assert "/home/someone" not in shown and "File" not in shown and "app.py" not in shown


def test_a_failed_request_keeps_the_whole_message_on_the_exception_only():
    message = f"{LLAMA_CPP_PYTHON}\n  key was {KEY}"
    with ScriptedServer() as server:
        p = OpenAIProvider("m", api_key=KEY, base_url=server.url, max_retries=0, timeout=20, tool_calling="native")
        server.script(error(400, message))
        r = Agent(p, [add]).run("2 + 3?")
    assert r.stop_reason == "error"
    assert r.error.endswith(
        "refused the request (400): body.response_format.type: Input should be 'text' or 'json_object'"
    )
    assert "/home/someone" not in r.error and "\n" not in r.error
    detail = r.exception.detail
    assert "/home/someone/.venv/lib/python3.11/site-packages/llama_cpp/server/app.py" in detail
    assert KEY not in detail and "key was ***" in detail


def test_a_short_message_is_left_as_it_is():
    with ScriptedServer() as server:
        p = OpenAIProvider("m", base_url=server.url, max_retries=0, timeout=20, tool_calling="native")
        server.script(error(400, "temperature must be at most 2"))
        r = Agent(p, [add]).run("2 + 3?")
    assert r.error.endswith("(400): temperature must be at most 2") and r.exception.detail == ""
    # (a context-length error is a ContextOverflow: tests/test_context_overflow.py)


@pytest.mark.parametrize(
    ("message", "short"),
    [
        ("Model path does not exist: /models/smol.gguf", "Model path does not exist: …/smol.gguf"),
        ("cannot open C:\\Users\\me\\m.gguf", "cannot open …/m.gguf"),
        ("see http://127.0.0.1:8000/v1/models.json and POST /v1/chat/completions", None),
        ('Traceback (most recent call last):\n  File "/srv/a.py", line 1', ""),
        ("x" * 300, "x" * 239 + "…"),
    ],
)
def test_brief(message: str, short: str | None) -> None:
    assert brief(message) == (message if short is None else short)
