"""Time travel: replay a run, record model calls in a cassette, fork a run at a step, diff two runs.

A transcript is already the whole run; these are readers of it (see DESIGN.md, "Time travel"):

* :func:`replay` -- a Provider answering with the recorded replies, checking each request;
* :func:`cassette` -- record every model call at the Provider seam, answer them from a file;
* :func:`fork` -- ``result.fork(at, ...)``: the steps before ``at`` from the recording, an edit
  at ``at``, the rest live;
* :func:`diff` -- two runs step by step, to the first divergence.
"""

from __future__ import annotations

from agentnb.timetravel.cassette import Cassette, CassetteMiss, CassetteProvider, cassette
from agentnb.timetravel.diff import RunDiff, diff
from agentnb.timetravel.entries import CassetteError
from agentnb.timetravel.fork import afork
from agentnb.timetravel.mismatch import ReplayMismatch
from agentnb.timetravel.replay import ReplayProvider, replay

__all__ = [
    "Cassette",
    "CassetteError",
    "CassetteMiss",
    "CassetteProvider",
    "ReplayMismatch",
    "ReplayProvider",
    "RunDiff",
    "afork",
    "cassette",
    "diff",
    "replay",
]
