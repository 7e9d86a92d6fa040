"""The garbage collector during an evaluation: what existed before it is left out of full passes.

With hundreds of runs in flight, every run's objects live through a model call and reach the
collector's oldest generation, so full collections come often; each one walked every object of
the process, the imported modules (openai's types, pydantic's schemas) included. At
concurrency 1,000 that was half of ``evaluate``'s CPU (benchmarks/eval_throughput.py).
:func:`frozen_before` calls ``gc.freeze()`` as the evaluation starts, so the objects that existed
then are not walked again, and ``gc.unfreeze()`` when it ends: the process's collector is as it
was, and garbage among those older objects is collected after the evaluation rather than
during it. Nothing is done when the collector is off or when something else
froze objects already (``gc.get_freeze_count()``): the caller manages it. ``evaluate(...,
freeze_gc=False)`` turns it off.

>>> import gc
>>> with frozen_before(True):
...     frozen = gc.get_freeze_count() > 0
>>> frozen, gc.get_freeze_count()
(True, 0)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["freeze_older", "frozen_before", "thaw"]


def freeze_older(enabled: bool = True) -> bool:
    """``gc.freeze()`` unless turned off, the collector is off, or something else froze objects
    already; whether it froze (then :func:`thaw` undoes it)."""
    if not enabled or not gc.isenabled() or gc.get_freeze_count():
        return False
    gc.freeze()
    return True


def thaw(frozen: bool) -> None:
    """Undo :func:`freeze_older` (when it froze)."""
    if frozen:
        gc.unfreeze()


@contextmanager
def frozen_before(enabled: bool = True) -> Iterator[None]:
    """Objects alive now are left out of collections until the block ends (see the module)."""
    frozen = freeze_older(enabled)
    try:
        yield
    finally:
        thaw(frozen)
