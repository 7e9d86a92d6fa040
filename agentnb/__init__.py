"""agentnb: LLM agents you can see and debug, inside Jupyter.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def shout(text: str) -> str:
...     '''Upper-case a text.'''
...     return text.upper()
>>> Agent(ScriptedProvider([call("shout", text="hi"), "HI"]), tools=[shout]).run("shout hi").output
'HI'
"""

from __future__ import annotations

import os
from typing import Any

from agentnb.context.compaction import Compaction
from agentnb.control.approval import Approve, Deny, Edit
from agentnb.control.inbox import Inbox
from agentnb.control.limits import UsageLimits
from agentnb.errors import (
    AgentnbError,
    AuthenticationError,
    ContextOverflow,
    InboxClosedError,
    MissingDependencyError,
    ModelBehaviorError,
    ModelNotFoundError,
    ProviderError,
    RateLimitError,
    ServerError,
    StopRun,
    ToolDefinitionError,
    UserError,
)
from agentnb.messages import (
    AssistantMessage,
    Image,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from agentnb.printer import TextPrinter
from agentnb.providers import Provider, get_provider
from agentnb.run.agent import DEFAULT_MAX_TOOL_CALLS, Agent
from agentnb.run.agent_tool import handoff
from agentnb.run.labels import Label
from agentnb.run.loop import StepController, ToolDecision
from agentnb.run.result import RunResult
from agentnb.run.session import Session
from agentnb.tools import Tool, ToolContext, ToolExample, tool
from agentnb.tracing import instrument, uninstrument
from agentnb.version import __version__ as __version__

__all__ = [
    "DEFAULT_MAX_TOOL_CALLS",
    "Agent",
    "AgentnbError",
    "Approve",
    "AssistantMessage",
    "AuthenticationError",
    "CassetteError",
    "CassetteMiss",
    "Compaction",
    "ContextOverflow",
    "Deny",
    "Edit",
    "Evaluation",
    "Image",
    "Improvement",
    "Inbox",
    "InboxClosedError",
    "Label",
    "MissingDependencyError",
    "ModelBehaviorError",
    "ModelNotFoundError",
    "Provider",
    "ProviderError",
    "RateLimitError",
    "ReplayMismatch",
    "RunDiff",
    "RunResult",
    "ServerError",
    "Session",
    "StepController",
    "StopRun",
    "SystemMessage",
    "TextPrinter",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDecision",
    "ToolDefinitionError",
    "ToolExample",
    "ToolMessage",
    "UnTooled",
    "Usage",
    "UsageLimits",
    "UserError",
    "UserMessage",
    "aevaluate",
    "aimprove",
    "cassette",
    "diff",
    "evaluate",
    "get_provider",
    "handoff",
    "improve",
    "instrument",
    "keep_runs",
    "kernel_tools",
    "load_transcript",
    "replay",
    "runs",
    "tool",
    "uninstrument",
]


_TIMETRAVEL = ("CassetteError", "CassetteMiss", "ReplayMismatch", "RunDiff", "cassette", "diff", "replay")


def __getattr__(name: str) -> Any:
    # UnTooled (and its prompt template) loads on first use, keeping `import agentnb` light.
    if name == "UnTooled":
        from agentnb.providers.untooled import UnTooled

        return UnTooled
    if name in ("evaluate", "aevaluate", "Evaluation"):  # many runs: loaded on first use
        from agentnb import evaluation

        return getattr(evaluation, name)
    if name in ("improve", "aimprove", "Improvement"):  # reflective optimisation: loaded on first use
        from agentnb import improvement

        return getattr(improvement, name)
    if name == "kernel_tools":  # the notebook's variables as tools: loaded on first use
        from agentnb.kernel import kernel_tools

        return kernel_tools
    if name in ("keep_runs", "runs"):  # the store of runs (SQLite): loaded on first use
        from agentnb import runstore

        return getattr(runstore, name)
    if name in _TIMETRAVEL:  # replay, cassettes, fork, diff: loaded on first use
        from agentnb import timetravel

        return getattr(timetravel, name)
    raise AttributeError(f"module 'agentnb' has no attribute {name!r}")


def load_transcript(path: str | os.PathLike[str]) -> RunResult:
    """Load a transcript saved with :meth:`RunResult.save`.

    A file that is not a transcript raises :class:`agentnb.errors.TranscriptError` (a
    ``ValueError``) naming the file and what is wrong.

    >>> import os, tempfile
    >>> from agentnb.testing import ScriptedProvider
    >>> path = os.path.join(tempfile.mkdtemp(), "run.json")
    >>> Agent(ScriptedProvider(["Hi!"])).run("hello").save(path)
    >>> load_transcript(path).output
    'Hi!'
    """
    return RunResult.load(path)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext agentnb``: registers the ``%agent`` / ``%%agent`` magics."""
    from agentnb.notebook.magics.agent import load_ipython_extension as load

    load(ipython)
