"""The plain-text event printer reads well and shows every decision."""

from __future__ import annotations

import io

from agentnb import Agent, TextPrinter, ToolContext, tool
from agentnb.testing import ScriptedProvider, Streamed, call


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def pic(ctx: ToolContext) -> str:
    """Picture."""
    ctx.attach_image(b"\x89PNG....")
    return "drawn"


def test_printer_transcript() -> None:
    out = io.StringIO()
    model = ScriptedProvider(
        [
            [call("add", a=1, b=2), call("add", b=2, a=1), call("nope"), call("add", a="x", b=1)],
            call("pic"),
            Streamed(["Three", " it is."]),
        ]
    )
    Agent(model, tools=[add, pic], max_tool_calls=5).run("go", on_event=TextPrinter(out), stream=True)
    lines = [line for line in out.getvalue().splitlines() if "ms)" not in line and " in 0." not in line]
    assert lines == [
        "run started: model scripted, tools add, pic, max 5 tool calls",
        "  [0] ask model (1 message, 2 tools, choice auto; context ~82, window unknown)",
        "  [0] call add(a=1, b=2)",
        "  [0] call add(b=2, a=1)",
        f"  [0] repeat call {lines[4].split()[3]} not run, earlier result given",
        "  [0] call nope()",
        "  [0] unknown tool 'nope'; available: add, pic",
        '  [0] call add(a="x", b=1)',
        "  [0] invalid arguments: a: 'x' is not of type 'integer'",
        "  [0] run add(a=1, b=2)",
        "  [1] ask model (6 messages, 2 tools, choice auto; context ~311, window unknown)",
        "  [1] call pic()",
        "  [1] run pic()",
        "  [1] pic attached an image (image/png, 8 bytes)",
        "  [1] tool-call limit (5) reached: the model must answer now",
        "  [2] ask model (9 messages, no tools; context ~267, window unknown)",
        "  [2] model: Three it is.",
        "answer: Three it is.",
        "run finished: limit, 5 tool calls, " + lines[-1].rsplit(", ", 1)[1],  # no tokens reported: no count
    ]


def test_run_finished_counts_tokens_only_when_the_provider_reported_some() -> None:
    from agentnb import Usage
    from agentnb.notebook.trace.text import trace_text

    for usage, shown in [(Usage(10, 2), ", 24 tokens, "), (Usage(), ", ")]:
        out = io.StringIO()
        r = Agent(ScriptedProvider([call("add", a=1, b=2), "3."], usage=usage), [add]).run(
            "1+2?", on_event=TextPrinter(out)
        )
        last = out.getvalue().strip().splitlines()[-1]
        assert last.startswith("run finished: answer, 1 tool call" + shown) and "0 tokens" not in out.getvalue()
        assert ("24 tokens" in trace_text(r.events)) == bool(usage.total_tokens)
