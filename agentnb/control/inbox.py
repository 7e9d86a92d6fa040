"""Steering a running agent: an inbox the loop reads before each model request.

``inbox.send(text)`` may be called from any thread or asyncio task while the run goes on. It
queues the text and wakes nothing: the loop takes what is queued just before its next model
request (after the last tool result of the step that was running, never between a call and its
result), adds each text as a user message and emits a
:class:`~agentnb.events.UserInterjected` event for it, so the transcript, the trace, the printer,
replay and fork all see it.

Rules, each a clear :class:`~agentnb.errors.InboxClosedError` or
:class:`~agentnb.errors.UserError` rather than a silent drop:

* one inbox feeds one run: a second run given an inbox that is feeding a run, or whose run
  has ended, is refused when it starts;
* messages sent before the run starts go in before its first request (after the prompt);
* a message that arrives while the model writes its final answer is not lost: the answer stays
  in the conversation and the model is asked once more, with the message;
* once the run has ended (answered, stopped or failed), ``send`` raises
  :class:`~agentnb.errors.InboxClosedError` saying so. Texts the run never read (it was stopped, or a
  budget ended it first) are in :attr:`Inbox.undelivered`.

>>> from agentnb import Agent, Inbox, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> inbox = Inbox()
>>> @tool
... def table(year: int) -> str:
...     '''The sales table of a year.'''
...     inbox.send("also check the 2024 column")  # as a person would, while the run goes on
...     return "2023: 10, 2024: 12"
>>> model = ScriptedProvider([call("table", year=2023), "2023: 10; 2024: 12"])
>>> r = Agent(model, tools=[table]).run("Sales in 2023?", inbox=inbox)
>>> [m.content for m in model.requests[1].messages[-2:]]
['2023: 10, 2024: 12', 'also check the 2024 column']
>>> inbox.send("one more thing")
Traceback (most recent call last):
...
agentnb.errors.InboxClosedError: this inbox's run has ended (answer): the message was not sent; make a new agentnb.Inbox() for the next run
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from agentnb.errors import InboxClosedError, UserError

#: What a run's stop reason says in the closed inbox's error.
_ENDED = {"cancelled": "stopped", "error": "failed"}


class Inbox:
    """Messages for a running agent (see the module): :meth:`send` from anywhere, read by the loop.

    >>> inbox = Inbox()
    >>> inbox.send("use metric units")
    >>> inbox.pending, inbox.state
    (1, 'waiting')
    """

    __slots__ = ("_lock", "_queue", "_state", "_scheduled", "undelivered", "delivered")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[str] = []
        self._state = "waiting"  # "waiting" (for its run), "running", or the ended run's stop reason
        #: Recorded texts a replay re-injects, by the depth they went in at (agentnb.timetravel).
        self._scheduled: dict[int, list[str]] = {}
        #: Texts sent that the run never read (it ended first); empty while it runs.
        self.undelivered: tuple[str, ...] = ()
        #: ``(depth, text)`` of each message the run read, in order.
        self.delivered: list[tuple[int, str]] = []

    def __repr__(self) -> str:
        return f"<agentnb.Inbox {self.state}, {self.pending} pending>"

    @property
    def state(self) -> str:
        """``waiting`` (no run yet), ``running``, or ``ended (<stop reason>)``."""
        s = self._state
        return s if s in ("waiting", "running") else f"ended ({s})"

    @property
    def pending(self) -> int:
        """How many sent messages wait for the run's next request."""
        return len(self._queue)

    @property
    def open(self) -> bool:
        """Whether :meth:`send` would be taken (the run has not ended)."""
        return self._state in ("waiting", "running")

    def send(self, text: str) -> None:
        """Queue ``text`` as a user message for the run's next model request (any thread or task).

        Raises :class:`~agentnb.errors.InboxClosedError` once the run has ended, and
        :class:`~agentnb.errors.UserError` for a text that is not a non-empty string.
        """
        with self._lock:
            if not self.open:
                raise InboxClosedError(
                    f"this inbox's run has ended ({_ENDED.get(self._state, self._state)}): the message was not "
                    "sent; make a new agentnb.Inbox() for the next run"
                )
            if not isinstance(text, str) or not text.strip():
                raise UserError(f"Inbox.send takes the message as a non-empty string, not {text!r:.60}")
            self._queue.append(text)

    # --- the run's side ------------------------------------------------------------------------

    def start(self) -> None:
        """A run begins reading this inbox (the agent calls this); a second run is refused."""
        with self._lock:
            if self._state == "running":
                raise UserError(
                    "this Inbox already feeds a run that has not ended: one inbox feeds one run; "
                    "make an agentnb.Inbox() for each run"
                )
            if not self.open:
                raise UserError(
                    f"this Inbox's run has ended ({_ENDED.get(self._state, self._state)}): "
                    "make a new agentnb.Inbox() for this run"
                )
            self._state = "running"

    def take(self, depth: int) -> list[str]:
        """What goes in before the request of step ``depth``: replayed texts, then those sent."""
        with self._lock:
            texts = self._scheduled.pop(depth, []) + self._queue
            self._queue = []
        self.delivered += [(depth, t) for t in texts]
        return texts

    def waiting(self, depth: int) -> bool:
        """Whether a message would go in before step ``depth``'s request (the loop then asks again
        rather than end with the answer the model just gave)."""
        return bool(self._queue) or depth in self._scheduled

    def schedule(self, interjections: Iterable[tuple[int, str]]) -> None:
        """Texts to go in at given depths, as a recording has them (a replay re-injects them)."""
        for depth, text in interjections:
            self._scheduled.setdefault(depth, []).append(text)

    def close(self, stop_reason: str) -> None:
        """The run ended with ``stop_reason``: later sends raise; what it never read is kept."""
        with self._lock:
            self._state = stop_reason
            self.undelivered, self._queue = tuple(self._queue), []
            self._scheduled.clear()
