"""A server's chat template, rendered here, so a request can go to its plain ``/v1/completions``.

Steering a call token by token on a server (:mod:`agentnb.providers.openai.steer`) sends the
conversation as one prompt text that ends inside the assistant's reply. That needs the text the
server's chat endpoint would have built. Servers do not say which template they use
(llama-cpp-python's server has no endpoint for it), so the common families are tried and a
family is used only when the server agrees: the server's own count of prompt tokens for a
small multi-turn conversation sent to ``/v1/chat/completions`` must equal its count for our
rendering sent to ``/v1/completions`` (:func:`find_template`). ``OpenAIProvider(chat_template=
"chatml")`` names a family, which is still checked.

>>> print(TEMPLATES["chatml"].render([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}]), end="|")
<|im_start|>system
S<|im_end|>
<|im_start|>user
Hi<|im_end|>
<|im_start|>assistant
|
>>> TEMPLATES["gemma"].render([{"role": "system", "content": "S"}, {"role": "user", "content": "Hi"}])
'<start_of_turn>user\\nS\\n\\nHi<end_of_turn>\\n<start_of_turn>model\\n'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Chat = Sequence[dict[str, Any]]

#: A small conversation with every role, to compare the server's token counts on.
PROBE: tuple[dict[str, str], ...] = (
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "Name a colour."},
    {"role": "assistant", "content": "Blue."},
    {"role": "user", "content": "And a fruit?"},
)


@dataclass(frozen=True)
class ChatTemplate:
    """One family of chat templates: how each turn is written, and how the reply starts."""

    name: str
    turn: Callable[[str, str], str]
    reply: str
    start: str = ""
    #: The family has no system role: the system text opens the first user turn.
    fold_system: bool = False

    def render(self, messages: Chat) -> str:
        """The prompt text for ``messages``, ending where the assistant's reply begins."""
        turns = [(str(m.get("role", "user")), _text(m.get("content"))) for m in messages]
        if self.fold_system and turns and turns[0][0] == "system":
            system, rest = turns[0][1], turns[1:]
            if rest and rest[0][0] == "user":
                turns = [("user", f"{system}\n\n{rest[0][1]}"), *rest[1:]]
            else:
                turns = [("user", system), *rest]
        return self.start + "".join(self.turn(role, content) for role, content in turns) + self.reply


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: the text ones
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _gemma_turn(role: str, content: str) -> str:
    return f"<start_of_turn>{'model' if role == 'assistant' else role}\n{content}<end_of_turn>\n"


TEMPLATES: dict[str, ChatTemplate] = {
    t.name: t
    for t in (
        ChatTemplate("chatml", lambda r, c: f"<|im_start|>{r}\n{c}<|im_end|>\n", "<|im_start|>assistant\n"),
        ChatTemplate(
            "llama3",
            lambda r, c: f"<|start_header_id|>{r}<|end_header_id|>\n\n{c.strip()}<|eot_id|>",
            "<|start_header_id|>assistant<|end_header_id|>\n\n",
            start="<|begin_of_text|>",
        ),
        ChatTemplate("gemma", _gemma_turn, "<start_of_turn>model\n", fold_system=True),
        ChatTemplate("phi3", lambda r, c: f"<|{r}|>\n{c}<|end|>\n", "<|assistant|>\n"),
    )
}


async def prompt_tokens(provider: Any, *, chat: Chat | None = None, prompt: str | None = None) -> int:
    """The server's count of prompt tokens for a chat (``/v1/chat/completions``) or a text
    (``/v1/completions``), from a one-token request."""
    client = provider.client.with_options(max_retries=0)
    if chat is not None:
        response = await client.chat.completions.create(
            model=provider.model, messages=list(chat), max_tokens=1, temperature=0.0
        )
    else:
        response = await client.completions.create(model=provider.model, prompt=prompt, max_tokens=1, temperature=0.0)
    usage = getattr(response, "usage", None)
    count = getattr(usage, "prompt_tokens", None)
    if not isinstance(count, int) or count <= 0:
        raise ValueError("the server reports no prompt token count")
    return count


async def find_template(provider: Any, names: Sequence[str] | None = None) -> ChatTemplate | None:
    """The first family among ``names`` (default: all) whose rendering of :data:`PROBE` the
    server counts as many tokens as its own; None when none does.

    Raises what the server raises (no ``/v1/completions``, no usage): the caller decides.
    """
    names = list(names or TEMPLATES)
    # the plain endpoint first: a server without it is not sent the chat request at all
    first = await prompt_tokens(provider, prompt=TEMPLATES[names[0]].render(PROBE))
    expected = await prompt_tokens(provider, chat=PROBE)
    for name in names:
        count = first if name == names[0] else await prompt_tokens(provider, prompt=TEMPLATES[name].render(PROBE))
        if count == expected:
            return TEMPLATES[name]
    return None
