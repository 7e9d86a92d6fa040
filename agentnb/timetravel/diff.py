"""Diff: two runs step by step, to the first step where they differ.

A step is what the widget shows as ``[0]``, ``[1]``, ...: the system prompt in force, the model's
reply, its calls with their arguments, and the tools' results. Call ids, run ids, timestamps and
durations are ignored. A fork and its parent differ first at the fork step.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> a = Agent(ScriptedProvider(["Paris."])).run("Capital of France?")
>>> b = Agent(ScriptedProvider(["Paris."])).run("Capital of France?")
>>> diff(a, b).first_divergence is None
True
>>> d = diff(a, a.fork(0, reply="Lyon."))
>>> d.first_divergence, d.field
(0, 'reply')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentnb.timetravel.load import as_result

#: What a step is compared on, in this order (the first that differs names the divergence).
FIELDS = ("system", "prompt", "context", "tools", "reply", "calls", "results")


@dataclass(frozen=True, slots=True)
class StepView:
    """One step of a run as the diff compares it."""

    depth: int
    system: str | None
    prompt: str | None
    tools: tuple[str, ...]
    reply: str | None
    calls: tuple[tuple[str, Any], ...]
    results: tuple[tuple[str, str, str | None], ...]
    #: What compaction left out of this step's request (None: nothing), e.g.
    #: ``"clear (2 results), drop (4 messages)"`` (:class:`~agentnb.events.ContextCompacted`).
    context: str | None = None

    def value(self, name: str) -> Any:
        return getattr(self, name)


@dataclass(frozen=True)
class RunDiff:
    """Two runs compared step by step (see :func:`diff`).

    ``first_divergence`` is the first step where they differ (None: the same run), ``field``
    what differed there first (``system``, ``prompt``, ``tools``, ``reply``, ``calls``,
    ``results``; ``steps`` when one run has a step the other lacks), ``steps`` the pairs of
    steps (None where a run has no such step). ``str(d)`` is the plain-text view; in a notebook
    it shows as HTML.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> a = Agent(ScriptedProvider(["Paris."])).run("Capital of France?")
    >>> print(diff(a, a.fork(0, reply="Lyon.")))
    a and b differ first at step 0 (reply)
      [0]
        a: says: Paris.
        b: says: Lyon.
    answer (a -, b +):
      - Paris.
      + Lyon.
    """

    a: Any
    b: Any
    steps: tuple[tuple[StepView | None, StepView | None], ...]
    first_divergence: int | None
    field: str | None
    labels: tuple[str, str] = ("a", "b")

    @property
    def same(self) -> bool:
        return self.first_divergence is None

    def answer_diff(self) -> list[str]:
        """The two final answers as a line diff (``-`` a, ``+`` b, ``␣`` both)."""
        import difflib

        left = (self.a.output or "").splitlines() or [""]
        right = (self.b.output or "").splitlines() or [""]
        return [line for line in difflib.ndiff(left, right) if not line.startswith("?")]

    def __str__(self) -> str:
        from agentnb.timetravel.diff_view import diff_text

        return diff_text(self)

    def __repr__(self) -> str:
        where = "the same" if self.first_divergence is None else f"differ first at step {self.first_divergence}"
        return f"RunDiff({self.labels[0]} vs {self.labels[1]}: {where}{f' ({self.field})' if self.field else ''})"

    def _repr_html_(self) -> str:
        from agentnb.timetravel.diff_view import diff_html

        return diff_html(self)


def diff(a: Any, b: Any, *, labels: tuple[str, str] = ("a", "b")) -> RunDiff:
    """Compare two runs (results or transcript paths) step by step; see :class:`RunDiff`.

    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> a = Agent(ScriptedProvider(["4"])).run("2 + 2?")
    >>> b = Agent(ScriptedProvider(["5"])).run("2 + 2?")
    >>> diff(a, b, labels=("old", "new"))
    RunDiff(old vs new: differ first at step 0 (reply))
    """
    ra, rb = as_result(a), as_result(b)
    sa, sb = steps_of(ra), steps_of(rb)
    pairs = []
    first: int | None = None
    what: str | None = None
    for i in range(max(len(sa), len(sb))):
        x = sa[i] if i < len(sa) else None
        y = sb[i] if i < len(sb) else None
        pairs.append((x, y))
        if first is None:
            if x is None or y is None:
                first, what = i, "steps"
            else:
                differs = next((f for f in FIELDS if x.value(f) != y.value(f)), None)
                if differs is not None:
                    first, what = i, differs
    if first is None and (ra.output != rb.output or ra.stop_reason != rb.stop_reason):
        first, what = max(len(sa) - 1, 0), "answer"
    return RunDiff(ra, rb, tuple(pairs), first, what, labels)


def steps_of(result: Any) -> list[StepView]:
    """The steps of a run (its own, not its sub-agents'), in order."""
    events = [e for e in result.events if e.kind != "sub_agent"]
    start = events[0] if events and events[0].kind == "run_started" else None
    system = getattr(start, "system", None)
    prompt = getattr(start, "prompt", None)
    fork = next((e for e in events[:3] if e.kind == "forked"), None)
    changed = fork.edit.get("system") if fork is not None else None
    by_depth: dict[int, dict[str, Any]] = {}
    compacted: dict[int, str] = {}
    for e in events:
        kind = e.kind
        if kind == "context_compacted":
            compacted[e.depth] = compaction_text(e)
            continue
        if kind == "model_request":
            by_depth[e.depth] = {"tools": tuple(e.tools), "reply": None, "calls": [], "results": []}
            continue
        step = by_depth.get(e.depth)
        if step is None:
            continue
        if kind == "model_response":
            step["reply"] = e.text
            step["calls"] = [
                (c.name, c.arguments if c.arguments is not None else c.raw_arguments) for c in e.tool_calls
            ]
            step["order"] = {c.id: i for i, c in enumerate(e.tool_calls)}
        elif kind == "tool_finished":  # in call order, whichever finished first
            step["results"].append((step.get("order", {}).get(e.call_id, 1 << 30), e.name, e.result, e.error))
    out = []
    for depth in sorted(by_depth):
        s = by_depth[depth]
        in_force = changed if changed is not None and depth >= fork.forked_at else system  # type: ignore[union-attr]
        out.append(
            StepView(
                depth,
                in_force,
                prompt if depth == 0 else None,
                s["tools"],
                s["reply"],
                tuple(s["calls"]),
                tuple(r[1:] for r in sorted(s["results"], key=lambda r: r[0])),
                compacted.get(depth),
            )
        )
    return out


def compaction_text(e: Any) -> str:
    """What a compaction did, as a diff compares it (no token counts: estimates may move).

    >>> from agentnb.events import ContextCompacted
    >>> compaction_text(ContextCompacted(3, ("clear", "drop"), 7000, 3000, 8000, "at=0.8", 9, (),
    ...                                  (("c1", "read", 900),), 4))
    'clear (1 result), drop (4 messages)'
    """
    parts = []
    for step in e.steps:
        if step == "clear":
            n = len(e.cleared)
            parts.append(f"clear ({n} result{'s' if n != 1 else ''})")
        elif step == "drop":
            parts.append(f"drop ({e.dropped_messages} messages)")
        else:
            parts.append(step)
    return ", ".join(parts) or "nothing left out"
