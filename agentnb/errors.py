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


class AgentnbError(Exception):
    """Base class of every exception agentnb raises on purpose."""


class UserError(AgentnbError):
    r"""A usage mistake by the programmer; the message says how to fix it.

    IPython shows it as one line (no traceback through agentnb's frames), like a UsageError:

    >>> UserError("no such tool 'x'\n  - try 'y'")._render_traceback_()
    ["\x1b[0;31mUserError\x1b[0m: no such tool 'x' - try 'y'"]
    """

    def _render_traceback_(self) -> list[str]:  # IPython's hook for how an exception is shown
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {' '.join(str(self).split())}"]


class ToolDefinitionError(UserError):
    """A tool could not be built; ``problems`` lists every problem found."""

    def __init__(self, name: str, problems: list[str]) -> None:
        self.name = name
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid tool {name!r}:\n{lines}")


class MissingDependencyError(UserError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, what: str, extra: str) -> None:
        self.extra = extra
        super().__init__(f"{what} needs the '{extra}' extra: pip install 'agentnb[{extra}]'")


class ModelBehaviorError(AgentnbError):
    """The model produced something the loop cannot use."""


class ProviderError(AgentnbError):
    """The model backend failed. ``status`` is the HTTP status where there is one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class AuthenticationError(ProviderError):
    """The backend rejected the credentials."""


class ModelNotFoundError(ProviderError):
    """The backend does not know the requested model."""


class RateLimitError(ProviderError):
    """The backend refused the request for now; retried with backoff before this is raised."""


class ServerError(ProviderError):
    """The backend failed with a 5xx status (after retries)."""


class StopRun(AgentnbError):  # noqa: N818 - a control-flow signal, not an error
    """Raised by a step controller (the debugger's Stop) to end a run as ``cancelled``."""
