"""What the reflector reads, and what is taken from its reply.

For each failing *training* case the reflector is shown the input, the agent's output, the
expected value, each scorer's verdict and the trace: the tool calls with their arguments, their
results or errors, rejected arguments and unknown tools, read from the run's events. Every piece
is bounded, so one long output cannot crowd the others out. The prompt is a data file
(``reflect_prompt.md``) next to this module.

The reply's new text is the content of its first fenced block, else the whole reply. A reply
with no text, the same text again, or a text past :data:`MAX_TEXT` is not usable: that candidate
is skipped, and the reason is shown.

>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> run = Agent(ScriptedProvider(["5"])).run("2 + 2?")
>>> row = {"input": "2 + 2?", "output": "5", "expected": "4", "scores": {"exact": False},
...        "scorer_errors": {}, "stop_reason": "answer", "error": None}
>>> print(case_record(1, row, run, {"exact": 0.5}))
### Failed case 1
Input: 2 + 2?
Output: 5
Expected: 4
Verdicts: exact = False (fails)
Trace: no tool calls; the run ended with stop_reason 'answer'
>>> new_text("Here it is:\\n```\\nAnswer with digits only.\\n```", "Be brief.")
('Answer with digits only.', None)
>>> new_text("", "Be brief.")
(None, 'the reflector replied with no text')
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

from agentnb.improvement.texts import describe

#: Characters of one value (an input, an output, a tool result) the reflector is shown.
MAX_VALUE = 1200
#: Tool calls of one run the reflector is shown (the first ones, then how many more).
MAX_STEPS = 12
#: The longest new text taken from a reply.
MAX_TEXT = 12000


def _short(value: Any, limit: int = MAX_VALUE) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[: limit - 40] + f" … [{len(text) - limit + 40} more characters]"
    return text


def case_record(n: int, row: dict[str, Any], result: Any, thresholds: dict[str, float]) -> str:
    """One failing case as the reflector reads it."""
    lines = [
        f"### Failed case {n}",
        f"Input: {_short(row.get('input'))}",
        f"Output: {_short(row.get('output') or '')}",
        f"Expected: {_short(row.get('expected'))}",
    ]
    verdicts = []
    for name, value in (row.get("scores") or {}).items():
        error = (row.get("scorer_errors") or {}).get(name)
        if error is not None:
            verdicts.append(f"{name} raised {_short(error, 300)}")
        else:
            ok = value is not None and float(value) >= thresholds.get(name, 0.5)
            verdicts.append(f"{name} = {value} ({'passes' if ok else 'fails'})")
    lines.append("Verdicts: " + ("; ".join(verdicts) if verdicts else "no scorer; the run itself failed"))
    if row.get("error"):
        lines.append(f"Run error: {_short(row['error'], 400)}")
    lines.append(trace_text(result, row.get("stop_reason")))
    return "\n".join(lines)


def trace_text(result: Any, stop_reason: Any = None) -> str:
    """The tool calls of a run, one line each, with their results or errors."""
    events = getattr(result, "events", ()) if result is not None else ()
    steps: list[str] = []
    for e in events:
        kind = e.kind
        if kind == "tool_call":
            steps.append(f"call {e.name}({_short(e.arguments, 300)})")
        elif kind == "unknown_tool":
            steps.append(f"  -> unknown tool {e.name!r} (tools: {', '.join(e.available)})")
        elif kind == "validation" and e.errors:
            steps.append(f"  -> arguments rejected: {_short('; '.join(e.errors), 300)}")
        elif kind == "dedup" and e.seen_before:
            steps.append("  -> a repeat of an earlier call")
        elif kind == "tool_finished":
            said = f"error: {_short(e.error, 400)}" if e.error else _short(e.result, 400)
            steps.append(f"  -> {said}")
        elif kind == "limit_reached":
            steps.append(f"  -> limit reached: {e.limit}")
    reason = stop_reason or getattr(result, "stop_reason", None)
    if not steps:
        return f"Trace: no tool calls; the run ended with stop_reason {reason!r}"
    calls = [i for i, s in enumerate(steps) if s.startswith("call ")]
    more = ""
    if len(calls) > MAX_STEPS:
        more = f"\n  … {len(calls) - MAX_STEPS} more tool calls"
        steps = steps[: calls[MAX_STEPS]]
    return "Trace:\n  " + "\n  ".join(steps) + more + f"\n  (the run ended with stop_reason {reason!r})"


@functools.lru_cache(maxsize=1)
def _template() -> str:
    return resources.files("agentnb.improvement").joinpath("reflect_prompt.md").read_text(encoding="utf-8")


def reflector_prompt(component: str, text: str, records: list[str]) -> str:
    """The whole request to the reflector for one component."""
    body = _template()
    # Filled one placeholder at a time, each once: texts may hold braces or the placeholders' names.
    head, _, rest = body.partition("{what}")
    mid, _, rest = rest.partition("{text}")
    before, _, tail = rest.partition("{records}")
    return head + describe(component) + mid + text + before + "\n\n".join(records) + tail


def new_text(reply: str, current: str) -> tuple[str | None, str | None]:
    """(the new text, None) or (None, why it cannot be used)."""
    text = _fenced(reply) if "```" in reply else reply
    text = text.strip()
    if not text:
        return None, "the reflector replied with no text"
    if text == current.strip():
        return None, "the reflector gave the same text back"
    if len(text) > MAX_TEXT:
        return None, f"the new text is {len(text)} characters long (at most {MAX_TEXT})"
    return text, None


def _fenced(reply: str) -> str:
    """The content of the first ``` block (an unclosed block runs to the end)."""
    start = reply.index("```")
    newline = reply.find("\n", start)
    if newline < 0:
        return ""
    end = reply.find("```", newline + 1)
    return reply[newline + 1 : end if end >= 0 else len(reply)]


async def propose(reflector: Any, prompt: str, limits: Any, current: str) -> tuple[str | None, str | None, Any]:
    """Ask the reflector once: (new text or None, why not, its RunResult)."""
    result = await reflector.arun(prompt, limits=limits, on_cancel="return")
    if result.stop_reason not in ("answer", "limit"):
        why = result.error or f"the reflector's run ended with stop_reason {result.stop_reason!r}"
        return None, f"the reflector failed: {why}", result
    if result.stop_reason == "limit" and result.limit != "tool_calls":  # its text may be agentnb's note
        return None, f"the reflector's run reached its usage limit ({result.limit})", result
    text, why = new_text(result.output, current)
    return text, why, result


REFLECTOR_SYSTEM = (
    "You improve the instructions and tool descriptions of AI agents from their failures. "
    "You answer with the improved text only, inside one ``` block."
)


def as_reflector(reflector: Any) -> Any:
    """An :class:`~agentnb.Agent` from an agent, a provider or a provider spec such as ``"openai:gpt-4o"``."""
    from agentnb.errors import UserError
    from agentnb.run.agent import Agent

    if reflector is None:
        raise UserError("improve needs reflector=: an Agent, a provider, or a spec such as 'openai:gpt-4o-mini'")
    if isinstance(reflector, Agent):
        return reflector
    try:
        return Agent(reflector, system=REFLECTOR_SYSTEM)
    except UserError as exc:
        raise UserError(f"reflector={reflector!r}: {exc}") from None
