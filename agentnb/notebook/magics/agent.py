"""The ``%agent`` / ``%%agent`` magics, ``%agent_config`` and ``%agent_reset``.

After ``%load_ext agentnb``::

    %agent_config --provider openai:gpt-4o-mini --max-tool-calls 5   # notebook defaults
    %agent What is {x} squared?                                      # one line
    %%agent --tools add,search --out r                               # cell body = prompt
    Look up {city} and add the two numbers.

* ``{name}`` is filled in from the notebook's variables (``{{`` for a literal brace).
* ``@name`` of a variable (or ``@df.price``) appends its description (:mod:`agentnb.kernel.mentions`).
* Tools: every :class:`~agentnb.Tool` (``@tool``) in the namespace, or ``--tools a,b``.
* The result is stored in ``_agent_result`` (and in ``--out VAR``); a step-through run's
  debugger in ``_agent_debugger``. Until a step-through run ends, ``_agent_result`` is a
  pending handle (reading it says the run is still going; ``await _agent_result`` waits).
* Each call continues the previous conversation; ``--new`` or ``%agent_reset`` starts fresh.
* A run shows the live trace widget (text lines where there is no kernel, nothing with
  ``--quiet``). ``--step`` starts the step-through debugger and returns at once.

Mistakes (unknown option, tool or variable) are reported as one ``UsageError`` line.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class, no_var_expand

from agentnb.errors import UserError
from agentnb.messages import Message
from agentnb.notebook.cells.runner import RunHandle, drive, run_blocking
from agentnb.notebook.magics.lookup import DEFAULT_PROVIDER, NamespaceLookup
from agentnb.notebook.magics.options import MagicOptions, check_out, interpolate, parse_line, type_from_text
from agentnb.providers import Provider
from agentnb.run.agent import Agent
from agentnb.run.result import RunResult
from agentnb.run.session import Session

__all__ = ["DEBUGGER_VAR", "DEFAULT_PROVIDER", "RESULT_VAR", "AgentMagics", "load_ipython_extension"]

RESULT_VAR = "_agent_result"
DEBUGGER_VAR = "_agent_debugger"


@dataclass(frozen=True, slots=True)
class _Plan:
    """A run the magic is about to make."""

    agent: Agent
    prompt: str
    history: list[Message] | None
    store: Callable[[RunResult], None]
    on_event: Any
    widget: Any
    link: Any = None  # the conversation's next turn (Session.prepare)


@magics_class
class AgentMagics(NamespaceLookup, Magics):
    """The magics and their per-notebook state (defaults, conversation, cached providers)."""

    #: "auto" (a widget in a kernel, text elsewhere), "widget" or "text".
    display_mode = "auto"

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.defaults = MagicOptions()
        #: The conversation the cells carry on (``--new`` / ``%agent_reset`` start another).
        self.session: Session | None = None
        self.debugger: Any = None
        self._providers: dict[tuple[str, str | None, str | None], Provider] = {}  # (spec, base_url, tool_calling) ->
        self._mcp_servers: dict[str, Any] = {}  # command line or URL -> MCPServer

    @property
    def history(self) -> RunResult | None:
        """The last run of the conversation (None: the next ``%agent`` starts fresh)."""
        return self.session.last if self.session is not None else None

    @history.setter
    def history(self, value: None) -> None:
        if value is not None:
            raise UserError("the conversation continues from runs made here; set history to None to forget it")
        self.session = None

    # --- magics ------------------------------------------------------------------------------

    @no_var_expand
    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> None:
        """Run the agent: ``%agent [options] prompt``, or ``%%agent [options]`` with the prompt as the cell.

        Options (defaults for the notebook: ``%agent_config``):
          -p/--provider SPEC|VAR   a spec ('openai:gpt-4o-mini', 'local') or a Provider variable
          -m/--model NAME          the model part of the spec; --base-url URL for OpenAI-compatible servers
          --tool-calling MODE      openai: auto (default), native, or untooled (tools in the prompt)
          -t/--tools a,b|none      tools by variable name (default: every @tool in the notebook)
          -n/--max-tool-calls N    tool-call limit (default 10)
          -c/--tool-choice C       auto (default), required, none, or a tool name to force its call
          -s/--system TEXT         system prompt ({name} is filled in too)
          --stream / --no-stream   stream the model's text into the trace (default: where the provider can)
          --step                   step-through debugger; it is kept in _agent_debugger
          -q/--quiet               show nothing
          -o/--out VAR             also store the RunResult in VAR (it is always in _agent_result)
          --new                    start a new conversation (also: %agent_reset)
          --output-type TYPE       the answer's type as written in Python (Price, list[Price],
                                   Price | None; names from the notebook): _agent_result.value
          --mcp CMD|URL|VAR        tools of an MCP server: a command line ("python server.py"), an
                                   http(s) URL, or an MCPServer variable; repeat for more servers.
                                   A server starts once and is reused by later runs.
          --fork N                 fork the last result (_agent_result) at step N: its editor opens
                                   there, prefilled; "Fork from here" runs the fork below
          --kernel read|code|sandbox  the kernel's tools beside the @tools: read its variables and
                                   cells; code adds run_python in the notebook (each call approved
                                   in the trace); sandbox runs it in a second kernel

        ``{name}`` in the prompt is replaced by the notebook variable (``{{`` for a brace);
        ``@name`` of a variable puts its description (what describe() shows) below the prompt.
        """
        try:
            plan = self._plan(line, cell)
            if plan is None:
                return

            def attach(handle: RunHandle) -> None:
                if plan.widget is not None:
                    plan.widget.on_stop(handle.cancel)

            make = lambda: drive(plan.agent, plan.prompt, history=plan.history, on_event=plan.on_event, link=plan.link)  # noqa: E731
            plan.store(run_blocking(make, attach))
        except UserError as exc:
            raise UsageError(_one_line(exc)) from None

    @no_var_expand
    @line_magic
    def agent_config(self, line: str) -> MagicOptions:
        """Set notebook defaults for ``%agent`` (same options); ``--reset`` clears them."""
        try:
            if line.strip() == "--reset":
                self.defaults = MagicOptions()
                return self.defaults
            opts, rest = parse_line(line)
            if rest:
                raise UserError(f"%agent_config takes only options, not {rest!r}")
            if opts.new or opts.out:
                raise UserError("--new and --out apply to one run, not as defaults")
            if opts.fork is not None:
                raise UserError("--fork forks the last result; it is no default")
            merged = opts.merged_over(self.defaults)
            if opts.provider or opts.model:
                self._provider(merged)  # a wrong spec is reported now, not at the first run
            self.defaults = merged
            return self.defaults
        except UserError as exc:
            raise UsageError(_one_line(exc)) from None

    @line_magic
    def agent_reset(self, line: str = "") -> None:
        """Forget the conversation (the next ``%agent`` starts fresh); stop a paused run."""
        if self.debugger is not None and self.debugger.state in ("paused", "running"):
            self.debugger.stop()
        self.session = None

    # --- a run -------------------------------------------------------------------------------

    async def run_async(self, line: str, cell: str | None = None) -> None:
        """The magic as a coroutine, awaited by the kernel (see :func:`_await_agent_magics`).

        The cell waits for the run while the kernel's event loop stays free, so the Stop
        button works (ipykernel >= 7.4) and no loop is re-entered.
        """
        try:
            plan = self._plan(line, cell)
            if plan is None:
                return
            loop = asyncio.get_running_loop()
            task = loop.create_task(
                drive(plan.agent, plan.prompt, history=plan.history, on_event=plan.on_event, link=plan.link)
            )
            if plan.widget is not None:
                plan.widget.on_stop(lambda: loop.call_soon_threadsafe(task.cancel))
            try:
                result = await asyncio.shield(task)
            except (asyncio.CancelledError, KeyboardInterrupt):  # the kernel was interrupted
                task.cancel()
                result = await task
            plan.store(result)
        except UserError as exc:
            raise UsageError(_one_line(exc)) from None

    def _plan(self, line: str, cell: str | None) -> _Plan | None:
        opts, prompt = parse_line(line)
        if opts.fork is not None:
            self._fork(opts.fork, prompt, cell)
            return None
        if cell is not None:
            if prompt:
                raise UserError(f"%%agent takes options on its first line and the prompt in the cell; not {prompt!r}")
            prompt = cell.strip()
        if not prompt:
            raise UserError("no prompt: write it after the options (%agent) or in the cell body (%%agent)")
        return self._prepare(opts.merged_over(self.defaults), prompt)

    def _fork(self, at: int, prompt: str, cell: str | None) -> None:
        """``%agent --fork N``: the fork editor of the last result, open at step N."""
        if prompt or (cell or "").strip():
            raise UserError("--fork N takes no prompt: the fork's edit is made in the editor it opens")
        result = self.shell.user_ns.get("_agent_result")
        if not isinstance(result, RunResult):
            raise UserError("no result to fork: run %agent first (its result is _agent_result)")
        from agentnb.notebook.forks.display import show_editor
        from agentnb.notebook.trace.widget import fork_editor

        panel = fork_editor(result, at)
        if not show_editor(panel):  # in a kernel's cell it keeps its forks and freezes later
            _display(panel)

    def _prepare(self, opts: MagicOptions, prompt: str) -> _Plan | None:
        """Build the agent; start a step-through run (returns None) or say how to run."""
        ns = self.shell.user_ns
        if self.debugger is not None and self.debugger.state in ("paused", "running"):
            raise UserError(f"a step-through run is still going: {DEBUGGER_VAR}.stop() or .continue_() it first")
        if opts.out:
            check_out(opts.out, ns)
        prompt = _mention(prompt, ns, getattr(self.shell, "user_ns_hidden", None))
        system = interpolate(opts.system, ns) if opts.system else None
        kwargs: dict[str, Any] = {"system": system}
        if opts.max_tool_calls is not None:
            kwargs["max_tool_calls"] = opts.max_tool_calls
        if opts.tool_choice is not None:
            kwargs["tool_choice"] = opts.tool_choice
        if opts.output_type is not None:  # a type as written in Python: Price, list[Price], Price | None
            kwargs["output_type"] = type_from_text(opts.output_type, ns)
        tools: list[Any] = self._tools(opts.tools)  # checked before a (possibly slow) provider is built
        tools += self._kernel(opts.kernel)
        tools += self._mcp(opts.mcp or ())
        provider = self._provider(opts)
        # Stream unless told not to, where the provider can: the answer appears as it is written.
        streams = bool(getattr(provider, "supports_streaming", False))
        kwargs["stream"] = streams if opts.stream is None else opts.stream
        agent = Agent(provider, tools, **kwargs)
        for key, cached in self._providers.items():
            if cached is provider:  # keep the UnTooled wrapper (and its caches) for next time
                self._providers[key] = agent.provider
        if opts.new or self.session is None:
            self.session = Session(agent)
        session = self.session
        session.agent = agent
        earlier = list(session.messages)
        history, link = session.prepare(prompt)
        mode = self._mode(opts)

        widget: Any = None

        def store(result: RunResult) -> None:
            ns[RESULT_VAR] = result
            if opts.out:
                ns[opts.out] = result
            session.record(history, result)
            if widget is not None:
                widget.finish(result)  # the "Save transcript" link

        if opts.step:
            self._start_debugger(agent, prompt, history, mode, store, opts.out, link)
            return None
        if mode == "widget":
            from agentnb.notebook.trace.widget import TraceWidget

            widget = TraceWidget(history=earlier or None).show()
            return _Plan(agent, prompt, history, store, widget, widget, link)
        return _Plan(agent, prompt, history, store, _printer() if mode == "text" else None, None, link)

    def _start_debugger(
        self,
        agent: Agent,
        prompt: str,
        history: list[Message] | None,
        mode: str,
        store: Any,
        out: str | None,
        link: Any = None,
    ) -> None:
        from agentnb.notebook.debugger.debugger import Debugger
        from agentnb.notebook.magics.pending import PendingResult

        dbg = Debugger(agent, widget=mode == "widget")
        ns = self.shell.user_ns
        self.debugger = ns[DEBUGGER_VAR] = dbg
        for name in (RESULT_VAR, out):  # never the previous run's result: the next cell may read it at once
            if name:
                ns[name] = PendingResult(dbg, name)
        handle = None
        if mode == "widget":
            dbg.view.show()  # live while it runs, then static (the view replaces its display itself)
        elif mode != "quiet":
            handle = _display(dbg)

        def finished(result: RunResult) -> None:
            store(result)
            if handle is not None:  # so the saved text/plain shows the whole trace
                handle.update(dbg)

        dbg.start(prompt, history=history, on_end=finished, on_event=_printer() if mode == "text" else None, link=link)

    def _mode(self, opts: MagicOptions) -> str:
        if opts.quiet:
            return "quiet"
        if self.display_mode != "auto":
            return self.display_mode
        return "widget" if getattr(self.shell, "kernel", None) is not None else "text"


def _display(obj: Any) -> Any:
    from IPython.display import display

    return display(obj, display_id=True)


def _printer() -> Any:
    from agentnb.printer import TextPrinter

    return TextPrinter(sys.stdout)


def _mention(prompt: str, ns: dict[str, Any], hidden: Any) -> str:
    """``{name}`` filled in, then ``@name`` of a variable described below the prompt (as typed:
    a filled-in value is not searched for mentions)."""
    from agentnb.kernel.mentions import find_mentions, with_mentions

    mentioned = find_mentions(prompt, ns, hidden) if "@" in prompt else []
    return with_mentions(interpolate(prompt, ns), ns, hidden, mentioned=mentioned)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


_MAGIC_CALLS = ("get_ipython().run_cell_magic('agent', ", "get_ipython().run_line_magic('agent', ")
_AWAITED = "await get_ipython().magics_manager.registry['AgentMagics'].run_async("


def _await_agent_magics(lines: list[str]) -> list[str]:
    r"""Input transformer: a top-level ``%agent`` / ``%%agent`` becomes an awaited coroutine.

    In a kernel the cell then waits for the run on the kernel's own event loop, which keeps
    handling widget messages (the Stop button) without re-entering the loop.

    >>> _await_agent_magics(["get_ipython().run_line_magic('agent', 'hi')\n"])
    ["await get_ipython().magics_manager.registry['AgentMagics'].run_async('hi')\n"]
    """
    out = []
    for line in lines:
        for prefix in _MAGIC_CALLS:
            if line.startswith(prefix):
                line = _AWAITED + line[len(prefix) :]
        out.append(line)
    return out


def _protect_questions(lines: list[str]) -> list[str]:
    r"""Input transformer: ``%agent ... word?`` is a prompt, not a request for help on ``word``.

    IPython turns a line ending in ``?`` into help before line magics run; this runs first and
    writes the magic call out, so the question reaches the agent.

    >>> _protect_questions(["%agent What is the weather in Paris?\n"])
    ["get_ipython().run_line_magic('agent', 'What is the weather in Paris?')\n"]
    >>> _protect_questions(["%agent?\n"])
    ['%agent?\n']
    """
    out = []
    for line in lines:
        stripped = line.rstrip("\n")
        if stripped.startswith("%agent ") and stripped.rstrip().endswith("?"):
            line = f"get_ipython().run_line_magic('agent', {stripped[len('%agent ') :].strip()!r})\n"
        out.append(line)
    return out


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics on ``ipython`` (called by ``%load_ext agentnb``)."""
    ipython.register_magics(AgentMagics)
    from agentnb.kernel.history import track
    from agentnb.notebook.magics.evaluate import EvalMagics

    track(ipython)  # the order variables are defined in, for list_variables (most recent first)

    ipython.register_magics(EvalMagics)
    if _protect_questions not in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.append(_protect_questions)
    if getattr(ipython, "kernel", None) is not None and _await_agent_magics not in ipython.input_transformers_post:
        ipython.input_transformers_post.append(_await_agent_magics)
