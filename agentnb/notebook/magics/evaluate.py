"""``%agent_eval DATASET AGENT [AGENT ...] [options]``: evaluate agents from the namespace.

DATASET is a variable (a list, a DataFrame) or a quoted ``.jsonl`` / ``.csv`` path; each AGENT
is a variable holding an Agent (two or more are compared, named by their variables). Scorers
are given by name: built-ins (``exact``, ``contains``, ``regex``, ``number``, ``value_equals``,
``no_tool``) or functions from the namespace. The :class:`~agentnb.evaluation.Evaluation` is
the cell's value::

    %agent_eval questions agent_a agent_b --scorers contains,my_check --concurrency 16 --log runs.jsonl
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class

from agentnb.errors import UserError
from agentnb.evaluation.scorers import BY_NAME


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%agent_eval", add_help=False, exit_on_error=False)
    p.add_argument("dataset")
    p.add_argument("agents", nargs="+")
    p.add_argument("--scorers", default="")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--timeout", type=float, default=None)
    p.add_argument("--log", default=None)
    p.add_argument("--executor", default="local", choices=("local", "ray"))
    p.add_argument("--input", default="input")
    p.add_argument("--expected", default="expected")
    p.add_argument("--no-progress", action="store_true", help="no progress widget")
    return p


def plan(line: str, namespace: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
    """(agents, dataset, options) from a magic line; a UserError says what is wrong."""
    try:
        args = parser().parse_args(shlex.split(line))
    except (argparse.ArgumentError, ValueError, SystemExit) as exc:
        raise UserError(
            f"%agent_eval: {exc}; usage: %agent_eval DATASET AGENT [AGENT ...] [--scorers a,b] ..."
        ) from None
    dataset = namespace.get(args.dataset, args.dataset)
    agents = {}
    for name in args.agents:
        if name not in namespace:
            raise UserError(f"%agent_eval: no variable {name!r} in the notebook")
        agents[name] = namespace[name]
    scorers: list[Any] = []
    for name in filter(None, (s.strip() for s in args.scorers.split(","))):
        fn = namespace.get(name)
        # A built-in's factory imported under its own name (``contains``) means the built-in.
        scorers.append(fn if callable(fn) and fn is not BY_NAME.get(name) else name)
    options = {
        "scorers": scorers,
        "concurrency": args.concurrency,
        "repeats": args.repeats,
        "timeout": args.timeout,
        "log": args.log,
        "executor": args.executor,
        "input": args.input,
        "expected": args.expected or None,
    }
    if args.no_progress:
        options["progress"] = False
    return agents if len(agents) > 1 else next(iter(agents.values())), dataset, options


@magics_class
class EvalMagics(Magics):
    @line_magic
    def agent_eval(self, line: str) -> Any:
        from agentnb.evaluation import evaluate

        try:
            agents, dataset, options = plan(line, self.shell.user_ns if self.shell is not None else {})
            return evaluate(agents, dataset, **options)
        except UserError as exc:
            print(f"agentnb: {exc}")
            return None
