"""The ``agentnb`` command: ``agentnb demo``, ``agentnb run "prompt"`` and ``agentnb eval FILE``.

``agentnb demo`` runs an agent on the embedded SmolLM2-135M-Instruct model (the ``local``
provider) with a calculator, a unit converter and a calendar tool, printing the live trace.
``agentnb run`` takes any prompt, provider spec and tools from an importable module.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from agentnb.errors import UserError
from agentnb.messages import jsonfile
from agentnb.printer import TextPrinter
from agentnb.providers import get_provider
from agentnb.providers.spec import check_tool_calling
from agentnb.run.agent import DEFAULT_MAX_TOOL_CALLS, Agent
from agentnb.tools import Tool
from agentnb.untrusted import untrusted_terminal

# SmolLM2-135M decides by itself whether to call a tool (tool_choice="auto"); these requests
# show it calling each tool, then answering from the result, and answering a chat line in text.
DEMO_PROMPTS = [
    "Use the calculator: what is 37 * 91?",
    "How many miles is 42 km?",
    "What day of the week was 2000-01-01?",
    "Tell me a joke.",
]


def load_tools(specs: Sequence[str]) -> list[Tool]:
    """Tools from ``module`` (every Tool in it) or ``module:name,name``."""
    tools: list[Tool] = []
    for spec in specs:
        module_name, _, names = spec.strip().partition(":")
        module_name = module_name.strip()
        if not module_name or module_name.startswith("."):
            raise UserError(f"--tools {spec!r}: give an importable module name, as in 'module' or 'module:name,name'")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # not found, or the module failed while importing
            raise UserError(f"cannot import tools module {module_name!r}: {type(exc).__name__}: {exc}") from None
        if names:
            for name in names.split(","):
                if not name.strip():
                    raise UserError(f"--tools {spec!r}: an empty tool name (write module:name,name)")
                obj = getattr(module, name.strip(), None)
                if not isinstance(obj, Tool):
                    raise UserError(f"{module_name}:{name} is not an agentnb tool (decorate it with @tool)")
                tools.append(obj)
        else:
            found = [v for v in vars(module).values() if isinstance(v, Tool)]
            if not found:
                raise UserError(f"module {module_name!r} defines no @tool")
            tools.extend(found)
    return tools


def _say(text: str) -> None:
    """Print model text; control sequences, a lone surrogate or a narrow terminal encoding are escaped."""
    text = untrusted_terminal(text)
    try:
        print(text)
    except UnicodeEncodeError:
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        print(text.encode(encoding, "backslashreplace").decode(encoding))


def _provider_options(args: argparse.Namespace) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if getattr(args, "base_url", None):
        options["base_url"] = args.base_url
    if getattr(args, "tool_calling", None):
        check_tool_calling(str(args.provider))
        options["tool_calling"] = args.tool_calling
    return options


def _run(agent: Agent, prompt: str, stream: bool, quiet: bool, approver: Any = None) -> int:
    printer = None if quiet else TextPrinter(sys.stdout)
    result = agent.run(prompt, on_event=printer, stream=stream, approver=approver)
    if quiet:
        _say(result.output)
    return 1 if result.stop_reason == "error" else 0


def cmd_demo(args: argparse.Namespace) -> int:
    from agentnb.demo_tools import DEMO_TOOLS

    print(f"agentnb demo: provider {args.provider!r}, tools {', '.join(t.name for t in DEMO_TOOLS)}")
    print("(the first run loads the model; later steps reuse it)\n")
    agent = Agent(get_provider(args.provider, **_provider_options(args)), tools=DEMO_TOOLS)
    status = 0
    for prompt in [args.prompt] if args.prompt else DEMO_PROMPTS:
        print(f"\n>>> {prompt}")
        status |= _run(agent, prompt, args.stream, quiet=False)
    return status


def cmd_run(args: argparse.Namespace) -> int:
    tools = load_tools([s for s in args.tools.split(";") if s.strip()]) if args.tools else []
    agent = Agent(
        get_provider(args.provider, **_provider_options(args)),
        tools=tools,
        system=args.system,
        max_tool_calls=args.max_tool_calls,
        requires_approval=[n.strip() for n in args.require_approval.split(",") if n.strip()]
        if args.require_approval
        else False,
    )
    approver = _approver(args.approval)
    if args.json:
        result = agent.run(args.prompt, stream=args.stream, approver=approver)
        print(jsonfile.dumps(result.to_dict()))  # ASCII: control characters and surrogates as \u escapes
        return 1 if result.stop_reason == "error" else 0
    return _run(agent, args.prompt, args.stream, args.quiet, approver)


def _approver(mode: str | None) -> Any:
    """``--approval ask`` prompts at the terminal, ``deny`` denies; default: ask on a terminal."""
    if mode is None:
        mode = "ask" if sys.stdin.isatty() else "deny"
    if mode == "deny":
        return None  # unattended: calls that need approval are denied, with the reason
    from agentnb.terminal_approval import TerminalApprover

    return TerminalApprover()


def cmd_eval(args: argparse.Namespace) -> int:
    from agentnb.evaluation import evaluate
    from agentnb.evaluation.progress import TerminalProgress

    tools = load_tools([s for s in args.tools.split(";") if s.strip()]) if args.tools else []
    agent = Agent(get_provider(args.provider, **_provider_options(args)), tools=tools, system=args.system)
    scorers = [s.strip() for s in args.scorers.split(",") if s.strip()]
    ev = evaluate(
        agent,
        args.file,
        scorers=scorers,
        concurrency=args.concurrency,
        repeats=args.repeats,
        timeout=args.timeout,
        log=args.log,
        input=args.input,
        expected=args.expected or None,
        progress=TerminalProgress(sys.stderr, summary=False),
        stream=False,
    )
    _say(repr(ev))
    return 0 if not ev.stopped else 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agentnb", description="LLM agents you can see and debug.")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, default_provider: str) -> None:
        p.add_argument(
            "--provider",
            default=os.environ.get("AGENTNB_PROVIDER", default_provider),
            help="provider spec: 'local', 'openai:MODEL', 'hf:ID_OR_PATH' (default: %(default)s)",
        )
        p.add_argument("--base-url", help="OpenAI-compatible server URL (else OPENAI_BASE_URL)")
        p.add_argument(
            "--tool-calling",
            choices=("auto", "native", "untooled"),
            help="openai: how tools reach the model: native function calling, untooled (in the prompt), "
            "or auto (native until the server refuses tools; the default)",
        )
        p.add_argument("--no-stream", dest="stream", action="store_false", help="do not stream model output")

    demo = sub.add_parser("demo", help="run the demo agent on the embedded SmolLM2 model")
    common(demo, "local")
    demo.add_argument("--prompt", help="one prompt instead of the built-in ones")
    demo.set_defaults(func=cmd_demo)

    run = sub.add_parser("run", help="run one prompt")
    run.add_argument("prompt")
    common(run, "local")
    run.add_argument("--tools", help="'module' or 'module:name,name'; several separated by ';'")
    run.add_argument("--system", help="system prompt")
    run.add_argument("--max-tool-calls", type=int, default=DEFAULT_MAX_TOOL_CALLS)
    run.add_argument("--quiet", action="store_true", help="print only the answer")
    run.add_argument("--json", action="store_true", help="print the whole transcript as JSON")
    run.add_argument("--require-approval", metavar="NAMES", help="tools (a,b) whose calls need approval")
    run.add_argument(
        "--approval",
        choices=("ask", "deny"),
        help="calls that need approval: ask at the terminal, or deny (default: ask when stdin is a terminal)",
    )
    run.set_defaults(func=cmd_run)

    ev = sub.add_parser("eval", help="evaluate an agent on a JSONL/CSV dataset; log each case, print the summary")
    ev.add_argument("file", help="a .jsonl or .csv file: one case per line/row ('input', optional 'expected')")
    common(ev, "local")
    ev.add_argument("--log", help="JSONL log: each finished case is appended; cases already in it are skipped")
    ev.add_argument(
        "--scorers", default="contains", help="built-in scorers by name, comma-separated (default: contains)"
    )
    ev.add_argument("--concurrency", type=int, default=8)
    ev.add_argument("--repeats", type=int, default=1)
    ev.add_argument("--timeout", type=float, default=None, help="seconds per case")
    ev.add_argument("--tools", help="'module' or 'module:name,name'; several separated by ';'")
    ev.add_argument("--system", help="system prompt")
    ev.add_argument("--input", default="input", help="the input column, or a {column} template")
    ev.add_argument("--expected", default="expected", help="the expected column ('' for none)")
    ev.set_defaults(func=cmd_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"agentnb: error: {untrusted_terminal(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
