"""The :class:`Agent`: a provider, tools and limits; ``run`` / ``arun`` / ``stream``.

>>> from agentnb import Agent, tool
>>> from agentnb.testing import ScriptedProvider, call
>>> @tool
... def add(a: int, b: int) -> int:
...     '''Add two integers.'''
...     return a + b
>>> model = ScriptedProvider([call("add", a=2, b=3), "2 + 3 = 5"])
>>> result = Agent(model, tools=[add]).run("What is 2 + 3?")
>>> result.output, result.tool_calls, result.stop_reason
('2 + 3 = 5', 1, 'answer')

The tool-call limit has one name and one default, :data:`DEFAULT_MAX_TOOL_CALLS`:

>>> Agent(model).max_tool_calls == DEFAULT_MAX_TOOL_CALLS == 10
True
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import aclosing
from typing import Any, Literal

from agentnb.context.compaction import Compaction, check_context
from agentnb.control.approval import ApprovalGate, check_requires_approval
from agentnb.control.inbox import Inbox
from agentnb.control.limits import UsageLimits, check_limits
from agentnb.errors import UserError
from agentnb.events import Event
from agentnb.messages import Message
from agentnb.providers import Provider, get_provider
from agentnb.providers.window import Window, check_context_window
from agentnb.run.loop import StepController
from agentnb.run.options import check_approval_names, check_options
from agentnb.run.result import RunResult
from agentnb.run.runinfo import (
    discard,
    output_spec_of,
    start_messages,
    watchers_of,
)
from agentnb.run.steer import inbox_for, inbox_for_sink, steered
from agentnb.run.streaming import run_events
from agentnb.run.sync import BLOCKING_CELL, run_sync  # noqa: F401 - BLOCKING_CELL: the name others import
from agentnb.timetravel.active import CURRENT as CURRENT_CASSETTE
from agentnb.tools import Tool
from agentnb.tools.toolset import ToolSet
from agentnb.tracing.observe import RunLink

#: The one default for the tool-call limit: ``Agent(...).max_tool_calls`` unless given, e.g.
#: ``Agent("local").max_tool_calls == DEFAULT_MAX_TOOL_CALLS == 10`` (see the module docstring).
DEFAULT_MAX_TOOL_CALLS = 10
#: The one default for how often an invalid structured answer goes back to the model.
DEFAULT_MAX_OUTPUT_RETRIES = 2

Prompt = str | Message | dict[str, Any] | Sequence[Any]


class Agent:
    """An LLM agent: asks the model, runs the tools it calls, until it answers in text.

    Args:
        provider: a :class:`~agentnb.providers.Provider` or a spec such as
            ``"openai:gpt-4o-mini"`` or ``"local"``.
        tools: a list of tools: typed functions, :class:`Tool` objects, OpenAI-format tool dicts,
            MCP servers, other agents (run as tools); one of them alone is a list of one.
        system: a system prompt, put first unless the messages already start with one.
        max_tool_calls: at most this many tool calls are handled in one run; then the model
            is asked once more without tools and must answer in text.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a tool name; a forcing choice
            applies to the first model call of each run.
        stream: ask the provider for incremental output (text deltas as events).
        tool_timeout: default timeout in seconds for tools that set none.
        settings: passed to the provider with every request (e.g. ``temperature``).
        output_type: the type of the final answer (a pydantic model, dataclass, TypedDict,
            ``list[...]`` of those, plain type, or JSON Schema dict): the run's
            ``result.value`` is an instance of it, ``result.output`` keeps the text. See
            :mod:`agentnb.output`.
        max_output_retries: how many times an answer that does not validate goes back to the
            model with the errors before the run ends with ``stop_reason="invalid_output"``.
        max_result_chars: the model reads at most about this many characters of one tool
            result (its start and end, with a note saying how much was cut); a tool's own
            ``max_result_chars`` wins; ``None`` for no bound. ``"auto"`` (the default): a
            quarter of the model's window (in characters at the tokens a character observed),
            else 20,000 when the window is unknown (:mod:`agentnb.context`). Events, the
            transcript and the widget keep the whole result.
        name: the agent's name (in events, spans, and as a tool's default name).
        instrument: watch this agent's runs: ``True`` for OpenTelemetry spans through the global
            tracer provider, a ``TracerProvider``, or watchers (see :mod:`agentnb.tracing.observe`);
            :func:`agentnb.instrument` does it for every agent.
        requires_approval: tool names whose calls need a decision before they run, or True
            for every tool (tools marked ``@tool(requires_approval=True)`` always do).
        approver: who decides on those calls: a policy ``(call) -> Approve() | Deny(reason) |
            Edit(arguments)`` (sync or async), or an object with ``decide_approval(call)``
            (the trace widget). Without one, such calls are denied. See :mod:`agentnb.control.approval`.
        limits: budgets per run (:class:`~agentnb.UsageLimits`: requests, tokens, cost, seconds);
            its ``tool_calls`` is ``max_tool_calls`` (give one or the other). A run's own
            ``limits=`` replaces these. See :mod:`agentnb.control.limits`.
        cassette: a file that records this agent's model calls and answers them next time
            (mode ``once``), or an :func:`agentnb.cassette`; see :mod:`agentnb.timetravel.cassette`.
        context_window: the model's window in tokens, when the one agentnb finds is wrong or
            unknown (:meth:`context_window`; :mod:`agentnb.providers.window`).
        context: what keeps each request inside that window: an :class:`agentnb.Compaction`
            (clear old tool results, drop old turns, summarise; see :mod:`agentnb.context`).

    >>> from agentnb import tool
    >>> from agentnb.testing import ScriptedProvider, call
    >>> @tool
    ... def square(x: int) -> int:
    ...     '''Square a number.'''
    ...     return x * x
    >>> agent = Agent(ScriptedProvider([call("square", x=7), "49"]), tools=[square], max_tool_calls=3)
    >>> agent
    Agent(ScriptedProvider('scripted'), tools=['square'], max_tool_calls=3)
    >>> agent.run("7 squared?").output
    '49'
    """

    def __init__(
        self,
        provider: Provider | str,
        tools: Iterable[Any] | Any = (),
        *,
        system: str | None = None,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        tool_choice: str = "auto",
        stream: bool = False,
        tool_timeout: float | None = None,
        settings: dict[str, Any] | None = None,
        output_type: Any = None,
        max_output_retries: int = DEFAULT_MAX_OUTPUT_RETRIES,
        max_result_chars: int | Literal["auto"] | None = "auto",
        name: str | None = None,
        instrument: Any = None,
        requires_approval: bool | Iterable[str] = False,
        approver: Any = None,
        limits: UsageLimits | dict[str, Any] | None = None,
        cassette: Any = None,
        context_window: int | None = None,
        context: Compaction | None = None,
    ) -> None:
        self._window = check_context_window(context_window)
        self.context = check_context(context)
        self.provider = get_provider(provider)
        if not self.provider.supports_native_tools:
            # Text-only models get tool calling simulated in the prompt.
            from agentnb.providers.untooled import UnTooled

            self.provider = UnTooled(self.provider)
        # MCP servers among the tools are followed: a server that changes its tools (and says
        # so) has them offered from the next model call on (agentnb.tools.toolset).
        self._toolset = ToolSet(tools)
        self.tools: dict[str, Tool] = self._toolset.current
        check_options(
            max_tool_calls=max_tool_calls,
            tool_timeout=tool_timeout,
            settings=settings,
            system=system,
            max_result_chars=max_result_chars,
            max_output_retries=max_output_retries,
        )
        self.limits = check_limits(limits)
        if self.limits is not None and self.limits.tool_calls is not None:
            if max_tool_calls not in (DEFAULT_MAX_TOOL_CALLS, self.limits.tool_calls):
                raise UserError(
                    "max_tool_calls and limits.tool_calls are the same limit: give one of them, "
                    f"not {max_tool_calls} and {self.limits.tool_calls}"
                )
            max_tool_calls = self.limits.tool_calls
        if tool_choice not in ("auto", "required", "none") and tool_choice not in self.tools:
            raise UserError(f"tool_choice {tool_choice!r} is not 'auto', 'required', 'none' or a tool name")
        self.system = system
        self.max_tool_calls = max_tool_calls
        self.tool_choice = tool_choice
        self.stream_default = stream
        self.tool_timeout = tool_timeout
        self.settings = dict(settings or {})
        self.max_result_chars = max_result_chars
        self.output_spec = output_spec_of(output_type) if output_type is not None else None
        self.max_output_retries = max_output_retries
        self.name = name
        self.watchers: tuple[Any, ...] = watchers_of(instrument)
        self.requires_approval = check_requires_approval(requires_approval)
        check_approval_names(self.requires_approval, self.tools, bool(self._toolset.sources))
        ApprovalGate((), approver)  # a wrong approver is reported now
        self.approver = approver
        self.cassette = None
        if cassette is not None:  # agentnb.timetravel loads only for agents that record
            from agentnb.timetravel.cassette import open_cassette

            self.cassette = open_cassette(cassette)

    @property
    def output_type(self) -> Any:
        """The type of ``result.value`` (None: runs answer in text only)."""
        return self.output_spec.output_type if self.output_spec is not None else None

    def __repr__(self) -> str:
        return f"Agent({self.provider!r}, tools={list(self.tools)}, max_tool_calls={self.max_tool_calls})"

    async def acontext_window(self) -> Window:
        """The model's context window: ``context_window=`` when given, else what the provider
        finds (asked once, in bounded time; :mod:`agentnb.providers.window`).

        >>> from agentnb.testing import ScriptedProvider
        >>> Agent(ScriptedProvider([]), context_window=8000).context_window()
        Window(tokens=8000, source='user')
        >>> print(Agent(ScriptedProvider([])).context_window())
        unknown: scripted does not say its window
        """
        if self._window is not None:
            return Window(self._window, "user")
        return await self.provider.context_window()

    def context_window(self) -> Window:
        """Synchronous :meth:`acontext_window`."""
        return run_sync(self.acontext_window)

    def messages_for(self, prompt: Prompt, history: RunResult | Sequence[Message] | None = None) -> list[Message]:
        """The conversation a run starts from: history (or the system prompt), then the prompt."""
        return start_messages(prompt, history, self.system)

    def stream(
        self,
        prompt: Prompt,
        *,
        history: RunResult | Sequence[Message] | None = None,
        controller: StepController | None = None,
        stream: bool | None = True,
        output_type: Any = None,
        approver: Any = None,
        limits: UsageLimits | dict[str, Any] | None = None,
        inbox: Inbox | None = None,
        _sink: Callable[[Event], Any] | None = None,
        _link: RunLink | None = None,
    ) -> AsyncIterator[Event | RunResult]:
        """Run, yielding every event as it happens; the last item is the :class:`RunResult`.

        The provider streams (text deltas arrive as events) unless ``stream=False`` (``None``:
        the default, True). A KeyboardInterrupt or a controller's ``StopRun`` ends the run with
        ``stop_reason="cancelled"``; the transcript keeps every completed step. Cancelling the
        consuming task raises ``asyncio.CancelledError`` as asyncio expects, once the
        transcript is safe: the cancelled :class:`RunResult` is on the exception's
        ``run_result`` attribute.
        ``output_type`` overrides the agent's for this run; so does ``approver`` (who decides
        on calls that need approval; by default the agent's, else an ``on_event`` consumer
        that can decide, such as the trace widget). ``limits`` replaces the agent's budgets
        for this run (:mod:`agentnb.control.limits`). ``inbox`` takes a person's messages while
        the run goes on (:mod:`agentnb.control.inbox`).
        """
        steer = inbox_for(self.provider, inbox)  # a replay re-injects the recorded messages
        items = run_events(
            self, prompt, history, controller, stream, output_type, approver, limits, steer, _sink, _link
        )
        return items if inbox is None else steered(items, inbox)

    def _refreshed_tools(self) -> Callable[[], dict[str, Tool] | None] | None:
        """The tools' refresh, run once now; None when no source of them can change them."""
        refresh = self._toolset.refresh if self._toolset.sources else None
        if refresh is not None:  # a source changed its tools since the last run (or during it)
            refresh()
            self.tools = self._toolset.current
        return refresh

    async def arun(
        self,
        prompt: Prompt,
        *,
        history: RunResult | Sequence[Message] | None = None,
        on_event: Callable[[Event], Any] | None = None,
        controller: StepController | None = None,
        stream: bool | None = None,
        output_type: Any = None,
        on_cancel: Literal["raise", "return"] = "raise",
        _link: RunLink | None = None,
        approver: Any = None,
        limits: UsageLimits | dict[str, Any] | None = None,
        inbox: Inbox | None = None,
    ) -> RunResult:
        """Run to the end and return the result; ``on_event`` sees every event live.

        When the task running this is cancelled (``task.cancel()``, ``asyncio.timeout``,
        ``wait_for``), ``asyncio.CancelledError`` propagates as asyncio expects, after the run
        ended cleanly; its ``run_result`` attribute holds the ``cancelled`` result. With
        ``on_cancel="return"`` (a Stop button's task) the cancelled result is returned instead.
        ``inbox`` (:mod:`agentnb.control.inbox`) takes a person's messages while the run goes on;
        a trace widget given as ``on_event`` shows it as a "Tell the agent…" box (with an inbox
        of its own where none is given).
        """
        streaming = self.stream_default if stream is None else stream
        sink = on_event if on_event is not None else discard
        inbox = inbox_for_sink(inbox, on_event)  # a trace widget's "Tell the agent…" box feeds it
        # the agent's cassette records the agents it runs as tools too (agentnb.timetravel)
        token = CURRENT_CASSETTE.set(self.cassette) if self.cassette is not None else None
        try:
            async with aclosing(  # type: ignore[type-var]
                self.stream(
                    prompt,
                    history=history,
                    controller=controller,
                    stream=streaming,
                    _sink=sink,
                    output_type=output_type,
                    _link=_link,
                    approver=approver,
                    limits=limits,
                    inbox=inbox,
                )
            ) as items:
                async for item in items:
                    assert isinstance(item, RunResult)
                    return item
        except asyncio.CancelledError as exc:
            result: RunResult | None = getattr(exc, "run_result", None)
            if on_cancel != "return" or result is None:
                raise
            task = asyncio.current_task()
            if task is not None and getattr(task, "cancelling", lambda: 0)():  # Python >= 3.11
                task.uncancel()  # type: ignore[attr-defined,unused-ignore]
            if on_event is not None:
                on_event(result.events[-1])
            return result
        finally:
            if token is not None:
                CURRENT_CASSETTE.reset(token)
        raise RuntimeError("unreachable: the stream always ends with a RunResult")

    def run(
        self,
        prompt: Prompt,
        *,
        history: RunResult | Sequence[Message] | None = None,
        on_event: Callable[[Event], Any] | None = None,
        controller: StepController | None = None,
        stream: bool | None = None,
        output_type: Any = None,
        _link: RunLink | None = None,
        approver: Any = None,
        limits: UsageLimits | dict[str, Any] | None = None,
        inbox: Inbox | None = None,
    ) -> RunResult:
        """Synchronous :meth:`arun`; works inside a running event loop (Jupyter) too.

        ``inbox``: an :class:`~agentnb.Inbox` whose messages (``inbox.send(text)`` from any thread
        or task) the run reads before each model request (:mod:`agentnb.control.inbox`).
        """
        return run_sync(
            lambda: self.arun(
                prompt,
                history=history,
                on_event=on_event,
                controller=controller,
                stream=stream,
                output_type=output_type,
                on_cancel="return",
                _link=_link,
                approver=approver,
                limits=limits,
                inbox=inbox,
            )
        )

    def as_tool(self, name: str | None = None, description: str | None = None) -> Tool:
        """This agent as a tool another agent can call (it takes one ``prompt`` argument).

        The inner run's events appear in the calling run's stream (as
        :class:`~agentnb.events.SubAgentEvent`), its usage and tool calls count toward the
        calling run's, it gets the calling run's step controller, and a Stop stops both.
        See :mod:`agentnb.run.agent_tool`.

        >>> from agentnb.testing import ScriptedProvider, call
        >>> researcher = Agent(ScriptedProvider(["Paris is the capital."]), name="researcher")
        >>> writer = Agent(ScriptedProvider([call("researcher", prompt="capital of France?"), "Paris."]),
        ...                tools=[researcher.as_tool()])
        >>> r = writer.run("Write about France")
        >>> r.output, [e.event.kind for e in r.events if e.kind == "sub_agent"][:2]
        ('Paris.', ['run_started', 'model_request'])
        """
        from agentnb.run.agent_tool import agent_tool

        return agent_tool(self, name, description)

    def session(self, **options: Any) -> Any:
        """A :class:`~agentnb.run.session.Session`: a conversation with this agent over many runs.

        >>> from agentnb.testing import ScriptedProvider
        >>> chat = Agent(ScriptedProvider(["Hi Ada.", "You are Ada."])).session()
        >>> _ = chat.run("I am Ada.")
        >>> chat.run("Who am I?").output, chat.turns
        ('You are Ada.', 2)
        """
        from agentnb.run.session import Session

        return Session(self, **options)
