"""What a run is configured with, what it has produced so far, and what may pause it.

:class:`LoopConfig` and :class:`RunState` are :func:`agentnb.run.loop.run_loop`'s input and its
accumulating result; :class:`LoopState` is what the loop's phases (:mod:`agentnb.run.phases`)
hand each other; a :class:`StepController` (the debugger) pauses it before each model call
and each tool call and answers with a :class:`ToolDecision`.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentnb.context.fitting import Fitting
from agentnb.control.limits import Ledger
from agentnb.events import Event, StopReason
from agentnb.messages import Message, ToolCall, ToolMessage, Usage
from agentnb.providers.live import may_retry
from agentnb.run.budget import Gauge, holds_tokens
from agentnb.run.endings import OpenStep
from agentnb.tools.dedupe import Deduplicator
from agentnb.tools.running import DEFAULT_MAX_RESULT_CHARS, SYNC_TOOLS_IN_THREAD

if TYPE_CHECKING:
    from agentnb.context.compaction import Compaction
    from agentnb.context.gauge import ContextGauge
    from agentnb.control.approval import ApprovalGate
    from agentnb.control.inbox import Inbox
    from agentnb.control.limits import UsageLimits
    from agentnb.output import OutputSpec
    from agentnb.providers.base import Completion, Provider, Request
    from agentnb.tools import Tool
    from agentnb.tools.execution import Execution

#: The user message that carries a step's tool images to the model.
ATTACHMENT_NOTE = "[Attached image(s) from tool result]"


@dataclass(frozen=True, slots=True)
class ToolDecision:
    """What a step controller wants done with a tool call: run it (maybe with edited
    arguments) or skip it.

    >>> ToolDecision("skip")
    ToolDecision(action='skip', arguments=None)
    >>> ToolDecision(arguments={"a": 1}).action
    'run'
    """

    action: Literal["run", "skip"] = "run"
    arguments: dict[str, Any] | None = None


class StepController(Protocol):
    """Pauses a run before each model call and each tool call (the debugger implements this).

    Either method may raise :class:`agentnb.errors.StopRun` to end the run as ``cancelled``.

    >>> from agentnb import Agent, tool
    >>> from agentnb.testing import ScriptedProvider, call
    >>> @tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> class FixArguments:
    ...     async def before_model(self, depth, request):
    ...         pass
    ...     async def before_tool(self, depth, call):
    ...         return ToolDecision(arguments={"a": 40, "b": 2})
    >>> model = ScriptedProvider([call("add", a=1, b=1), "done"])
    >>> _ = Agent(model, tools=[add]).run("go", controller=FixArguments())
    >>> model.requests[1].messages[-1].content
    '42'
    """

    async def before_model(self, depth: int, request: Request) -> None: ...

    async def before_tool(self, depth: int, call: ToolCall) -> ToolDecision: ...


@dataclass(slots=True)
class LoopConfig:
    provider: Provider
    tools: dict[str, Tool]
    max_tool_calls: int = 10
    tool_choice: str = "auto"
    stream: bool = False
    tool_timeout: float | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    controller: StepController | None = None
    output: OutputSpec | None = None
    max_output_retries: int = 2
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    #: Which calls need a decision before they run, and who decides (None: no call does).
    approval: ApprovalGate | None = None
    #: Budgets besides the tool-call limit (None: none; see :mod:`agentnb.control.limits`).
    limits: UsageLimits | None = None
    #: Tools anew when a tool source changed them (an MCP server's list_changed), else None.
    refresh: Callable[[], dict[str, Tool] | None] | None = None
    #: The calling run's ledger, for a run an agent tool started: its limits hold here too.
    above: Ledger | None = None
    #: ``(fingerprint, result)`` of calls made before the first step (a fork's recorded prefix).
    seen: tuple[tuple[str, str], ...] = ()
    #: The depth of the first step (a fork's first live step: its recorded steps come before it).
    first_depth: int = 0
    #: ``(call id, fingerprint, message, tool_finished)`` of first-step calls the recording
    #: answers (a fork's calls beside an edited one; see :class:`~agentnb.tracing.observe.RunLink`).
    recorded: tuple[tuple[Any, ...], ...] = ()
    #: The context policy (an :class:`agentnb.Compaction`; None: requests are sent whole).
    compaction: Compaction | None = None
    #: ``(messages, upto)``: a compacted start of the history to go on from (a fork's, a session's).
    compacted: tuple[Any, int] | None = None
    #: A person's messages, read before each request (None: nobody steers this run).
    inbox: Inbox | None = None
    #: The model's window as the user gave it (``Agent(context_window=N)``); None: the provider's.
    context_window: int | None = None
    #: ``max_result_chars`` is a share of the window, found at the first request (until then,
    #: and when the window is unknown, ``max_result_chars`` holds the fixed bound).
    relative_results: bool = False


@dataclass(slots=True)
class RunState:
    """What a run has produced so far; ``messages`` only ever holds completed steps."""

    messages: list[Message]
    events: list[Event] = field(default_factory=list)
    usage: Usage = Usage()
    tool_calls: int = 0
    kept_tool_calls: int = 0  # the tool calls whose messages are in ``messages``
    output: str = ""
    stop_reason: StopReason | None = None
    value: Any = None
    output_retries: int = 0
    #: The step in progress (its model turn and tool calls) until its messages are committed;
    #: a stop mid-step keeps what it did (agentnb.run.stopped.settle).
    step: OpenStep | None = None
    limit: str | None = None  # the limit that ended the run, when one did
    #: The budget that took the tools away from the request the model answered (None: it had them).
    without_tools: str | None = None


class LoopState:
    """What the loop's phases hand each other: the tools offered, the budgets, the open step.

    One per run, made by :func:`agentnb.run.loop.run_loop`; ``depth`` is the model call the
    run is at, ``completion`` the model's reply in this step and ``plans`` what becomes of each
    of its calls (a :class:`~agentnb.messages.ToolMessage` answer, an execution, or the index of
    an earlier call of the same step that it repeats). ``over`` ends the run.
    """

    __slots__ = (
        "cfg",
        "state",
        "tools",
        "all_tools",
        "names",
        "dedup",
        "recorded",
        "ledger",
        "live",
        "threaded",
        "depth",
        "choice",
        "asked_again",
        "offer",
        "limited",
        "completion",
        "plans",
        "in_turn",
        "execs",
        "nested",
        "over",
        "gauge",
        "fitting",
        "context",
        "emit",
        "said",
        "at_once",
    )

    def __init__(
        self, cfg: LoopConfig, state: RunState, emit: Callable[[Event], Any], said: list[Event] | None = None
    ) -> None:
        self.cfg, self.state = cfg, state
        #: Where the phases say what they decided: each event, in order, as it is decided.
        self.emit = emit
        #: A stream's events said and not yet taken (``emit`` appends to it; see
        #: :func:`said_so_far`); empty for a run driven by call, where ``emit`` delivers at once.
        self.said: list[Event] | tuple[()] = said if said is not None else ()
        #: ``emit`` hands each event to the consumer at once (arun's driver), even while the
        #: loop waits.
        self.at_once = said is None
        self.tools: dict[str, Tool] = cfg.tools
        self.all_tools: tuple[Tool, ...] = tuple(cfg.tools.values())
        self.names: tuple[str, ...] = tuple(cfg.tools)
        self.dedup = Deduplicator()
        for fp, text in cfg.seen:  # a fork's recorded calls: a repeat is answered from them
            self.dedup.record(fp, text)
        #: call id -> (fingerprint, message, tool_finished): the first step's recorded answers.
        self.recorded: dict[str, tuple[Any, ...]] = {r[0]: r[1:] for r in cfg.recorded}
        self.ledger = Ledger(cfg.limits, cfg.max_tool_calls, cfg.above)
        #: Estimates each request's input tokens where a token budget holds (agentnb.run.budget).
        self.gauge: Gauge | None = Gauge(cfg.provider) if holds_tokens(self.ledger) else None
        #: The context policy's state (agentnb.run.phases.compact); None: requests go whole.
        self.fitting: Fitting | None = None
        if cfg.compaction is not None or cfg.compacted is not None:
            self.fitting = Fitting(cfg.compaction, None, cfg.compacted)
        #: Sizes each request against the model's window (made at the first request, once the
        #: window is known; agentnb.context.gauge).
        self.context: ContextGauge | None = None
        self.live = may_retry(cfg.provider)  # its retries come out as they wait (agentnb.providers.live)
        self.threaded = SYNC_TOOLS_IN_THREAD.get()
        self.depth = cfg.first_depth
        self.choice = cfg.tool_choice
        self.asked_again = False  # a call where none is offered gets one more chance to answer in text
        self.offer = False  # tools were offered in this step's request
        self.limited = False  # a limit kept them back
        self.completion: Completion | None = None
        self.plans: list[ToolMessage | Execution | int] = []
        self.in_turn: dict[str, int] = {}  # fingerprint -> the plan of its first call in this step
        self.execs: list[Execution] = []  # the plans that run, in order
        self.nested = False  # one of them runs an agent
        self.over = False

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of this step's reply."""
        return self.completion.tool_calls if self.completion is not None else ()


#: What the loop's body yields to :func:`agentnb.run.loop.run_loop` to have the events said so
#: far handed to the stream's consumer before it awaits anything (see :func:`said_so_far`).
FLUSH = object()


@types.coroutine
def _flush() -> Generator[object, None, None]:
    yield FLUSH


async def said_so_far(run: LoopState) -> None:
    """Before a phase waits (for the model, a tool or a person): the events it emitted reach a
    stream's consumer first, so that what an event announces has not begun when it is seen.
    A run driven by call (``arun``) delivered them already; nothing happens."""
    if run.said:
        await _flush()
