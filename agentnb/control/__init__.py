"""Control of a run from outside the model: approval of calls, budgets, and the price of calls.

Owns :mod:`~agentnb.control.approval` (who says yes before a call runs),
:mod:`~agentnb.control.inbox` (a person's messages to a running agent),
:mod:`~agentnb.control.limits` (requests, tokens, tool calls, cost, wall time) and
:mod:`~agentnb.control.cost` (prices from ``genai-prices``). May import errors and messages
only; providers and the run import it.
"""
