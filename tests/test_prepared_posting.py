"""Non-streamed requests sent on a prepared request (agentnb.providers.openai.posting) against the
SDK's own ``client.post``: the same bytes on the wire, the same results and the same errors.

A real HTTP server on 127.0.0.1 records every request and answers from a script.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import time
from collections import Counter
from typing import Any

import pytest

from agentnb.providers import OpenAIProvider
from agentnb.providers.openai import posting
from tests.fake_http import JsonHandler, Served

pytest.importorskip("aiohttp")
openai = pytest.importorskip("openai")

OK = {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}
BODY = {"model": "m", "messages": [{"role": "user", "content": "héllo"}], "top_k": 3}


class Recording(Served):
    """Records (headers, body) of each POST; answers with the scripted (status, headers, body), else OK."""

    def __init__(self) -> None:
        self.seen: list[tuple[list[tuple[str, str]], bytes]] = []
        self.replies: list[tuple[int, dict[str, str], bytes]] = []
        self.delay = 0.0
        outer = self

        class Handler(JsonHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                data = self.rfile.read(int(self.headers["content-length"]))
                outer.seen.append(([(k.lower(), v) for k, v in self.headers.items()], data))
                if outer.delay:
                    time.sleep(outer.delay)
                status, headers, body = outer.replies.pop(0) if outer.replies else (200, {}, json.dumps(OK).encode())
                self.send_response(status)
                for k, v in {"content-type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.serve(Handler)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def counting(client: Any) -> Counter[str]:
    """Counts the requests that went through the SDK's HTTP client (the unprepared path)."""
    calls: Counter[str] = Counter()
    send = client._client.send

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls["sdk"] += 1
        return await send(*args, **kwargs)

    client._client.send = counted
    return calls


def test_the_prepared_path_puts_the_same_request_on_the_wire() -> None:
    with Recording() as server:
        provider = OpenAIProvider("m", base_url=server.url, api_key="sk-test-wire-0001", organization="org-1")

        async def main() -> list[bytes]:
            client = provider.client
            calls = counting(client)
            url = f"{client.base_url}chat/completions"
            out = [await posting.post(client, url, BODY, {}) for _ in range(3)]
            out.append(await client.post(url, body=BODY, cast_to=bytes))  # the SDK alone, for comparison
            assert calls["sdk"] == 2, "the 2nd and 3rd requests were not sent on the prepared request"
            return out

        answers = run(main())
    assert len({*answers}) == 1 and json.loads(answers[0]) == OK
    (sdk_headers, sdk_body), prepared = server.seen[-1], server.seen[1:3]
    for headers, body in prepared:
        assert body == sdk_body == json.dumps(BODY, ensure_ascii=False, separators=(",", ":")).encode()
        assert Counter(headers) == Counter(sdk_headers)
    names = {k for k, _ in sdk_headers}
    assert {"authorization", "openai-organization", "x-stainless-retry-count", "user-agent"} <= names


@pytest.mark.parametrize(
    "status, headers, body",
    [
        (429, {"retry-after": "2"}, b'{"error": {"message": "slow down", "type": "rate_limit"}}'),
        (500, {}, b"upstream broke"),
        (400, {"x-should-retry": "false"}, b'{"error": {"message": "model takes no tools"}}'),
        (401, {}, b'{"error": {"message": "bad key sk-test-err-0002"}}'),
    ],
)
def test_an_error_status_is_the_sdks_own_error(status: int, headers: dict[str, str], body: bytes) -> None:
    with Recording() as server:
        provider = OpenAIProvider("m", base_url=server.url, api_key="sk-test-err-0002")

        async def main() -> list[Any]:
            client = provider.client
            calls = counting(client)
            url = f"{client.base_url}chat/completions"
            await posting.post(client, url, BODY, {})  # prepares
            errors = []
            for send in (
                lambda: posting.post(client, url, BODY, {}),
                lambda: client.post(url, body=BODY, cast_to=bytes),
            ):
                server.replies.append((status, headers, body))
                with pytest.raises(openai.APIStatusError) as info:
                    await send()
                errors.append(info.value)
            assert calls["sdk"] == 2  # the first request and the SDK's own
            return errors

        prepared, sdk = run(main())
    assert type(prepared) is type(sdk) and str(prepared) == str(sdk)
    assert prepared.status_code == sdk.status_code == status
    assert prepared.body == sdk.body and prepared.response.headers.get("retry-after") == sdk.response.headers.get(
        "retry-after"
    )
    assert prepared.request.url == sdk.request.url


