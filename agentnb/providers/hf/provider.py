"""In-process HuggingFace causal language models, decoded token by token.

:class:`TransformersProvider` runs a causal LM in the notebook's own process (CPU or GPU). It
writes only text (``supports_native_tools = False``), so :class:`~agentnb.Agent` puts the
UnTooled layer in front of it. A manual decoding loop gives it three things ``generate()``
would hide:

* **constrained decoding** (:mod:`agentnb.providers.hf.constraint`): when the request carries an
  :class:`~agentnb.providers.OutputConstraint`, every token is masked by an llguidance grammar,
  so a call always parses and matches its tool's schema. Under ``tool_choice="auto"`` the
  provider first scores "call" against "answer" on the first token's distribution (the
  probability mass of tokens that start a call), then decodes only that branch;
* **prefix KV-cache reuse** (:mod:`agentnb.providers.hf.cache`): each step of a run re-sends the
  growing conversation; only the tokens after the shared prefix are recomputed;
* **streaming** of the decoded text, and token usage.

>>> from agentnb.providers.hf import GenerationOptions
>>> GenerationOptions().merged({"temperature": 0.7}).temperature
0.7
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import Message, Usage, UserMessage
from agentnb.providers.base import Chunk, Completion, OutputConstraint, Provider, Request, TextChunk, collect
from agentnb.providers.hf.loading import _require_hf, load_model
from agentnb.providers.hf.steer import CopyBias, RepeatGuard, Steering, TokenTable

#: Share of the first token's probability that must start a call for ``auto`` to call a tool.
#: Small on purpose: a chatty small model puts almost all its mass on prose even when a tool is
#: plainly needed; measured with SmolLM2-135M (benchmarks/untooled_accuracy.py), requests that
#: need a tool mostly gave shares of 0.003-0.08, chit-chat 0.000-0.001.
DEFAULT_CALL_THRESHOLD = 0.0015
#: The same after tool results: then answering is the norm, and a weak model that is let call
#: at the slightest chance repeats its call until the limit (measured: SmolLM2 gave shares of
#: 0.53, then 0.89, for repeating the call it had just made).
DEFAULT_CALL_THRESHOLD_AFTER_RESULTS = 0.9
#: Request setting UnTooled adds (to providers with ``understands_untooled_hints``) when the
#: conversation ends with tool results.
AFTER_RESULTS_HINT = "untooled_after_tool_results"
#: Request setting UnTooled adds when a single call must choose among several tools:
#: ``{"query": <the user's request>, "prompts": {<tool name>: <its description, for ranking>}}``.
PICK_HINT = "untooled_pick"
#: Yielded by :meth:`TransformersProvider.tokens` when the grammar ended the reply.
GRAMMAR_DONE = -1
#: Yielded by :meth:`TransformersProvider.tokens` when prose was stopped for repeating itself.
LOOPING = -2
#: Default :attr:`GenerationOptions.copy_bias`.
COPY_BIAS = 6.0
_END = object()


@dataclass(frozen=True, slots=True)
class GenerationOptions:
    """How tokens are chosen. ``temperature=0`` (the default) is greedy decoding.

    Any field can be overridden per request through ``Request.settings`` (an Agent's
    ``settings=``).
    """

    max_new_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    seed: int | None = None
    #: ``auto`` calls a tool when at least this share of the first token's probability mass
    #: starts a call (constrained decoding only).
    call_threshold: float = DEFAULT_CALL_THRESHOLD
    #: ... when the conversation ends with tool results.
    call_threshold_after_results: float = DEFAULT_CALL_THRESHOLD_AFTER_RESULTS
    #: Pick the function before writing a call (when UnTooled sends :data:`PICK_HINT`): rank
    #: the tools (:meth:`TransformersProvider.rank_tools`), then decode only the best one's
    #: call. Off, the grammar lets the model choose the name greedily token by token.
    pick_tool_first: bool = True
    #: Logit bonus for call tokens that copy a span of the user's last message into an argument
    #: value, or close the value where the span ends (:mod:`agentnb.providers.hf.steer`); 0: off.
    copy_bias: float = COPY_BIAS
    #: A call still unfinished after ``max_new_tokens`` gets up to this many more tokens, and
    #: they may only close it (constrained decoding only).
    closing_reserve: int = 16
    #: Stop prose whose last this many tokens have been written twice before (0: never).
    loop_window: int = 32

    def merged(self, settings: dict[str, Any]) -> GenerationOptions:
        known = {f.name for f in fields(self)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise UserError(f"unknown generation settings {unknown}; known: {sorted(known)}")
        return replace(self, **settings) if settings else self


@dataclass(frozen=True, slots=True)
class Decision:
    """How ``auto`` decided between calling a tool and answering (for benchmarks and traces)."""

    mode: str
    call_share: float | None = None
    #: The tool picked before decoding the arguments, when several were on offer.
    tool: str | None = None


class TransformersProvider(Provider):
    """A HuggingFace causal LM run in-process.

    Args:
        model: a model id, a local folder, a ``.gguf`` file, or a loaded model object (then
            pass ``tokenizer`` too). A ``(model, tokenizer)`` tuple works as well.
        tokenizer: the tokenizer, when ``model`` is an object.
        gguf_file: the GGUF file name inside the folder or repo ``model`` names.
        device: ``"cpu"``, ``"cuda"``, ...; default: CUDA when available.
        dtype: a torch dtype; default float32 on CPU, bfloat16 on GPU.
        prefix_cache: reuse the KV cache of the shared prefix between calls.
        constrained: honour :attr:`Request.constraint` (needs ``llguidance``).
        name: shown in events; default ``hf:<model>``.
        **generation: :class:`GenerationOptions` fields (``max_new_tokens``, ``temperature``...).

    Example (needs the ``hf`` extra and a model; not run here)::

        provider = TransformersProvider("HuggingFaceTB/SmolLM2-135M-Instruct")
        Agent(provider, tools=[weather]).run("Weather in Paris?")
    """

    supports_native_tools = False
    supports_streaming = True
    #: Reads :data:`AFTER_RESULTS_HINT` from request settings (set by UnTooled).
    understands_untooled_hints = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        gguf_file: str | None = None,
        device: str | None = None,
        dtype: Any = None,
        prefix_cache: bool = True,
        constrained: bool = True,
        name: str | None = None,
        **generation: Any,
    ) -> None:
        if isinstance(model, tuple) and tokenizer is None and len(model) == 2:
            model, tokenizer = model
        if isinstance(model, (str, Path)):
            self.name = name or f"hf:{model}"
            model, tokenizer = load_model(str(model), gguf_file=gguf_file, device=device, dtype=dtype)
        else:
            _require_hf("TransformersProvider")
            if tokenizer is None:
                raise UserError("pass the tokenizer with a model object: TransformersProvider(model, tokenizer)")
            self.name = name or f"hf:{getattr(model.config, '_name_or_path', '') or type(model).__name__}"
        from agentnb.providers.hf.cache import PrefixCache

        self.model = model.eval()
        self.tokenizer = tokenizer
        self.options = GenerationOptions().merged(generation)
        self.supports_constraints = constrained and importlib.util.find_spec("llguidance") is not None
        self.cache = PrefixCache(model, enabled=prefix_cache)
        self.eos_ids = _eos_ids(model, tokenizer)
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        #: How the last constrained ``auto`` request was decided.
        self.last_decision: Decision | None = None
        self._lock = threading.Lock()
        self._table: TokenTable | None = None
        self._rankings: dict[tuple[tuple[str, ...], str], list[float]] = {}

    # --- prompt ----------------------------------------------------------------------------

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """The prompt token ids for ``messages``, through the model's chat template."""
        chat = [_as_chat(m) for m in messages]
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            try:
                text = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            except Exception:  # templates without a system role (e.g. Gemma) refuse it
                text = tok.apply_chat_template(_fold_system(chat), tokenize=False, add_generation_prompt=True)
        else:
            text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in chat)
            text += "<|im_start|>assistant\n"
        return list(tok.encode(text, add_special_tokens=False))

    # --- Provider --------------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        return await collect(self.stream(request))

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        settings = dict(request.settings)
        pick = settings.pop(PICK_HINT, None)
        if settings.pop(AFTER_RESULTS_HINT, False):
            settings.setdefault("call_threshold", self.options.merged(settings).call_threshold_after_results)
        options = self.options.merged(settings)
        prompt = self.encode(request.messages)
        constraint = request.constraint if self.supports_constraints else None
        source = next((m.content for m in reversed(request.messages) if isinstance(m, UserMessage)), "")
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()

        def put(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the event loop is gone: nobody is listening
                stop.set()

        def work() -> None:
            # One worker thread per reply keeps the kernel responsive; the lock keeps two
            # replies from sharing the KV cache at once.
            try:
                with self._lock:
                    for token in self.tokens(prompt, constraint, options, pick, source):
                        put(token)
                        if stop.is_set():
                            break
                put(_END)
            except BaseException as exc:
                put(exc)

        worker = loop.run_in_executor(None, work)
        generated: list[int] = []
        count = 0
        shown = ""
        finish = "length"
        try:
            while True:
                item = await queue.get()
                if item is _END:
                    break
                if isinstance(item, BaseException):
                    raise item
                if item in (GRAMMAR_DONE, LOOPING):
                    finish = "stop" if item == GRAMMAR_DONE else "repetition"
                    continue
                count += 1
                if item in self.eos_ids:
                    finish = "stop"
                    continue
                generated.append(item)
                text = self._decode(generated)
                if len(text) > len(shown) and not text.endswith("\ufffd"):  # wait for whole characters
                    yield TextChunk(text[len(shown) :])
                    shown = text
        finally:
            stop.set()
        await worker
        text = self._decode(generated)
        if len(text) > len(shown):
            yield TextChunk(text[len(shown) :])
        usage = Usage(len(prompt), count)
        yield Completion(text or None, (), usage, finish)

    # --- decoding --------------------------------------------------------------------------

    def tokens(
        self,
        prompt: list[int],
        constraint: OutputConstraint | None,
        options: GenerationOptions,
        pick: dict[str, Any] | None = None,
        source: str = "",
    ) -> Iterator[int]:
        """Decode a reply to ``prompt`` token by token (blocking; call from a worker thread).

        ``pick`` (from UnTooled's :data:`PICK_HINT`) lets a call choose its tool first;
        ``source`` (the user's last message) is what a call's argument values may copy.
        """
        import torch

        logits = self.cache.prefill(prompt)
        guide = self._guide(constraint, logits, options, pick) if constraint is not None else None
        generator = None
        if options.temperature > 0:
            generator = torch.Generator(device="cpu")
            generator.manual_seed(options.seed if options.seed is not None else torch.seed())
        steer = self._steering(guide, options, source)
        # A call still open when the budget is spent gets closing_reserve more tokens to close it.
        limit = options.max_new_tokens + (options.closing_reserve if steer is not None else 0)
        repeats = RepeatGuard(options.loop_window) if steer is None and options.loop_window > 0 else None
        produced = 0
        while produced < limit:
            if guide is not None:
                forced = guide.forced()[: limit - produced]
                if forced:  # the grammar leaves no choice: feed them all in one forward pass
                    for token in forced:
                        guide.advance(token)
                        yield token
                    produced += len(forced)
                    if guide.finished:
                        yield GRAMMAR_DONE
                        return
                    if steer is not None:
                        steer.took(forced)
                    logits = self.cache.feed(forced)
                    continue
                allowed = guide.allowed()
                if steer is not None:
                    logits, allowed = steer.adjust(logits, allowed, closing=produced >= options.max_new_tokens)
                logits = logits.masked_fill(~torch.from_numpy(allowed).to(logits.device), float("-inf"))
            token = _pick(logits, options, generator)
            if guide is not None:
                guide.advance(token)
            yield token
            produced += 1
            if guide is not None and guide.finished:
                yield GRAMMAR_DONE
                return
            if token in self.eos_ids:
                return
            if steer is not None:
                steer.took([token])
            elif repeats is not None and repeats.looping(token):
                yield LOOPING
                return
            logits = self.cache.feed([token])

    def _steering(self, guide: Any, options: GenerationOptions, source: str) -> Steering | None:
        """Closing and copying for a call or a structured answer (:mod:`agentnb.providers.hf.steer`); None for text."""
        if guide is None or guide.mode not in ("call", "output"):
            return None
        if self._table is None:
            self._table = TokenTable(self.tokenizer, self.vocab_size)
        bias = CopyBias(source, self._table, options.copy_bias) if options.copy_bias and source else None
        return Steering(self._table, bias)

    def _guide(
        self, constraint: OutputConstraint, logits: Any, options: GenerationOptions, pick: dict[str, Any] | None = None
    ) -> Any:
        tools = constraint.tools
        choice = constraint.tool_choice
        if choice not in ("auto", "required", "none"):
            tools = tuple(t for t in tools if t.name == choice)
        compiler = _compiler(self.tokenizer, self.vocab_size, self.eos_ids)
        output = constraint.output
        if choice == "none" or not tools:
            return compiler.guide((), "text", output=output)
        if choice != "auto":
            tools = self._narrow(tools, pick, options) if not constraint.parallel else tools
            self.last_decision = Decision("call", None, tools[0].name if len(tools) == 1 else None)
            return compiler.guide(tools, "call", parallel=constraint.parallel)
        import torch

        probs = torch.softmax(logits.float(), dim=-1)
        call = torch.from_numpy(compiler.guide(tools, "call").allowed()).to(probs.device)
        text = torch.from_numpy(compiler.guide(tools, "text").allowed()).to(probs.device)
        p_call, p_text = float(probs[call].sum()), float(probs[text & ~call].sum())
        share = p_call / (p_call + p_text) if p_call + p_text > 0 else 0.0
        mode = "call" if share >= options.call_threshold else "text"
        picked = None
        if mode == "call":
            tools = self._narrow(tools, pick, options) if not constraint.parallel else tools
            picked = tools[0].name if len(tools) == 1 else None
        self.last_decision = Decision(mode, share, picked)
        # "answer" was weighed as prose; with an output schema the answer is its JSON value.
        return compiler.guide(tools, mode, parallel=constraint.parallel, output=output)

    def _narrow(self, tools: Sequence[Any], pick: dict[str, Any] | None, options: GenerationOptions) -> Sequence[Any]:
        """The one tool a single call will use, when UnTooled sent what to rank the tools by."""
        if pick is None or len(tools) < 2 or not options.pick_tool_first:
            return tools
        prompts = pick["prompts"]
        if any(t.name not in prompts for t in tools):
            return tools
        scores = self.rank_tools([prompts[t.name] for t in tools], pick["query"])
        return (tools[max(range(len(tools)), key=scores.__getitem__)],)

    def rank_tools(self, descriptions: Sequence[str], query: str) -> list[float]:
        """How well each tool explains the user's request: ``log P(query | description)``.

        Scoring the request given each tool's description (a "noisy channel" choice) picks the
        right function among candidates more often than letting a small model write the name:
        measured with SmolLM2-135M on the fc cases' "multiple" category, 31/34 right against
        the greedy name's 26/34 (and 23/34 for the mean log-probability of the whole name).
        One batched forward pass, outside the prefix cache; the scores are remembered, so the
        later steps of a run (same request, same tools) do not pay for it again.
        """
        key = (tuple(descriptions), query)
        if key in self._rankings:
            return self._rankings[key]
        import torch

        tok = self.tokenizer
        asked = list(tok.encode(query, add_special_tokens=False))
        heads = [list(tok.encode(d, add_special_tokens=False)) for d in descriptions]
        rows = [head + asked for head in heads]
        width = max(len(r) for r in rows)
        # Right padding: the pad tokens come after everything scored, so no mask is needed.
        batch = torch.tensor([r + [r[-1]] * (width - len(r)) for r in rows], device=self.model.device)
        with torch.inference_mode():
            logits = self.model(input_ids=batch, use_cache=False).logits.float()
        logprobs = torch.log_softmax(logits[:, :-1], dim=-1).gather(2, batch[:, 1:].unsqueeze(-1)).squeeze(-1)
        scores = [float(logprobs[i, len(head) - 1 : len(head) + len(asked) - 1].sum()) for i, head in enumerate(heads)]
        if len(self._rankings) >= 64:
            self._rankings.clear()
        self._rankings[key] = scores
        return scores

    def _decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))


