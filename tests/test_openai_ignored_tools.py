"""``tool_calling="auto"`` against a server that takes ``tools`` and never shows them to the model.

The scripted server (agentnb.testing) counts a request's tools in the prompt size it reports,
as real servers do; ``ignores_tools=True`` makes it leave them out, like llama-cpp-python's
default chat formats or a chat template with no place for tools. The SDK, the HTTP and the
probe are real.
"""

from __future__ import annotations

import asyncio
import io

import pytest

from agentnb import Agent, tool
from agentnb.events import RouteSwitched, TextDelta, ToolFinished
from agentnb.printer import TextPrinter
from agentnb.providers import OpenAIProvider
from agentnb.providers.base import Request
from agentnb.providers.openai import cost as cost_module
from agentnb.providers.openai.ignored import ignored_tools, pending, prompt_tokens
from agentnb.providers.openai.route_state import RouteState
from agentnb.testing import ScriptedServer
from agentnb.testing.server import Reply, text, tool_calls

PROSE = "I have no way to add numbers, but 2 + 3 is probably 5."
CALL = '{"name": "add", "arguments": {"a": 2, "b": 3}}'


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def provider(scripted: ScriptedServer, **options) -> OpenAIProvider:
    return OpenAIProvider("m", base_url=scripted.url, max_retries=0, timeout=20, **options)


def budgets(p: OpenAIProvider) -> list[tuple[float, float | None]]:
    """What each step of ``p`` starts with: the seconds already spent, and its guidance budget."""
    cost, steps = p._cost, []
    begin = cost.begin_step

    def each_step() -> None:
        begin()
        steps.append((cost.spent, cost.limit()))

    cost.begin_step = each_step  # type: ignore[method-assign]
    return steps


