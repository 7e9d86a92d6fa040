"""A run from what a user hands over: a :class:`~agentnb.RunResult` or a transcript's path."""

from __future__ import annotations

import os
from typing import Any

from agentnb.errors import UserError


def as_result(source: Any) -> Any:
    """A :class:`~agentnb.RunResult` from a result or a transcript's path."""
    from agentnb.run.result import RunResult

    if isinstance(source, RunResult):
        return source
    if isinstance(source, (str, os.PathLike)):
        return RunResult.load(source)
    raise UserError(f"expected a RunResult or a transcript's path, not {type(source).__name__}")