def test_a_compressed_body_is_decoded_as_the_sdk_decodes_it() -> None:
    packed = gzip.compress(json.dumps(OK).encode())
    with Recording() as server:
        provider = OpenAIProvider("m", base_url=server.url, api_key="sk-test-gz-0003")

        async def main() -> tuple[bytes, bytes]:
            client = provider.client
            url = f"{client.base_url}chat/completions"
            await posting.post(client, url, BODY, {})
            server.replies += [(200, {"content-encoding": "gzip"}, packed)] * 2
            return await posting.post(client, url, BODY, {}), await client.post(url, body=BODY, cast_to=bytes)

        prepared, sdk = run(main())
    assert prepared == sdk and json.loads(prepared) == OK


def test_a_timeout_and_a_lost_server_raise_what_the_sdk_raises() -> None:
    server = Recording()
    with server:
        provider = OpenAIProvider("m", base_url=server.url, api_key="sk-test-gone-0004")

        async def main() -> list[type]:
            client = provider.client
            url = f"{client.base_url}chat/completions"
            await posting.post(client, url, BODY, {"timeout": 0.3})
            server.delay = 1.0
            kinds = []
            for send in (
                lambda: posting.post(client, url, BODY, {"timeout": 0.3}),
                lambda: client.post(url, body=BODY, cast_to=bytes, options={"timeout": 0.3}),
            ):
                with pytest.raises(openai.APIError) as info:
                    await send()
                kinds.append(type(info.value))
            server.delay = 0.0
            return kinds

        assert run(main()) == [openai.APITimeoutError, openai.APITimeoutError]
    gone = OpenAIProvider("m", base_url=server.url, api_key="sk-test-gone-0004")  # nothing listens now

    async def after() -> list[type]:
        client = gone.client
        url = f"{client.base_url}chat/completions"
        posting._posters[client] = poster = posting.prepared_for(client)
        assert poster is not None
        poster._prepared[(url, None)] = await poster._prepare(client, url, BODY, {})  # prepared, as after a success
        kinds = []
        for send in (lambda: posting.post(client, url, BODY, {}), lambda: client.post(url, body=BODY, cast_to=bytes)):
            with pytest.raises(openai.APIError) as info:
                await send()
            kinds.append(type(info.value))
        return kinds

    assert run(after()) == [openai.APIConnectionError, openai.APIConnectionError]


def test_clients_whose_requests_change_are_never_prepared() -> None:
    with Recording() as server:

        async def main() -> list[Any]:
            own = OpenAIProvider("m", base_url=server.url, api_key="k", http_client=openai.DefaultAsyncHttpxClient())
            keyed = openai.AsyncOpenAI(base_url=server.url, api_key=lambda: "k")  # a key provider: per request
            plain = OpenAIProvider("m", base_url=server.url, api_key="k")
            return [posting.prepared_for(c) for c in (own.client, keyed, plain.client)]

        own, keyed, plain = run(main())
    assert own is None and keyed is None and plain is not None


def test_requests_in_flight_together_each_get_their_own_answer() -> None:
    with Recording() as server:
        provider = OpenAIProvider("m", base_url=server.url, api_key="sk-test-many-0005")

        async def main() -> list[Any]:
            client = provider.client
            url = f"{client.base_url}chat/completions"
            await posting.post(client, url, BODY, {})
            bodies = [{**BODY, "n": i} for i in range(20)]
            return await asyncio.gather(*(posting.post(client, url, b, {}) for b in bodies))

        answers = run(main())
    sent = sorted(json.loads(body)["n"] for _, body in server.seen[1:])
    assert sent == list(range(20)) and all(json.loads(a) == OK for a in answers)


def test_a_prepared_request_does_not_keep_its_client_alive() -> None:
    import gc
    import weakref

    with Recording() as server:

        async def main() -> weakref.ref[Any]:
            provider = OpenAIProvider("m", base_url=server.url, api_key="sk-test-gc-0006")
            client = provider.client
            url = f"{client.base_url}chat/completions"
            for _ in range(2):
                await posting.post(client, url, BODY, {})
            assert posting._posters[client] is not None
            await provider.aclose()
            return weakref.ref(client)

        ref = run(main())
        gc.collect()
    assert ref() is None
