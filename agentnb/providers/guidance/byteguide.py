"""A call's grammar read one byte at a time, so any server's token text can be checked against it.

The in-process backend checks token ids against an llguidance grammar built for its own
tokenizer (:mod:`agentnb.providers.guidance.constraint`). A server's tokens arrive as text, so
:class:`ByteGuide` builds the same grammar over a tokenizer whose tokens are the 256 bytes:
whatever a server's tokenizer, its tokens are runs of bytes. Used to steer calls on a server
(:mod:`agentnb.providers.openai.steer`).

>>> from agentnb.providers.guidance.constraint import grammar_for
>>> from agentnb.tools import Tool
>>> f = Tool("f", "F.", {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
>>> guide = ByteGuide(grammar_for([f], "call"))
>>> guide.forced()
'{"name": "f", "arguments": {"x": '
>>> guide.take(guide.forced() + "12")
>>> guide.usable("3"), guide.usable("a"), guide.usable("}}\\n")  # the last: only "}}" ends the call
('3', None, '}}')
"""

from __future__ import annotations

from typing import Any


class ByteGuide:
    """An llguidance grammar read one byte at a time, so any server's token text can be checked."""

    def __init__(self, lark: str) -> None:
        import llguidance

        self._matcher = llguidance.LLMatcher(
            _byte_tokenizer(), llguidance.LLMatcher.grammar_from_lark(lark), log_level=0
        )
        if self._matcher.is_error():
            raise ValueError(f"cannot build a grammar for this call: {self._matcher.get_error()}")

    def forced(self) -> str:
        """The text the grammar allows no alternative to, here (may be empty)."""
        forced = bytes(self._matcher.compute_ff_bytes())
        return forced.decode("utf-8", errors="ignore")

    def usable(self, text: str) -> str | None:
        """``text`` if the grammar allows it next; the part of it that ends the call if only
        that part is allowed; otherwise None."""
        data = list(text.encode("utf-8"))
        if not data:
            return None
        fits = self._matcher.validate_tokens(data)
        if fits == len(data):
            return text
        if fits == 0 or not self._matcher.consume_tokens(data[:fits]):
            return None
        done = self._matcher.is_stopped()
        self._matcher.rollback(fits)
        head = bytes(data[:fits]).decode("utf-8", errors="ignore")
        return head if done and head else None

    def take(self, text: str) -> None:
        data = list(text.encode("utf-8"))
        if not self._matcher.consume_tokens(data):
            raise ValueError(f"the grammar refuses {text!r}: {self._matcher.get_error()}")

    @property
    def done(self) -> bool:
        return bool(self._matcher.is_stopped())


_TOKENIZER: Any = None


def _byte_tokenizer() -> Any:
    """An llguidance tokenizer whose tokens are the 256 bytes (and an end token)."""
    global _TOKENIZER
    if _TOKENIZER is None:
        import llguidance

        class Bytes:
            eos_token_id = 256
            bos_token_id = None
            tokens = [bytes([i]) for i in range(256)] + [b""]
            special_token_ids = (256,)

            def __call__(self, data: bytes) -> list[int]:
                return list(data)

        _TOKENIZER = llguidance.LLTokenizer(llguidance.TokenizerWrapper(Bytes()))
    return _TOKENIZER