def _pick(logits: Any, options: GenerationOptions, generator: Any) -> int:
    import torch

    if generator is None:
        return int(torch.argmax(logits))
    scores = logits / options.temperature
    if options.top_k > 0:
        kth = torch.topk(scores, min(options.top_k, scores.numel())).values[-1]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if options.top_p < 1.0:
        ordered, index = torch.sort(scores, descending=True)
        cumulative = torch.softmax(ordered, dim=-1).cumsum(-1)
        drop = cumulative - torch.softmax(ordered, dim=-1) > options.top_p
        scores = scores.scatter(0, index[drop], float("-inf"))
    probs = torch.softmax(scores, dim=-1).cpu()
    return int(torch.multinomial(probs, 1, generator=generator))


def _as_chat(m: Message) -> dict[str, str]:
    if m.role == "tool":  # direct use without UnTooled: a template may have no tool role
        return {"role": "user", "content": f"Result of {m.name}:\n{m.content}"}
    return {"role": m.role, "content": m.content or ""}


def _fold_system(chat: list[dict[str, str]]) -> list[dict[str, str]]:
    if not chat or chat[0]["role"] != "system":
        return chat
    system, rest = chat[0]["content"], chat[1:]
    if rest and rest[0]["role"] == "user":
        return [{"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}, *rest[1:]]
    return [{"role": "user", "content": system}, *rest]


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    ids: set[int] = set()
    for value in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif isinstance(value, (list, tuple)):
            ids.update(int(v) for v in value)
    return frozenset(ids)


_COMPILERS: dict[int, tuple[Any, Any]] = {}


def _compiler(tokenizer: Any, vocab_size: int, eos_ids: frozenset[int]) -> Any:
    """One grammar compiler per tokenizer (building llguidance's tokenizer takes ~1 s)."""
    from agentnb.providers.hf.constraint import GrammarCompiler

    entry = _COMPILERS.get(id(tokenizer))
    if entry is None or entry[0] is not tokenizer:
        entry = (tokenizer, GrammarCompiler(tokenizer, vocab_size, sorted(eos_ids)))
        _COMPILERS[id(tokenizer)] = entry
    return entry[1]


# --- loading -------------------------------------------------------------------------------
