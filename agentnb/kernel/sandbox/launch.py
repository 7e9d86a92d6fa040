"""Start an ipykernel under resource limits: the sandbox kernel's command (run as a script).

Run by path, not as ``-m agentnb...``: the sandbox does not import agentnb to start. The limits
come in the environment: ``AGENTNB_SANDBOX_MEMORY`` (bytes of address space, ``RLIMIT_AS``) and
``AGENTNB_SANDBOX_CPU`` (seconds of CPU, ``RLIMIT_CPU``, the soft limit only, so that each call
can set its own: see :mod:`agentnb.kernel.sandbox.inside`). The rest of the command line is
ipykernel's (``-f CONNECTION_FILE``).
"""

import os
import resource
import sys


def _limit(which: int, value: str) -> None:
    if not value:
        return
    _, hard = resource.getrlimit(which)
    soft = int(value)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(which, (soft, hard if which == resource.RLIMIT_CPU else soft))


if __name__ == "__main__":
    del sys.path[0]  # this folder: its modules must not shadow the standard library's
    _limit(resource.RLIMIT_AS, os.environ.pop("AGENTNB_SANDBOX_MEMORY", ""))
    _limit(resource.RLIMIT_CPU, os.environ.pop("AGENTNB_SANDBOX_CPU", ""))
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
