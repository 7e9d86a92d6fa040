"""A run's inbox (:mod:`agentnb.control.inbox`) as the agent opens and closes it.

:func:`steered` wraps a run's items: the inbox is taken by the run as it starts (a second run is
refused) and closed with the run's stop reason however it ends, so a later ``send`` says so.
:func:`inbox_for` gives a replayed run (:func:`agentnb.replay`) the messages its recording read,
at their steps, so that its requests match the recorded ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from agentnb.control.inbox import Inbox
from agentnb.run.result import RunResult


def inbox_for_sink(inbox: Inbox | None, sink: Any) -> Inbox | None:
    """A consumer that shows a box to steer the run from (the trace widget's ``take_inbox``)
    takes the run's inbox, one of its own where the run has none."""
    take = getattr(sink, "take_inbox", None)
    if take is None:
        return inbox
    inbox = inbox if inbox is not None else Inbox()
    take(inbox)
    return inbox


def inbox_for(provider: Any, inbox: Inbox | None) -> Inbox | None:
    """The inbox a run reads: ``inbox``, with a replay's recorded messages scheduled in (a replay
    with none given gets one of its own)."""
    recorded = getattr(provider, "interjections", ())
    if not recorded:
        return inbox
    if inbox is None:
        inbox = Inbox()
        inbox.start()
    inbox.schedule(recorded)
    return inbox


async def steered(items: AsyncIterator[Any], inbox: Inbox) -> AsyncIterator[Any]:
    """``items`` (a run's events and result) with ``inbox`` open for exactly that run."""
    inbox.start()
    reason = ""
    try:
        async with aclosing(items) as each:  # type: ignore[type-var]
            async for item in each:
                if isinstance(item, RunResult):
                    reason = item.stop_reason
                yield item
    except (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
        reason = reason or "cancelled"  # (after the result: the consumer took it and left)
        raise
    finally:
        inbox.close(reason or "error")  # another exception on the way out: the run failed
