"""Guidance for weak models: what to favour, forbid or skip while a call is decoded.

One layer, written once against one interface (:mod:`.source`: :class:`~.source.LogprobSource`,
"the log-probabilities of these continuations" and "the next-token distribution", plus what a
step would cost), with two sources behind it: the in-process model
(:class:`agentnb.providers.hf.source.InProcessSource`: torch, the prefix cache) and a server's
logprobs (:class:`agentnb.providers.openai.source.ServerSource`). Nothing here imports either
backend, nor torch.

* :mod:`.source`: the interface, and :class:`~.source.Alternatives` (a top-k distribution);
* :mod:`.rank`: which tool fits the request (scored under each tool's description);
* :mod:`.call_or_answer`: the call-or-answer decision, measured; :mod:`.decide`: its rule;
* :mod:`.call_bias`: the bonuses that steer a call's values, from :mod:`.steer` (the copy
  bias), :mod:`.lists` (lists that repeat an item) and :mod:`.optional` (optional arguments the
  request names); each source applies them its own way (logits in-process, alternatives on a server);
* :mod:`.constraint`: the call grammar (JSON Schema of a call, llguidance); :mod:`.byteguide`:
  that grammar walked byte by byte over a server's token texts;
* :mod:`.partial_json`: where a call being decoded stands (which value, how far written);
* :mod:`.ground`: answers that favour the words of the tool results (in-process only).

>>> from agentnb.providers.guidance.decide import lacks_numbers
>>> lacks_numbers({"properties": {"n": {"type": "integer"}}, "required": ["n"]}, "add some")
True
"""
