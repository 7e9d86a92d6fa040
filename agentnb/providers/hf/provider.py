"""In-process HuggingFace causal language models, decoded token by token.

:class:`TransformersProvider` runs a causal LM in the notebook's own process (CPU or GPU). It
writes only text (``supports_native_tools = False``), so :class:`~agentnb.Agent` puts the
UnTooled layer in front of it. A manual decoding loop gives it three things ``generate()``
would hide:

* **constrained decoding** (:mod:`agentnb.providers.guidance.constraint`): when the request carries an
  :class:`~agentnb.providers.OutputConstraint`, every token is masked by an llguidance grammar,
  so a call always parses and matches its tool's schema. Under ``tool_choice="auto"`` the
  provider first decides between "call" and "answer" (:mod:`agentnb.providers.guidance.decide`:
  the first token's call share, and how much better each tool explains the request than no
  tool), reports why as a :class:`~agentnb.events.CallDecision` event, then decodes only that
  branch; call arguments are steered toward the request's own values
  (:mod:`~agentnb.providers.guidance.steer`, :mod:`~agentnb.providers.guidance.optional`), and answers
  after tool results toward the results' words (:mod:`~agentnb.providers.guidance.ground`);
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
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentnb.errors import UserError
from agentnb.events import ModelLoading
from agentnb.messages import Message, Usage, UserMessage
from agentnb.providers.base import Chunk, Completion, OutputConstraint, Provider, Request, TextChunk, collect
from agentnb.providers.guidance.loops import RepeatGuard, asks_numbers
from agentnb.providers.guidance.steer import TokenTable, request_text
from agentnb.providers.hf.choose import ToolChoice
from agentnb.providers.hf.lazy import LazyModel, LoadsOnUse
from agentnb.providers.hf.loading import _require_hf, lazy_model
from agentnb.providers.hf.options import (
    AFTER_RESULTS_HINT,
    COPY_BIAS,
    DEFAULT_CALL_THRESHOLD,
    DEFAULT_CALL_THRESHOLD_AFTER_RESULTS,
    GRAMMAR_DONE,
    LOOPING,
    PICK_HINT,
    RESULT_BIAS,
    RESULTS_HINT,
    Decision,
    GenerationOptions,
)
from agentnb.providers.hf.source import InProcessSource
from agentnb.providers.hf.steering import Steering
from agentnb.providers.live import LIVE_NOTES

if TYPE_CHECKING:
    from agentnb.providers.hf.steering import Grounding

__all__ = [
    "AFTER_RESULTS_HINT",
    "COPY_BIAS",
    "DEFAULT_CALL_THRESHOLD",
    "DEFAULT_CALL_THRESHOLD_AFTER_RESULTS",
    "GRAMMAR_DONE",
    "LOOPING",
    "PICK_HINT",
    "RESULTS_HINT",
    "RESULT_BIAS",
    "Decision",
    "GenerationOptions",
    "TransformersProvider",
]

_END = object()


class TransformersProvider(LoadsOnUse, ToolChoice, Provider):
    """A HuggingFace causal LM run in-process.

    Args:
        model: a model id, a local folder, a ``.gguf`` file (loaded on the first request that
            needs it, see :mod:`agentnb.providers.hf.lazy`), a loaded model object (then pass
            ``tokenizer`` too) or a :class:`~agentnb.providers.hf.lazy.LazyModel`. A
            ``(model, tokenizer)`` tuple works as well.
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

    in_process = True  # runs on this machine: costs nothing per call
    reply_limit_setting = "max_new_tokens"
    #: :meth:`estimate_input_tokens` is exact: the prompt through the model's own tokenizer.
    counts_tokens = True

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
        if isinstance(model, LazyModel):
            self.name = name or f"hf:{model.label}"
            self.weights = model
        elif isinstance(model, (str, Path)):
            self.name = name or f"hf:{model}"
            self.weights = lazy_model(str(model), gguf_file, device, dtype)
        else:
            _require_hf("TransformersProvider")
            if tokenizer is None:
                raise UserError("pass the tokenizer with a model object: TransformersProvider(model, tokenizer)")
            self.name = name or f"hf:{getattr(model.config, '_name_or_path', '') or type(model).__name__}"
            self.weights = LazyModel.ready(model.eval(), tokenizer, self.name)
        # the weights load on the first request that needs them (agentnb.providers.hf.lazy)
        self._prefix_cache = prefix_cache
        self._made = None
        self._making = threading.Lock()
        self.options = GenerationOptions().merged(generation)
        self.supports_constraints = constrained and importlib.util.find_spec("llguidance") is not None
        #: How the last constrained ``auto`` request was decided.
        self.last_decision: Decision | None = None
        self._lock = threading.Lock()
        self._table: TokenTable | None = None
        self._call_tools: tuple[Any, ...] = ()  # the tools the call being decoded may use
        self._rankings: dict[tuple[str, str], float] = {}  # (description, query) -> score

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

    def estimate_input_tokens(self, request: Request) -> int | None:
        return len(self.encode(request.messages))  # exact: the prompt as it will be encoded

    # --- Provider --------------------------------------------------------------------------

    async def complete(self, request: Request) -> Completion:
        return await collect(self.stream(request))

    async def stream(self, request: Request) -> AsyncIterator[Chunk | Completion]:
        settings = dict(request.settings)
        pick = settings.pop(PICK_HINT, None)
        results = tuple(settings.pop(RESULTS_HINT, ()))
        after_results = bool(settings.pop(AFTER_RESULTS_HINT, False))
        if after_results:
            settings.setdefault("call_threshold", self.options.merged(settings).call_threshold_after_results)
        options = self.options.merged(settings)
        prompt: list[int] = []
        say = LIVE_NOTES.get()  # where a note goes while the request waits (None: with the reply)
        constraint = request.constraint if self.supports_constraints else None
        source = request_text(pick, request.messages)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        stop = threading.Event()
        notes: list[Any] = []  # the provider's decisions, as events for the loop

        def probe(question: str) -> list[int]:  # the conversation plus the auto decision's yes/no question
            return self.encode([*request.messages, UserMessage(question)])

        def put(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:  # the event loop is gone: nobody is listening
                stop.set()

        def work() -> None:
            # One worker thread per reply keeps the kernel responsive; the lock keeps two
            # replies from sharing the KV cache at once.
            try:
                self.load_for_request(put)  # the first request that needs the weights loads them
                prompt.extend(self.encode(request.messages))
                with self._lock:
                    tokens = self.tokens(
                        prompt, constraint, options, pick, source, results, after_results, notes, probe
                    )
                    for token in tokens:
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
                if isinstance(item, ModelLoading):
                    if say is not None:  # a run listens as the request waits
                        say(item)
                    continue
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
        yield Completion(text or None, (), usage, finish, tuple(notes))

    # --- decoding --------------------------------------------------------------------------

    def tokens(
        self,
        prompt: list[int],
        constraint: OutputConstraint | None,
        options: GenerationOptions,
        pick: dict[str, Any] | None = None,
        source: str = "",
        results: Sequence[str] = (),
        after_results: bool = False,
        notes: list[Any] | None = None,
        probe: Callable[[str], list[int]] | None = None,
    ) -> Iterator[int]:
        """Decode a reply to ``prompt`` token by token (blocking; call from a worker thread).

        ``pick`` (from UnTooled's :data:`PICK_HINT`) lets a call choose its tool first;
        ``source`` (the user's last message) is what a call's argument values may copy;
        ``results`` (the tool results just read) what prose may copy. Decisions (why it
        called or answered) are appended to ``notes`` as events; ``probe`` gives the prompt of
        the yes/no question the ``auto`` decision may ask (:data:`~agentnb.providers.guidance.decide.PROBE`).
        """
        import torch

        logits = self.cache.prefill(prompt)
        guide = None
        if constraint is not None:
            measured = InProcessSource(self, prompt, logits, probe)
            guide = self._guide(constraint, logits, options, pick, after_results, notes, measured)
        generator = _seeded_generator(options)
        steer = self._steering(guide, options, source)
        # A call still open when the budget is spent gets closing_reserve more tokens to close it.
        limit = options.max_new_tokens + (options.closing_reserve if steer is not None else 0)
        repeats = None
        if steer is None and options.loop_window > 0:
            numeric = self._token_table().numeric
            repeats = RepeatGuard(options.loop_window, numeric=numeric, numbers_asked=asks_numbers(source, results))
        ground = self._grounding(guide, options, results) if steer is None else None
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
                    if ground is not None:
                        ground.took(forced)
                    logits = self.cache.feed(forced)
                    continue
                allowed = guide.allowed()
                if steer is not None:
                    logits, allowed = steer.adjust(logits, allowed, closing=produced >= options.max_new_tokens)
                logits = logits.masked_fill(~torch.from_numpy(allowed).to(logits.device), float("-inf"))
            if ground is not None:
                logits = ground.adjust(logits)
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
            elif ground is not None:
                ground.took([token])
            if repeats is not None and repeats.looping(token):
                yield LOOPING
                return
            logits = self.cache.feed([token])

    def _steering(self, guide: Any, options: GenerationOptions, source: str) -> Steering | None:
        """Closing and copying for a call or a structured answer (:mod:`agentnb.providers.guidance.steer`); None for text."""
        if guide is None or guide.mode not in ("call", "output"):
            return None
        from agentnb.providers.guidance.call_bias import CallBias

        table = self._token_table()
        return Steering(table, CallBias(source, self._call_tools, table, options.copy_bias))

    def _grounding(self, guide: Any, options: GenerationOptions, results: Sequence[str]) -> Grounding | None:
        """The result bias for prose after tool results (:mod:`agentnb.providers.guidance.ground`)."""
        if not results or not options.result_bias or (guide is not None and guide.mode in ("call", "output")):
            return None
        from agentnb.providers.guidance.ground import ResultBias
        from agentnb.providers.hf.steering import Grounding

        return Grounding(self._token_table(), ResultBias(results, self._token_table(), options.result_bias))

    def _token_table(self) -> TokenTable:
        if self._table is None:
            self._table = TokenTable(self.tokenizer, self.vocab_size)
        return self._table

    def _decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))


def _seeded_generator(options: GenerationOptions) -> Any:
    """The random generator that sampling draws from (None: greedy decoding draws nothing)."""
    if options.temperature <= 0:
        return None
    import torch

    generator = torch.Generator(device="cpu")
    generator.manual_seed(options.seed if options.seed is not None else torch.seed())
    return generator


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
