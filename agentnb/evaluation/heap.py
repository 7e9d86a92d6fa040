"""The garbage collector during an evaluation: what existed before it is left out of full passes,
and the youngest generation is collected less often.

With hundreds of runs in flight, every run's objects live through a model call and reach the
collector's oldest generation, so full collections come often; each one walked every object of
the process, the imported modules (openai's types, pydantic's schemas) included. At
concurrency 1,000 that was half of ``evaluate``'s CPU (benchmarks/eval_throughput.py).
:func:`frozen_before` calls ``gc.freeze()`` as the evaluation starts, so the objects that existed
then are not walked again, and ``gc.unfreeze()`` when it ends: the process's collector is as it
was, and garbage among those older objects is collected after the evaluation rather than
during it.

Hundreds of runs in flight also allocate fast: with the default threshold (700 allocations)
the youngest generation was collected ~1,500 times in 3,000 runs at concurrency 1,000, each
pass promoting the runs' live objects towards the full passes. For the evaluation's duration
the threshold is raised to :data:`YOUNG_THRESHOLD` (never lowered), then set back: at
concurrency 1,000 the collector's CPU fell from 1.3 s to 0.6 s of 4.8 s, and no full pass was
left (measured with ``gc.callbacks``, benchmarks/eval_throughput.py's server). Garbage in
cycles waits a little longer; nothing else changes.

Nothing is done when the collector is off or when something else froze objects already
(``gc.get_freeze_count()``): the caller manages it. ``evaluate(..., freeze_gc=False)`` turns
both off.

>>> import gc
>>> before = gc.get_threshold()
>>> with frozen_before(True):
...     frozen, young = gc.get_freeze_count() > 0, gc.get_threshold()[0]
>>> frozen, young >= YOUNG_THRESHOLD, gc.get_freeze_count(), gc.get_threshold() == before
(True, True, 0, True)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "freeze_older", "frozen_before", "thaw"]

#: The youngest generation's threshold while an evaluation runs (Python's default is 700).
YOUNG_THRESHOLD = 10_000

#: What :func:`freeze_older` changed, for :func:`thaw`: the thresholds before it, or None.
Frozen = tuple[int, int, int] | None


def freeze_older(enabled: bool = True) -> Frozen:
    """``gc.freeze()`` and a higher young threshold, unless turned off, the collector is off, or
    something else froze objects already; what :func:`thaw` needs to undo it (None: nothing done)."""
    if not enabled or not gc.isenabled() or gc.get_freeze_count():
        return None
    thresholds = gc.get_threshold()
    gc.freeze()
    young, *older = thresholds
    if young < YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, *older)
    return thresholds


def thaw(frozen: Frozen) -> None:
    """Undo :func:`freeze_older` (when it did something)."""
    if frozen is not None:
        gc.set_threshold(*frozen)
        gc.unfreeze()


@contextmanager
def frozen_before(enabled: bool = True) -> Iterator[None]:
    """Objects alive now are left out of collections until the block ends (see the module)."""
    frozen = freeze_older(enabled)
    try:
        yield
    finally:
        thaw(frozen)
