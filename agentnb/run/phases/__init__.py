"""The phases of a step of the loop, in the order :func:`agentnb.run.loop.run_loop` runs them.

Each phase is a function of the :class:`~agentnb.run.state.LoopState` that emits the events of
what it decided (``run.emit``) and leaves its outcome in that state. A phase that waits for the
model, a tool or a person is a coroutine that awaits it, after
:func:`~agentnb.run.state.said_so_far` (a stream's consumer sees its events first); the loop's
body awaits it:

1. :func:`ask` -- is a request left in the budgets; what the model is offered; its reply;
2. :func:`end` -- (a reply with no call to run) the run's answer, or one more request;
3. for each call of the reply, in order, until one settles it:
   :func:`decide` (within the limit, a known tool, valid arguments, the controller's word),
   :func:`deduplicate` (a repeat is answered from the first call), :func:`approve` (a person's or
   a policy's yes), then :func:`schedule` (an execution, or the answer settled on);
4. :func:`execute` -- the scheduled calls run: one inline, several at once, agents live;
5. :func:`append` -- what the model reads next; a direct output ends the run.

A new phase is a function of the same shape (a coroutine only if it waits), called from the
loop's body where it belongs.
May import what :mod:`agentnb.run` may; nothing outside the run imports the phases.
"""

from agentnb.run.phases.append import append
from agentnb.run.phases.ask import ask
from agentnb.run.phases.calls import Pending, approve, decide, deduplicate, pending_calls, schedule
from agentnb.run.phases.end import ANSWER_NOW, end
from agentnb.run.phases.execute import execute

__all__ = [
    "ANSWER_NOW",
    "Pending",
    "append",
    "approve",
    "ask",
    "decide",
    "deduplicate",
    "end",
    "execute",
    "pending_calls",
    "schedule",
]
