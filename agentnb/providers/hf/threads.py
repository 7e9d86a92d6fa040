"""How many CPU threads torch uses for the in-process model.

torch's default is one thread per core. For a 135M-parameter model the matrices are small, and on
a machine whose cores are already busy the threads mostly wait for each other: measured on a
2-core machine with a load average of 3-4, one thread decoded 3-8x faster than two (72 ms against
210-250 ms per token). So the default leaves out the cores other work is using, and never goes
past :data:`MAX_DEFAULT_THREADS` (more does not help a model this small).

``$AGENTNB_THREADS`` or an explicit ``threads=`` overrides the choice; ``$OMP_NUM_THREADS``, when
set, is left to torch.

>>> default_threads(cpus=2, load=3.5), default_threads(cpus=2, load=0.2), default_threads(cpus=16, load=1.0)
(1, 2, 4)
"""

from __future__ import annotations

import os

from agentnb.errors import UserError

#: The most threads chosen by default.
MAX_DEFAULT_THREADS = 4
#: Environment variable that sets the thread count.
THREADS_ENV = "AGENTNB_THREADS"


def default_threads(cpus: int | None = None, load: float | None = None) -> int:
    """The thread count for this machine: its idle cores (from the 1-minute load), 1 to 4."""
    cpus = cpus if cpus is not None else (os.cpu_count() or 1)
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # not available on this platform
            load = 0.0
    idle = cpus - round(load)
    return max(1, min(MAX_DEFAULT_THREADS, cpus, idle))


def choose_threads(threads: int | None = None) -> int | None:
    """The thread count to set: ``threads``, else ``$AGENTNB_THREADS``, else the default.

    None when ``$OMP_NUM_THREADS`` is set and nothing else asks (torch already follows it).
    """
    if threads is None:
        env = os.environ.get(THREADS_ENV, "").strip()
        if env:
            try:
                threads = int(env)
            except ValueError:
                raise UserError(f"${THREADS_ENV} must be a whole number of threads, not {env!r}") from None
        elif os.environ.get("OMP_NUM_THREADS"):
            return None
        else:
            return default_threads()
    if threads < 1:
        raise UserError(f"threads must be at least 1, not {threads}")
    return threads


def apply_threads(threads: int | None = None) -> int:
    """Set torch's intra-op thread count (see :func:`choose_threads`); returns the count in use."""
    import torch

    n = choose_threads(threads)
    if n is not None and n != torch.get_num_threads():
        torch.set_num_threads(n)
    return int(torch.get_num_threads())
