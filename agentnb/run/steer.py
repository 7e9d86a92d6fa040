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