def shown(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


@pytest.mark.parametrize("stream", [False, True])
def test_auto_switches_before_any_request_with_tools_when_the_server_drops_them(stream):
    with ScriptedServer(ignores_tools=True) as server:
        p = provider(server)
        server.script(text(CALL), text('{"answer": "It is 5."}'), text(CALL), text('{"answer": "5."}'))
        out = io.StringIO()
        first = Agent(p, [add], stream=stream).run("2 + 3?", on_event=TextPrinter(out))
        second = Agent(p, [add], stream=stream).run("2 + 3 again?")
        probes = [r.body for r in server.probes]
    assert first.output == "It is 5." and second.output == "5."
    assert [e.name for e in first.events if isinstance(e, ToolFinished)] == ["add"]
    # two one-token probes, with the tools and without, in the provider's whole life; no
    # request that is answered ever carries tools (no reply is written without them, then dropped)
    assert [("tools" in b, b["max_tokens"]) for b in probes] == [(True, 1), (False, 1)]
    assert probes[0]["messages"] == probes[1]["messages"] == [{"role": "user", "content": "2 + 3?"}]
    assert [b.get("tools") is not None for b in server.bodies] == [False, False, False, False]
    switches = [e for e in first.events + second.events if isinstance(e, RouteSwitched)]
    assert len(switches) == 1 and "ignored `tools`" in switches[0].reason and p.route == "untooled"
    assert "switched to untooled tool calling" in out.getvalue()
    assert (first.usage.input_tokens, first.usage.output_tokens) == (22, 14)  # 2 replies of (11, 7)


def test_the_probes_count_against_the_first_steps_guidance_budget():
    # the time of the check ahead is the step's: what the untooled step may still spend on
    # guidance starts from it (here a budget of 0 s, so the step's guidance is never sent)
    with ScriptedServer(ignores_tools=True) as server:
        p = provider(server, guidance_budget=0.0)
        server.script(text(CALL), text('{"answer": "5"}'))
        steps = budgets(p)
        r = Agent(p, [add]).run("2 + 3?")
    assert r.output == "5" and p.route == "untooled"
    # the first step starts with the probes' time spent, the next with none
    assert steps[0][0] > 0.0 and steps[1][0] == 0.0 and len(steps) == 2


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_that_refuses_tools_is_switched_by_the_probe(stream):
    message = "registry.ollama.ai/library/gemma:2b does not support tools"
    with ScriptedServer(rejects_tools=message) as server:
        p = provider(server)
        server.script(text(CALL), text('{"answer": "5"}'))
        r = Agent(p, [add], stream=stream).run("2 + 3?")
        bodies = server.bodies
    assert r.output == "5" and p.route == "untooled"
    # the refused request is the one-token probe: no full request with tools is sent
    assert [(b.get("tools") is not None, b.get("max_tokens")) for b in bodies] == [
        (True, 1),
        (False, None),
        (False, None),
    ]
    switch = next(e for e in r.events if isinstance(e, RouteSwitched))
    assert switch.reason == message


@pytest.mark.parametrize("stream", [False, True])
def test_a_prose_answer_from_a_server_that_uses_the_tools_stays_native(stream):
    with ScriptedServer() as server:
        p = provider(server)
        server.script(text("Hello! How can I help?"), text("Hi again."))
        first = Agent(p, [add], stream=stream).run("hello")
        second = Agent(p, [add], stream=stream).run("hello again")
        probes = len(server.probes)
    assert first.output == "Hello! How can I help?" and second.output == "Hi again."
    assert p.route == "native" and probes == 2  # checked once, ahead of the first request
    assert not any(isinstance(e, RouteSwitched) for e in first.events + second.events)
    if stream:
        assert shown(first.events) == "Hello! How can I help?"


@pytest.mark.parametrize("stream", [False, True])
def test_a_named_server_that_never_drops_tools_is_checked_on_its_reply(stream):
    # Ollama refuses tools or shows them: no probe ahead; a native call proves the tools work
    with ScriptedServer() as server:
        p = provider(server, server="ollama")
        server.script(
            tool_calls(("c1", "add", '{"a": 2, "b": 3}'), content="Let me add."), text("It is 5."), text("Plain.")
        )
        first = Agent(p, [add], stream=stream).run("2 + 3?")
        second = Agent(p, [add], stream=stream).run("say something")
        probes = len(server.probes)
    assert first.output == "It is 5." and second.output == "Plain."
    assert probes == 0 and p.route == "native"
    if stream:
        assert shown(first.events).startswith("Let me add.")


@pytest.mark.parametrize("stream", [False, True])
def test_checked_on_the_reply_a_dropped_prose_reply_counts_against_the_budget(stream, monkeypatch):
    # a named server checked after its reply (the old way): the prose written without the tools
    # is dropped, its tokens counted, never shown; its time counts against the untooled step's
    # budget, and it does not set that budget (under "auto", as long as the plain reply took)
    monkeypatch.setattr(cost_module, "FLOOR", 0.5)
    with ScriptedServer(ignores_tools=True) as server:
        p = provider(server, server="vllm")
        server.script(text(PROSE, delay=1.0), text(CALL), text('{"answer": "It is 5."}'))
        steps = budgets(p)
        out = io.StringIO()
        r = Agent(p, [add], stream=stream).run("2 + 3?", on_event=TextPrinter(out))
        probes = [r.body for r in server.probes]
    assert r.output == "It is 5." and p.route == "untooled"
    assert len(probes) == 1 and "tools" not in probes[0] and probes[0]["max_tokens"] == 1
    assert [b.get("tools") is not None for b in server.bodies] == [True, False, False]
    assert (r.usage.input_tokens, r.usage.output_tokens) == (33, 21)
    assert "no way to add" not in shown(r.events) + out.getvalue() + str(r.messages)
    # steps: the native try, the untooled step that follows it (the call), the answer
    (_, first), (spent, limit), _ = steps
    assert first == 0.5 and spent >= 1.0 and limit == 0.5


def test_without_token_counts_both_sizes_are_probed():
    with ScriptedServer(ignores_tools=True) as server:
        p = provider(server, server="sglang")
        server.script(Reply(text=PROSE, usage=None), text(CALL), text('{"answer": "5"}'))
        r = Agent(p, [add]).run("2 + 3?")
        probes = [r.body for r in server.probes]
    assert r.output == "5" and p.route == "untooled"
    assert [("tools" in b) for b in probes] == [True, False]


@pytest.mark.parametrize("options", [{"tool_calling": "native"}, {"tool_calling": "untooled"}])
def test_only_auto_checks(options):
    with ScriptedServer(ignores_tools=True) as server:
        p = provider(server, **options)
        server.script(text(PROSE))
        r = Agent(p, [add]).run("2 + 3?")
        probes = len(server.probes)
    assert probes == 0 and p.route == options["tool_calling"]
    assert r.output == PROSE or options["tool_calling"] == "untooled"


def test_a_stream_cut_off_while_text_is_held_still_shows_that_text():
    with ScriptedServer(ignores_tools=True) as server:
        p = provider(server, server="vllm")  # (checked on its reply)
        server.script(Reply(text=PROSE, pieces=4, disconnect_after=3))
        r = Agent(p, [add], stream=True).run("2 + 3?")
        probes = len(server.probes)
    assert r.stop_reason == "error" and probes == 0 and p.route == "native"
    assert shown(r.events) and PROSE.startswith(shown(r.events))


def test_pending_only_for_auto_on_a_server_of_ones_own():
    request = Request(messages=[], tools=(add,))
    assert pending(RouteState("auto", True), request, "http://127.0.0.1:8080/v1")
    assert not pending(RouteState("auto", True), request, None)  # OpenAI's own API takes tools
    assert not pending(RouteState("native", True), request, "http://127.0.0.1:8080/v1")
    assert not pending(RouteState("auto", True), Request(messages=[]), "http://127.0.0.1:8080/v1")


class _Failing:
    def with_options(self, **_):
        return self

    @property
    def chat(self):
        return self

    @property
    def completions(self):
        return self

    async def create(self, **_):
        raise ConnectionError("gone")


def test_a_failed_probe_tells_nothing():
    kwargs = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{}]}
    assert asyncio.run(prompt_tokens(_Failing(), kwargs, tools=False)) is None
    assert asyncio.run(ignored_tools(_Failing(), kwargs, 40)) is None
