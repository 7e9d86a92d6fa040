"""The exception tree, split by who caused the problem.

* :class:`UserError` and its subclasses are programmer mistakes (a bad tool definition, an
  unknown provider spec, a missing optional dependency). They are raised at once and say how
  to fix the problem.
* :class:`ModelBehaviorError` describes a model that misbehaved (unparseable output, a
  schema-invalid call). The loop turns these into messages the model reads; they are only
  raised where there is nobody left to read them.
* :class:`ProviderError` wraps failures of the model backend (authentication, rate limits,
  server errors). A run that hits one stops with ``stop_reason="error"`` and keeps its
  transcript.
"""

from __future__ import annotations

from typing import Any


class AgentnbError(Exception):
    """Base class of every exception agentnb raises on purpose.

    >>> from agentnb import Agent
    >>> try:
    ...     Agent("no-such-provider")
    ... except AgentnbError as exc:
    ...     print(type(exc).__name__)
    UserError
    """


class UserError(AgentnbError):
    r"""A usage mistake by the programmer; the message says how to fix it.

    IPython shows it as one line (no traceback through agentnb's frames), like a UsageError:

    >>> UserError("no such tool 'x'\n  - try 'y'")._render_traceback_()
    ["\x1b[0;31mUserError\x1b[0m: no such tool 'x' - try 'y'"]
    """

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an exception is shown
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {' '.join(str(self).split())}"]


class ToolDefinitionError(UserError):
    """A tool could not be built; ``problems`` lists every problem found.

    >>> from agentnb import tool
    >>> def untyped(x):
    ...     return x
    >>> try:
    ...     tool(untyped)
    ... except ToolDefinitionError as exc:
    ...     print(exc.problems)
    ['parameter x: missing type annotation', 'no description: add a docstring or pass description=...']
    """

    def __init__(self, name: str, problems: list[str]) -> None:
        self.name = name
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid tool {name!r}:\n{lines}")


class MissingDependencyError(UserError):
    """An optional dependency is not installed; the message names the extra to install.

    >>> print(MissingDependencyError("OpenAIProvider", "openai"))
    OpenAIProvider needs the 'openai' extra: pip install 'agentnb[openai]'
    """

    def __init__(self, what: str, extra: str) -> None:
        self.extra = extra
        super().__init__(f"{what} needs the '{extra}' extra: pip install 'agentnb[{extra}]'")


class ModelBehaviorError(AgentnbError):
    """The model produced something the loop cannot use.

    Usually it is fed back to the model; a run ends with it only when nobody is left to read
    it, e.g. a scripted model that runs out of replies:

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> Agent(ScriptedProvider([])).run("hi").error
    'ModelBehaviorError: ScriptedProvider ran out of replies after 0 requests'
    """


class ProviderError(AgentnbError):
    """The model backend failed. ``status`` is the HTTP status where there is one.

    A run that hits one ends with ``stop_reason="error"`` and keeps its transcript:

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> r = Agent(ScriptedProvider([ProviderError("server down", status=503)])).run("hi")
    >>> r.stop_reason, r.error, r.exception.status
    ('error', 'ProviderError: server down', 503)
    """

    #: Events of what happened before the failure, e.g. the retries (RequestRetried) it took.
    events: tuple[Any, ...] = ()
    #: The server's whole message, where the error's own text gives it shortened (without the
    #: server's traceback and file paths, on one line); "" where the text has it all.
    detail: str = ""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class AuthenticationError(ProviderError):
    """The backend rejected the credentials (HTTP 401/403).

    >>> isinstance(AuthenticationError("bad key", status=401), ProviderError)
    True
    """


class ModelNotFoundError(ProviderError):
    """The backend does not know the requested model (HTTP 404).

    >>> ModelNotFoundError("model 'x' not found", status=404).status
    404
    """


class RateLimitError(ProviderError):
    """The backend refused the request for now; retried with backoff before this is raised.

    >>> RateLimitError("slow down", status=429).status
    429
    """


class ServerError(ProviderError):
    """The backend failed with a 5xx status (after retries).

    >>> issubclass(ServerError, ProviderError)
    True
    """


class ContextOverflow(AgentnbError):  # noqa: N818 - the name the issue gives it
    """A request does not fit the model's context window, and nothing more could be left out.

    Raised (as the run's error) when a server refuses a request as too long and the run has no
    compaction policy (:class:`agentnb.Compaction`), when compaction and one retry did not make
    it fit, or when what can never be left out (the system prompt, the first user message, the
    tools and the newest step) is alone larger than the window. ``tokens`` is the request's size
    as the server or agentnb counted it (None: not said), ``window`` the window (None: unknown).

    >>> err = ContextOverflow(9120, 8000, "the server refused the request")
    >>> print(err)
    the request (9,120 tokens) does not fit the context window (8,000 tokens): the server refused the request
    >>> err.tokens, err.window
    (9120, 8000)
    """

    def __init__(self, tokens: int | None, window: int | None, why: str = "", *, status: int | None = None) -> None:
        self.tokens, self.window, self.status = tokens, window, status
        #: The server's whole message where it was shortened (as on ProviderError), else "".
        self.detail = ""
        size = f"{tokens:,} tokens" if tokens is not None else "size not said"
        room = f"{window:,} tokens" if window is not None else "size unknown"
        tail = f": {why}" if why else ""
        super().__init__(f"the request ({size}) does not fit the context window ({room}){tail}")


class StopRun(AgentnbError):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a step controller (the debugger's Stop) to end a run as ``cancelled``.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> class StopFirst:
    ...     async def before_model(self, depth, request):
    ...         raise StopRun
    ...     async def before_tool(self, depth, call): ...
    >>> Agent(ScriptedProvider(["never"])).run("hi", controller=StopFirst()).stop_reason
    'cancelled'
    """


class InboxClosedError(UserError):
    """A message sent to an :class:`~agentnb.Inbox` whose run has ended (answered, stopped or
    failed): it was not sent, and the error says how the run ended.

    >>> from agentnb import Inbox
    >>> inbox = Inbox()
    >>> inbox.close("cancelled")
    >>> try:
    ...     inbox.send("too late")
    ... except InboxClosedError as exc:
    ...     print(exc)
    this inbox's run has ended (stopped): the message was not sent; make a new agentnb.Inbox() for the next run
    """


class TranscriptError(UserError, ValueError):
    """A file agentnb wrote (a transcript, a saved session, an evaluation log) could not be read;
    the message names the file, the line (in a log) and the field, and what is wrong.

    >>> import tempfile
    >>> from agentnb import load_transcript
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write("[]")
    >>> try:
    ...     load_transcript(f.name)
    ... except TranscriptError as exc:
    ...     print(str(exc).endswith("a transcript is a JSON object, not list"))
    True
    """
