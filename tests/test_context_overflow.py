"""A server's context-length error (issue 47 item 5): one compaction and a retry, the window it
states kept for the rest of the run; else ContextOverflow naming the tokens and the window."""

from __future__ import annotations

import importlib.util

import pytest
from server_process import free_port, llama_cpp_server, running

from agentnb import Agent, Compaction, ContextOverflow, ProviderError, replay, tool
from agentnb.context.overflow import overflow_of
from agentnb.providers import OpenAIProvider
from agentnb.testing.server import Reply, ScriptedServer, text, tool_calls

WINDOW = 4000  # tokens, as the server counts them (4 characters a token)


@tool
def read(n: int) -> str:
    """Read chunk n."""
    return f"chunk {n} " + "x" * 6000  # 1,500 tokens to the server


def script(n: int) -> list[Reply]:
    return [*[tool_calls(("read", {"n": i}, f"c{i}")) for i in range(n)], text("done")]


def run(server: ScriptedServer, policy: Compaction | None, n: int = 5, **kw: object):
    server.script(*script(n))
    model = OpenAIProvider("wire", base_url=server.url, api_key="sk-secret-overflow", max_retries=0)
    return Agent(model, tools=[read], context=policy, system="Read.", **kw).run("Read every chunk.")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("said", "tokens", "window"),
    [
        # OpenAI (code context_length_exceeded), vLLM, llama-cpp-python's server
        (
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens.",
            9120,
            8192,
        ),
        (
            "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the messages, 100 in the completion).",
            2100,
            2048,
        ),
        (
            "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 300000 tokens.",
            300000,
            272000,
        ),
        # llama.cpp's server, three builds
        ("request (2100 tokens) exceeds the available context size (2048 tokens), try increasing it", 2100, 2048),
        ("request (2100 tokens) exceeds context size (2048 tokens)", 2100, 2048),
        ("the request exceeds the available context size, try increasing it", None, None),
        ("input (5000 tokens) is larger than the max context size (4096 tokens). skipping", 5000, 4096),
        # Anthropic, Gemini
        ("prompt is too long: 215000 tokens > 200000 maximum", 215000, 200000),
        ("The input token count (300000) exceeds the maximum number of tokens allowed (1048576).", 300000, 1048576),
    ],
)
def test_the_servers_words_are_read(said, tokens, window):
    over = overflow_of(ProviderError(f"http://127.0.0.1:8080/v1 refused the request (400): {said}", status=400))
    assert over is not None and (over.tokens, over.window) == (tokens, window) and over.text == said


def test_other_errors_are_not_overflows():
    assert overflow_of(ProviderError("model 'x' not found", status=404)) is None
    assert overflow_of(ProviderError("context missing in the template", status=400)) is None


@pytest.mark.parametrize("style", ["openai", "llamacpp"])
def test_without_a_policy_the_run_ends_with_context_overflow(style):
    with ScriptedServer(window=WINDOW, overflow=style) as server:
        result = run(server, None)
    err = result.exception
    assert isinstance(err, ContextOverflow) and not isinstance(err, ProviderError)
    assert result.stop_reason == "error" and err.window == WINDOW and err.tokens == server.sizes[-1] > WINDOW
    assert f"({err.tokens:,} tokens) does not fit the context window (4,000 tokens)" in str(err)
    assert "no context policy" in str(err) and err.__cause__ is None and err.__context__ is None  # no HTTP error
    assert len(server.sizes) == 4  # it ended at the step that passed the window


@pytest.mark.parametrize(("style", "stream"), [("openai", False), ("llamacpp", True)])
def test_an_overflow_compacts_once_retries_and_keeps_the_window(style, stream):
    with ScriptedServer(window=WINDOW, overflow=style) as server:
        result = run(server, Compaction(), stream=stream)
    assert result.output == "done" and result.stop_reason == "answer"
    first, *later = [e for e in result.events if e.kind == "context_compacted"]
    assert first.depth == 3 and first.reason.startswith("overflow: ") and first.window == WINDOW
    assert str(server.sizes[3]) in first.reason and first.tokens_before == server.sizes[3] > WINDOW
    assert server.sizes[4] <= WINDOW  # the retry fitted
    # the window the server stated is the run's from then on: later steps compact before sending
    assert later and all(e.reason == "at=0.8" and e.window == WINDOW for e in later)
    assert max(server.sizes[4:]) <= WINDOW and len(server.sizes) == 7  # one refusal, six answers
    assert "sk-secret-overflow" not in str(result.to_dict())


