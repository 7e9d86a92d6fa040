"""The scripted OpenAI-wire server the tests use: now public as :mod:`agentnb.testing.server`."""

from agentnb.testing.server import (
    Recorded,
    Reply,
    ScriptedServer,
    completion_body,
    error,
    stream_chunks,
    text,
    tool_calls,
)

WireServer = ScriptedServer

__all__ = ["Recorded", "Reply", "WireServer", "completion_body", "error", "stream_chunks", "text", "tool_calls"]
