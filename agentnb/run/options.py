"""The checks of :class:`~agentnb.Agent`'s options: a wrong value is a clear error when the
agent is made, not a surprise in the middle of a run (or, for approval, no surprise at all).

>>> check_options(max_tool_calls=3, tool_timeout=None, settings=None, system=None, max_result_chars=None,
...               max_output_retries=1)
>>> check_options(max_tool_calls=3, tool_timeout=0, settings=None, system=None, max_result_chars=None,
...               max_output_retries=1)
Traceback (most recent call last):
agentnb.errors.UserError: tool_timeout must be a number of seconds > 0 or None, not 0
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentnb.errors import UserError


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_options(
    *,
    max_tool_calls: Any,
    tool_timeout: Any,
    settings: Any,
    system: Any,
    max_result_chars: Any,
    max_output_retries: Any,
) -> None:
    """Raise :class:`~agentnb.errors.UserError` for the first option of the wrong kind."""
    if not _whole(max_tool_calls) or max_tool_calls < 0:
        raise UserError(f"max_tool_calls must be a whole number >= 0, not {max_tool_calls!r}")
    if tool_timeout is not None and (
        isinstance(tool_timeout, bool) or not isinstance(tool_timeout, (int, float)) or not tool_timeout > 0
    ):
        raise UserError(f"tool_timeout must be a number of seconds > 0 or None, not {tool_timeout!r}")
    if settings is not None and not isinstance(settings, Mapping):
        raise UserError(f"settings must be a dict such as {{'temperature': 0}}, not {type(settings).__name__}")
    if system is not None and not isinstance(system, str):
        raise UserError(f"system must be a string (the system prompt) or None, not {type(system).__name__}")
    if (
        max_result_chars is not None
        and max_result_chars != "auto"
        and (not _whole(max_result_chars) or max_result_chars < 1)
    ):
        raise UserError(f"max_result_chars must be a whole number >= 1, 'auto' or None, not {max_result_chars!r}")
    if not _whole(max_output_retries) or max_output_retries < 0:
        raise UserError(f"max_output_retries must be a whole number >= 0, not {max_output_retries!r}")


def check_approval_names(names: bool | frozenset[str], tools: Iterable[str], followed: bool) -> None:
    """Tool names in ``requires_approval`` that the agent does not have are an error: a typo would
    let the tool it meant run without approval. With tool sources that may add tools later
    (``followed``), names are not checked.

    >>> check_approval_names(frozenset({"delete_file"}), ["delete_files"], False)
    Traceback (most recent call last):
    agentnb.errors.UserError: requires_approval names a tool this agent does not have: 'delete_file' (its tools: delete_files)
    """
    if isinstance(names, bool) or followed:
        return
    have = list(tools)
    unknown = sorted(n for n in names if n not in have)
    if unknown:
        listed = ", ".join(repr(n) for n in unknown)
        raise UserError(
            f"requires_approval names a tool this agent does not have: {listed} (its tools: {', '.join(have) or 'none'})"
        )
