"""What a provider reports *while* a model request is still under way: retries as they wait, and
an in-process model loading its weights.

The retry layer (:mod:`agentnb.providers.retry`) sleeps between attempts. Reported with the
completion, a retry would reach the trace only once the request had succeeded, seconds later.
For a provider that may retry (:func:`may_retry`), the loop sends the request through
:func:`with_notes`: the request goes on in a task, and each note the provider hands to
:data:`LIVE_NOTES` meanwhile comes out of the run's event stream at once, before the wait.
A provider that cannot retry (scripted, in-process) is called directly: no task, no cost.

>>> import asyncio
>>> from agentnb.events import RequestRetried
>>> async def complete():
...     LIVE_NOTES.get()(RequestRetried(0, "p", 1, 2, "rate limited", 0.01, 429))
...     await asyncio.sleep(0.01)
...     return "done"
>>> async def main():
...     return [getattr(x, "kind", x) async for x in with_notes(one(complete))]
>>> asyncio.run(main())
['request_retried', 'done']
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Where a provider hands a note during a request (None: attach it to the completion instead).
LIVE_NOTES: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "agentnb_live_notes", default=None
)


def may_retry(provider: Any, _depth: int = 0) -> bool:
    """Whether ``provider`` (or one it wraps: a fallback's, an UnTooled layer's) may say something
    while a request waits: a retry, or an in-process model's weights loading on this request."""
    says = bool(getattr(provider, "max_retries", 0) or getattr(provider, "loads_on_request", False))
    if says or _depth > 8:
        return says
    inner = [getattr(provider, "inner", None), *getattr(provider, "providers", ())]
    return any(p is not None and may_retry(p, _depth + 1) for p in inner)


async def noting(request: Awaitable[T], note: Callable[[Any], None]) -> T:
    """``await request`` with its notes handed to ``note`` as they come: for a consumer that
    takes events by call, the same timing as :func:`with_notes` without its task and stream."""
    token = LIVE_NOTES.set(note)
    try:
        return await request
    finally:
        LIVE_NOTES.reset(token)


async def one(make: Callable[..., Awaitable[T]], *args: Any) -> AsyncIterator[T]:
    """``await make(*args)`` as a one-item stream."""
    yield await make(*args)


async def with_notes(items: AsyncIterator[T]) -> AsyncIterator[T | Any]:
    """``items``, with the notes reported to :data:`LIVE_NOTES` while they are awaited, in time."""
    # One task (the first item) and one future per wait: no queue, no getter task, no
    # asyncio.wait, as this runs for every model request (benchmarks/eval_throughput.py).
    notes: collections.deque[Any] = collections.deque()
    waiter: list[asyncio.Future[None] | None] = [None]

    def wake(_: Any = None) -> None:
        future = waiter[0]
        if future is not None and not future.done():
            future.set_result(None)

    def note(item: Any) -> None:
        notes.append(item)
        wake()

    context = contextvars.copy_context()
    context.run(LIVE_NOTES.set, note)
    iterator = aiter(items)
    try:
        # Retries happen before the first item (the response has not begun): only that one is
        # awaited in a task; the rest of a stream is read directly.
        step = context.run(asyncio.ensure_future, anext(iterator))
        step.add_done_callback(wake)
        try:
            while not step.done():
                if notes:
                    yield notes.popleft()
                    continue
                waiter[0] = future = asyncio.get_running_loop().create_future()
                await future
        finally:
            waiter[0] = None
            if not step.done():  # the run was stopped: the request is cancelled, and ends first
                step.cancel()
                await asyncio.wait((step,))
        while notes:
            yield notes.popleft()
        try:
            first = step.result()
        except StopAsyncIteration:
            return
        yield first
        async for item in iterator:
            while notes:
                yield notes.popleft()
            yield item
    finally:
        close = getattr(iterator, "aclose", None)
        if close is not None:  # the provider's stream ends here, not when collected
            await close()
