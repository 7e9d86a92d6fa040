"""The error of a replay or a cassette asked something that was not recorded."""

from __future__ import annotations

from agentnb.errors import UserError


class ReplayMismatch(UserError):  # noqa: N818 - the name issue 38 gives it
    """A request that is not the recorded one: the code under test asked something else.

    ``step`` is the step (depth) of the run, ``field`` the first differing field
    (``messages[2].content``, ``tools``, ``tool_choice``), ``recorded`` and ``actual`` short
    forms of the two values there.

    >>> from agentnb import Agent, replay
    >>> from agentnb.testing import ScriptedProvider
    >>> first = Agent(ScriptedProvider(["Hi."])).run("hello")
    >>> try:
    ...     Agent(replay(first)).run("goodbye")
    ... except ReplayMismatch as e:
    ...     print(e.step, e.field, e.diff)
    0 messages[0].content - 'hello'
    + 'goodbye'
    """

    def __init__(self, step: int | None, field: str, recorded: str, actual: str, where: str = "replay") -> None:
        self.step, self.field, self.recorded, self.actual = step, field, recorded, actual
        at = f"{where} step {step}" if step is not None else where
        super().__init__(
            f"{at}: the request differs from the recorded one at {field}\n  recorded: {recorded}\n  now:      {actual}"
        )

    @property
    def diff(self) -> str:
        """The two sides, one line each (``-`` recorded, ``+`` now)."""
        return f"- {self.recorded}\n+ {self.actual}"
