"""Events of what a person or the system decided around a run: approvals, retries, the loading
of an in-process model, the provider that answered (fallback), a sub-agent's events, the
history kept in the context window, and a person's message to a running agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agentnb.events.base import _EventBase
from agentnb.messages import Usage


@dataclass(frozen=True, slots=True)
class ApprovalRequested(_EventBase):
    """A call needs a decision before it runs (see :mod:`agentnb.control.approval`); the run waits."""

    depth: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    approver: str
    kind: Literal["approval_requested"] = "approval_requested"


@dataclass(frozen=True, slots=True)
class ApprovalDecided(_EventBase):
    """The decision on a call that needed approval: ``approve``, ``deny`` or ``edit``.

    ``by`` says who decided (``"widget"``, ``"terminal"``, ``"policy NAME"``, ``"unattended"``);
    ``reason`` is what the model reads for a denial; ``arguments`` the edited arguments.
    """

    depth: int
    call_id: str
    name: str
    decision: Literal["approve", "deny", "edit"]
    by: str
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    kind: Literal["approval_decided"] = "approval_decided"


@dataclass(frozen=True, slots=True)
class UserInterjected(_EventBase):
    """A person's message to the running agent (sent to its :class:`~agentnb.Inbox`), added as a
    user message before the model request of step ``depth``: after a step's last tool result,
    never between a call and its result (:mod:`agentnb.control.inbox`)."""

    depth: int
    text: str
    kind: Literal["user_interjected"] = "user_interjected"


@dataclass(frozen=True, slots=True)
class RequestRetried(_EventBase):
    """A provider's request failed in a way worth retrying (429, 5xx, a dropped connection) and
    was sent again after ``delay`` seconds (:mod:`agentnb.providers.retry`).

    ``attempt`` counts the retries (1 first) out of ``retries``; ``status`` is the HTTP status
    (None for a connection failure).
    """

    depth: int
    provider: str
    attempt: int
    retries: int
    reason: str
    delay: float
    status: int | None = None
    kind: Literal["request_retried"] = "request_retried"

    def describe(self) -> str:
        """In words, e.g. ``rate limited, retrying in 2.0 s (retry 1 of 2)``."""
        return f"{self.reason}, retrying in {self.delay:.1f} s (retry {self.attempt} of {self.retries})"


@dataclass(frozen=True, slots=True)
class ModelLoading(_EventBase):
    """An in-process model's weights are loaded for this request, the first to need them
    (:mod:`agentnb.providers.hf.lazy`): said as the load begins (``seconds`` None), then with
    how long it took.
    """

    depth: int
    provider: str
    seconds: float | None = None
    kind: Literal["model_loading"] = "model_loading"

    def describe(self) -> str:
        """In words, e.g. ``loading the model's weights (its first request)…``.

        >>> ModelLoading(0, "local", 11.25).describe()
        "model's weights loaded in 11.2 s (its first request)"
        """
        if self.seconds is None:
            return "loading the model's weights (its first request)…"
        return f"model's weights loaded in {self.seconds:.1f} s (its first request)"


@dataclass(frozen=True, slots=True)
class ProviderAnswered(_EventBase):
    """Which provider of a :class:`~agentnb.providers.fallback.FallbackProvider` answered this
    step (``index``: its place, 0 the preferred); ``passed`` lists the providers tried or skipped
    before it, each with why: ``(name, reason)``."""

    depth: int
    provider: str
    index: int
    passed: tuple[tuple[str, str], ...] = ()
    kind: Literal["provider_answered"] = "provider_answered"


@dataclass(frozen=True, slots=True)
class SubAgentEvent(_EventBase):
    """An event of an agent run by a tool of this run (:meth:`agentnb.Agent.as_tool`).

    ``call_id`` is this run's tool call that runs the inner agent, ``agent`` its name and
    ``event`` the inner run's own event (itself a ``SubAgentEvent`` one level further down).
    The inner run's events arrive live, between the call's ``tool_started`` and
    ``tool_finished``; they start with its ``run_started`` and end with its ``run_finished``.
    """

    depth: int
    call_id: str
    agent: str
    event: Any
    kind: Literal["sub_agent"] = "sub_agent"


@dataclass(frozen=True, slots=True)
class HistoryTrimmed(_EventBase):
    """Old turns of a conversation were left out so it fits the model's context window.

    Whole turns go, oldest first (a tool call never without its result); the system prompt
    stays. ``dropped_turns`` / ``dropped_messages`` say how much; ``kept_messages`` is what the
    model reads now; ``reason`` names the bound (``max_messages=40``, ``max_tokens=2000``).
    """

    depth: int
    dropped_turns: int
    dropped_messages: int
    kept_messages: int
    reason: str
    kind: Literal["history_trimmed"] = "history_trimmed"


@dataclass(frozen=True, slots=True)
class ContextCompacted(_EventBase):
    """The request of step ``depth`` was made to fit the context window (:mod:`agentnb.context`).

    ``steps`` are the steps taken, cheapest first: ``"clear"`` (old tool results replaced by a
    marker; ``cleared`` lists each as ``(call id, tool, characters cut)``), ``"drop"`` (the
    oldest turns left out; ``dropped_messages``) and ``"summarize"`` (what was dropped, summarised
    by a model: ``summary``; the request it sent is ``summary_request``, its usage ``usage``).
    ``tokens_before`` / ``tokens_after`` are the request's size, ``window`` the window, ``reason``
    why (``"at=0.8"``, or the server's overflow error). ``note`` says what did not work (a
    summariser that failed: the cheaper steps stand).

    The run's messages keep the whole history; ``messages`` is what the model reads from now on in
    place of its first ``upto`` messages (message dicts; one the history holds is ``{"history": index}``:
    :func:`agentnb.context.compaction.sent_messages` reads them), so each request can be rebuilt exactly.
    """

    depth: int
    steps: tuple[str, ...]
    tokens_before: int
    tokens_after: int
    window: int
    reason: str
    upto: int
    messages: tuple[dict[str, Any], ...]
    cleared: tuple[tuple[str, str, int], ...] = ()
    dropped_messages: int = 0
    summary: str | None = None
    summary_request: tuple[dict[str, Any], ...] = ()
    usage: Usage | None = None
    note: str = ""
    kind: Literal["context_compacted"] = "context_compacted"

    def describe(self) -> str:
        """In words, e.g. ``context compacted (clear, drop): 7,100 -> 3,900 tokens of 8,000``."""
        what = ", ".join(self.steps) or "nothing left out"
        tail = f"; {self.note}" if self.note else ""
        return (
            f"context compacted ({what}): {self.tokens_before:,} -> {self.tokens_after:,} tokens "
            f"of {self.window:,}{tail}"
        )


@dataclass(frozen=True, slots=True)
class Forked(_EventBase):
    """This run is a fork (:meth:`agentnb.RunResult.fork`) of run ``parent`` at step ``forked_at``.

    Its steps before ``live_from`` come from the parent's recording (no request, no tool run);
    ``edit`` says what changed at ``forked_at``: ``{"reply": ...}``, ``{"arguments": ...}``,
    ``{"tool_result": ...}``, ``{"system": ...}`` and/or ``{"agent": ...}``.
    """

    depth: int
    parent: str | None
    forked_at: int
    edit: dict[str, Any]
    live_from: int
    kind: Literal["forked"] = "forked"

    @property
    def edited_reply(self) -> bool:
        """The reply of step ``forked_at`` is the edit's (a reply or arguments edit): its request
        was never sent."""
        return self.live_from == self.forked_at and ("reply" in self.edit or "arguments" in self.edit)

    def recorded_text(self) -> str:
        """What of the fork is the parent's recording and what is live, in words (at step 0 too).

        >>> Forked(0, "r1", 0, {"reply": "x"}, 0).recorded_text()
        'no step comes before step 0; it takes the edited reply (not sent), the steps after it are live'
        >>> Forked(0, "r1", 1, {"tool_result": {"call": "f", "result": "x"}}, 2).recorded_text()
        "steps 0 to 1 are the recording's (step 1 with its result edited); step 2 on is live"
        """
        at, n = self.forked_at, self.live_from
        if n > at:  # a result edit: step ``at`` is recorded too
            took = "step 0 is" if n == 1 else f"steps 0 to {n - 1} are"
            return f"{took} the recording's (step {at} with its result edited); step {n} on is live"
        took = "step 0 is" if at == 1 else f"steps 0 to {at - 1} are"
        took = "no step comes before step 0" if at == 0 else f"{took} the recording's"
        if not self.edited_reply:
            return f"{took}; step {at} on is live"
        if "reply" in self.edit:
            it = "it" if at == 0 else f"step {at}"
            return f"{took}; {it} takes the edited reply (not sent), the steps after it are live"
        return (
            f"{took}; step {at} keeps its recorded reply (not sent) with the edited arguments, its other calls "
            "their recorded results (not run again); the steps after it are live"
        )

    def describe(self) -> str:
        """The edit in words, e.g. ``the result of lookup replaced: 'rain'``."""
        e, parts = self.edit, []
        if "reply" in e:
            r = e["reply"]
            said = repr(r) if isinstance(r, str) else ", ".join(f"{c.get('name')}(...)" for c in r or ())
            parts.append(f"the reply replaced: {said}")
        if "arguments" in e:
            parts.append(f"the arguments of {_which(e['arguments'])} edited")
        if "tool_result" in e:
            parts.append(f"the result of {_which(e['tool_result'])} replaced: {e['tool_result'].get('result')!r}")
        if "system" in e:
            parts.append("a new system prompt")
        if "agent" in e:
            parts.append(f"another agent ({e['agent'].get('name') or e['agent'].get('provider')})")
        return "; ".join(parts) or "no edit (the step re-run live)"


def _which(edit: dict[str, Any]) -> str:
    """The edited call: its name, and its id where the step made two calls of that name."""
    return f"{edit.get('call')} ({edit['id']})" if edit.get("id") else str(edit.get("call"))
