"""OpenAIProvider overhead per step: building the request and parsing the response.

Run: ``python benchmarks/openai_overhead.py`` (add ``--quick`` for fewer repetitions).

"Ours" is what agentnb adds around the SDK: the ``create()`` keyword arguments from our
messages and tools (:meth:`OpenAIProvider.build_request`), and a :class:`Completion` from the
SDK's response object (``parse_completion``) or from a stream of chunk objects. The target is
under 200 microseconds per step for ours. The SDK's own work (validating/transforming the
parameters, building response objects from JSON) and a full HTTP round trip against the local
wire server (``tests/openai_wire_server.py``, in a thread of this process) are shown for
reference; neither is ours to speed up.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import openai_wire_server as wire
from openai._models import construct_type
from openai._utils import maybe_transform
from openai.types.chat import ChatCompletion, ChatCompletionChunk, completion_create_params

from agentnb import Agent, tool
from agentnb.messages import AssistantMessage, SystemMessage, ToolCall, ToolMessage, UserMessage
from agentnb.providers import Request
from agentnb.providers.openai import OpenAIProvider, parse_completion
from agentnb.providers.openai.wire import as_sent as _as_sent

TARGET_US = 200.0


@tool
def weather(city: str, unit: str = "c") -> str:
    """Current weather for a city.

    Args:
        city: the city name
        unit: c or f
    """
    return f"12 {unit} in {city}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def search(query: str, limit: int = 5) -> str:
    """Search the notes."""
    return query


def conversation(steps: int) -> list[Any]:
    """System + user, then ``steps`` rounds of one tool call and its result."""
    msgs: list[Any] = [SystemMessage("You are a helpful assistant. " * 5), UserMessage("Plan my trip to Paris.")]
    for k in range(steps):
        msgs.append(AssistantMessage(None, (ToolCall(f"call_{k}", "weather", {"city": f"City {k}", "unit": "c"}),)))
        msgs.append(ToolMessage(f"call_{k}", "weather", f"{k} degrees and sunny in City {k}. " * 3))
    return msgs


def per_call_us(fn: Callable[[], Any], n: int) -> float:
    """Median of 5 timings of ``n`` calls, in microseconds per call."""
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        runs.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(runs)


def next_step_build(provider: OpenAIProvider, request: Request) -> dict[str, Any]:
    """A request whose messages were all sent before except the newest two (one loop step)."""
    for m in request.messages[-2:]:
        provider._wire.pop(id(m), None)
    return provider.build_request(request)


def cold_build(provider: OpenAIProvider, request: Request) -> dict[str, Any]:
    provider._wire.clear()
    return provider.build_request(request)


def response_json(calls: int) -> dict[str, Any]:
    reply = wire.tool_calls(*[("weather", {"city": f"City {k}", "unit": "c"}, f"c{k}") for k in range(calls)])
    return wire.completion_body(reply, "bench-model")


def stream_objects(text: str, calls: int) -> list[ChatCompletionChunk]:
    reply = wire.tool_calls(*[("weather", {"city": f"City {k}", "unit": "c"}, f"c{k}") for k in range(calls)])
    reply.text, reply.pieces = text or None, 8
    chunks = wire.stream_chunks(reply, "bench-model", include_usage=True)
    return [construct_type(type_=ChatCompletionChunk, value=c) for c in chunks]  # type: ignore[misc]


class _FakeStream:
    """Replays chunk objects through OpenAIProvider.stream without a network."""

    def __init__(self, chunks: list[ChatCompletionChunk]) -> None:
        self.chunks = chunks

    def __aiter__(self) -> Any:
        return self._gen()

    async def _gen(self) -> Any:
        for c in self.chunks:
            yield c


def stream_parse_us(provider: OpenAIProvider, request: Request, chunks: list[ChatCompletionChunk], n: int) -> float:
    """Our per-chunk handling and assembly of a whole streamed reply (request build included)."""

    async def fake_send(kwargs: dict[str, Any], request: Request) -> tuple[_FakeStream, tuple[Any, ...]]:
        # Where the provider calls the SDK's create(): the chunks come from memory, not a server.
        return _FakeStream(chunks), ()

    provider._send = fake_send  # type: ignore[method-assign]

    async def once() -> None:
        async for _ in provider.stream(request):
            pass

    async def many() -> float:
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(n):
                await once()
            runs.append((time.perf_counter() - start) / n * 1e6)
        return statistics.median(runs)

    try:
        return asyncio.run(many())
    finally:
        del provider._send


def round_trips(server: wire.WireServer, n: int, stream: bool) -> float:
    """Milliseconds per agent step over HTTP: one tool call then an answer, per run."""
    provider = OpenAIProvider("bench-model", api_key="sk-bench", base_url=server.url)
    agent = Agent(provider, [weather], stream=stream)

    async def go() -> float:
        start = time.perf_counter()
        for k in range(n):
            server.script(wire.tool_calls(("weather", {"city": f"C{k}"})), wire.text("Sunny."))
            result = await agent.arun("weather?")
            if result.stop_reason != "answer":
                raise SystemExit(f"unexpected result: {result!r} {result.error}")
        return (time.perf_counter() - start) / (2 * n) * 1e3

    return asyncio.run(go())


def sdk_transform_us(kwargs: dict[str, Any], n: int) -> float:
    """The SDK's parameter walk (``maybe_transform``) over a request's JSON-body arguments."""
    body = {k: v for k, v in kwargs.items() if k != "extra_body"}
    params = completion_create_params.CompletionCreateParamsNonStreaming
    return per_call_us(lambda: maybe_transform(body, params), n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", default=os.environ.get("AGENTNB_BENCH_QUICK") == "1", help="fewer repetitions"
    )
    args = parser.parse_args()
    n = 200 if args.quick else 2000
    provider = OpenAIProvider("bench-model", api_key="sk-bench", base_url="http://127.0.0.1:9/v1")
    tools = [weather, add, search]

    print(f"OpenAIProvider overhead per step (target: ours < {TARGET_US:.0f} us), python {sys.version.split()[0]}")
    print()
    head = (
        "transcript",
        "build",
        "parse",
        "build+parse",
        "stream",
        "build, cold",
        "SDK walk",
        "SDK walk",
        "SDK JSON->obj",
    )
    sub = ("", "(ours)", "(ours)", "(ours)", "(ours)", "(ours)", "as sent", "if typed", "(reference)")
    print(" | ".join(f"{h:>12}" for h in head))
    print(" | ".join(f"{h:>12}" for h in sub))
    print("-" * 128)
    worst = 0.0
    chunks = stream_objects("", 1)
    raw = response_json(1)
    obj = construct_type(type_=ChatCompletion, value=raw)
    for steps in (0, 10, 50):
        request = Request(conversation(steps), tools)
        kwargs = provider.build_request(request)
        build = per_call_us(lambda r=request: next_step_build(provider, r), n)  # type: ignore[misc]
        cold = per_call_us(lambda r=request: cold_build(provider, r), max(20, n // 4))  # type: ignore[misc]
        parse = per_call_us(lambda o=obj: parse_completion(o), n)  # type: ignore[misc]
        streamed = stream_parse_us(provider, request, chunks, max(20, n // 4))
        as_sent = sdk_transform_us(_as_sent(kwargs), max(20, n // 10))
        typed = sdk_transform_us(kwargs, max(10, n // 50))
        sdk_out = per_call_us(lambda r=raw: construct_type(type_=ChatCompletion, value=r), n)  # type: ignore[misc]
        worst = max(worst, build + parse, streamed)
        cells = [f"{len(request.messages)} msgs"] + [
            f"{v:.1f} us" for v in (build, parse, build + parse, streamed, cold, as_sent, typed, sdk_out)
        ]
        print(" | ".join(f"{c:>12}" for c in cells))
    print()
    print("build: a step's request when the earlier messages were sent before (the provider converts each")
    print("message once; only the last step's assistant + tool message are new); cold: nothing converted yet.")
    print(f"stream (ours): build + handling the {len(chunks)} chunks of a streamed tool call + assembly.")
    print("SDK walk: the SDK's maybe_transform of the create() arguments; 'as sent' is what OpenAIProvider")
    print("passes (messages and tools in extra_body), 'if typed' is messages and tools as typed parameters.")
    print(f"worst of ours: {worst:.1f} us per step -> {'within' if worst < TARGET_US else 'OVER'} the target")

    print()
    with wire.WireServer() as server:
        k = 20 if args.quick else 100
        round_trips(server, 3, False)  # warm up imports and the connection pool
        json_ms = round_trips(server, k, False)
        sse_ms = round_trips(server, k, True)
    print("full round trip per model call over HTTP (local wire server in this process; agent loop and tool included):")
    print(f"  JSON: {json_ms:.2f} ms   SSE stream: {sse_ms:.2f} ms   ({k} runs x 2 calls each)")


if __name__ == "__main__":
    main()
