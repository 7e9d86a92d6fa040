"""Guidance for weak models: what to favour, forbid or skip while a call is decoded.

One layer, used by both sources of log-probabilities: the in-process model
(:mod:`agentnb.providers.hf`, torch) and a server's logprobs (:mod:`agentnb.providers.openai`).
Nothing here imports either of them, nor torch.

* :mod:`.constraint`: the call grammar (JSON Schema of a call, llguidance);
* :mod:`.byteguide`: that grammar walked byte by byte over a server's token texts;
* :mod:`.steer`: the copy bias that steers values towards spans of the request;
* :mod:`.lists`, :mod:`.optional`: lists that repeat an item, optional arguments the request names;
* :mod:`.decide`: the call-or-answer decision from the model's own measurements;
* :mod:`.ground`: answers that favour the words of the tool results.

>>> from agentnb.providers.guidance.decide import lacks_numbers
>>> lacks_numbers({"properties": {"n": {"type": "integer"}}, "required": ["n"]}, "add some")
True
"""
