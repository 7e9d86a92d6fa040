"""The native track over OpenAI's APIs and every server that speaks them.

* :mod:`~agentnb.providers.openai.chat`: :class:`OpenAIProvider` (Chat Completions); its
  request and reply conversions (:mod:`.wire`), streams (:mod:`.stream`), errors
  (:mod:`.errors`, reported by :mod:`.failures`), structured output (:mod:`.output`), tool
  calls a server left in its text (:mod:`.text_calls`) and servers that ignore ``tools``
  (:mod:`.ignored`);
* :mod:`.responses`: the Responses API route (``api="responses"``);
* :mod:`.route`: native or UnTooled over a server, and the switch between them (what the
  provider has learnt about its server: :mod:`.route_state`);
* the server's side of the weak-model guidance (:mod:`agentnb.providers.guidance`): the
  server as the guidance's source of log-probabilities (:mod:`.source`, reading them with
  :mod:`.logprobs` and the echoed prompts of :mod:`.rank`), what the route does with the tool
  ranking and the call-or-answer decision (:mod:`.rank`, :mod:`.decide`), steering a call token
  by token (:mod:`.steer`, with the chat templates of :mod:`.templates`) and what all of it
  costs (:mod:`.cost`).

>>> from agentnb.providers.openai import OpenAIProvider
>>> OpenAIProvider("m", base_url="http://127.0.0.1:1/v1").model
'm'
"""

from __future__ import annotations

from agentnb.providers.openai.chat import OpenAIProvider, parse_completion, responses_provider, to_openai

__all__ = ["OpenAIProvider", "parse_completion", "responses_provider", "to_openai"]
