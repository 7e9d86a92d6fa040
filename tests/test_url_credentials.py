"""A base_url with credentials in it (``http://user:password@host/v1``): the run works, and the
password never appears in an error, a transcript or an exception chain."""

from __future__ import annotations

import json
import socket
import traceback

import pytest

pytest.importorskip("openai")

from agentnb import Agent
from agentnb.providers.openai import OpenAIProvider
from agentnb.testing import ScriptedServer

PASSWORD = "s3cr3t-pw-42"
KEY = "sk-abcdefghijklmnop123456"


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_behind_url_credentials_answers(stream: bool) -> None:
    with ScriptedServer(default_text="hello") as srv:
        url = srv.url.replace("http://", f"http://user:{PASSWORD}@")
        result = Agent(OpenAIProvider("m", base_url=url, api_key=KEY)).run("hi", stream=stream)
    assert (result.stop_reason, result.output) == ("answer", "hello")
    assert PASSWORD not in json.dumps(result.to_dict())


def test_a_failure_never_shows_the_url_password() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = OpenAIProvider("m", base_url=f"http://user:{PASSWORD}@127.0.0.1:{port}/v1", api_key=KEY, max_retries=0)
    result = Agent(provider).run("hi")
    assert result.stop_reason == "error" and "127.0.0.1" in (result.error or "")
    saved = json.dumps(result.to_dict())
    assert PASSWORD not in saved and KEY not in saved and PASSWORD not in repr(provider)
    with pytest.raises(Exception) as info:  # the provider's own error, as a caller of complete() sees it
        _raise(provider)
    chain = "".join(traceback.format_exception(info.value))
    assert PASSWORD not in chain and KEY not in chain


def _raise(provider: OpenAIProvider) -> None:
    import asyncio

    from agentnb.messages import UserMessage
    from agentnb.providers.base import Request

    asyncio.run(provider.complete(Request([UserMessage("hi")], (), "auto", {}, None, None)))