def test_a_replay_of_an_overflow_run_refuses_and_compacts_again():
    with ScriptedServer(window=WINDOW) as server:
        first = run(server, Compaction())
    again = Agent(replay(first), tools=[read], context=Compaction(), system="Read.").run("Read every chunk.")
    assert again.output == "done", again.error
    mine = [(e.depth, e.steps, e.reason, e.messages) for e in again.events if e.kind == "context_compacted"]
    assert mine == [(e.depth, e.steps, e.reason, e.messages) for e in first.events if e.kind == "context_compacted"]


def test_a_cassette_records_the_refusal_and_answers_the_run_offline(tmp_path):
    from agentnb import cassette
    from agentnb.testing import ScriptedProvider

    path = tmp_path / "calls.jsonl"
    with ScriptedServer(window=WINDOW) as server, cassette(path, mode="once"):
        first = run(server, Compaction())
    with cassette(path, mode="replay"):
        again = Agent(ScriptedProvider([]), tools=[read], context=Compaction(), system="Read.").run("Read every chunk.")
    assert again.output == "done", again.error
    mine = [(e.depth, e.steps, e.reason, e.messages) for e in again.events if e.kind == "context_compacted"]
    assert mine == [(e.depth, e.steps, e.reason, e.messages) for e in first.events if e.kind == "context_compacted"]
    assert "sk-secret-overflow" not in path.read_text()


def test_an_overflow_that_states_no_window():
    said = "the request exceeds the available context size, try increasing it"
    refused = Reply(status=400, error=said, error_type="exceed_context_size_error")
    with ScriptedServer() as server:  # unknown window, and the server does not say it
        server.script(tool_calls(("read", {"n": 0}, "c0")), refused)
        model = OpenAIProvider("wire", base_url=server.url, api_key="sk-x", max_retries=0)
        result = Agent(model, tools=[read], context=Compaction()).run("Read.")
    err = result.exception
    assert isinstance(err, ContextOverflow) and err.window is None
    assert "the window is unknown and the server did not state it" in str(err) and said in str(err)
    with ScriptedServer() as server:  # a window given, but wrong: compacted once, refused again
        server.script(*[tool_calls(("read", {"n": i}, f"c{i}")) for i in range(3)], refused, refused)
        model = OpenAIProvider("wire", base_url=server.url, api_key="sk-x", max_retries=0)
        result = Agent(model, tools=[read], context=Compaction(), context_window=100_000).run("Read.")
    err = result.exception
    assert isinstance(err, ContextOverflow) and "compacted once and sent again, it still did not fit" in str(err)
    assert [e.reason for e in result.events if e.kind == "context_compacted"] == [f"overflow: {said}"]


# -- a real llama.cpp server ------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_llama():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (./dev setup builds it)")
    port = free_port()
    with running(llama_cpp_server(port), f"http://127.0.0.1:{port}/v1") as url:  # --n_ctx 2048
        yield url


def test_a_long_conversation_fits_a_2048_token_llama_cpp_server(small_llama):
    notes = [f"Note {i}: " + " ".join(f"item{i}x{k}" for k in range(130)) for i in range(6)]
    history: list[dict] = [
        {"role": "user", "content": "I will give you notes."},
        {"role": "assistant", "content": "OK."},
    ]
    for note in notes:
        history += [{"role": "user", "content": note}, {"role": "assistant", "content": "Noted."}]
    model = OpenAIProvider("smollm2", base_url=small_llama, settings={"max_tokens": 8, "temperature": 0}, timeout=300)
    failed = Agent(model).run("Say OK.", history=history)
    err = failed.exception
    assert isinstance(err, ContextOverflow) and err.window == 2048 and err.tokens > 2048, failed.error
    done = Agent(model, context=Compaction(to=0.25)).run("Say OK.", history=history)  # a short prompt: fast
    assert done.stop_reason == "answer" and done.output.strip(), done.error
    (event,) = [e for e in done.events if e.kind == "context_compacted"]
    assert event.window == 2048 and "drop" in event.steps and event.tokens_after < 2048
