"""The terminal's approver (``agentnb run``): a prompt for each call that needs approval.

::

    add(a=1, b=2) needs approval. [a]pprove, approve a[l]l, [d]eny [reason], [e]dit {json}:

``all`` approves this call and every later one of the run without asking. An empty line or end
of input denies (a run never waits on a closed terminal). The prompt is
read on a daemon thread, so the run's event loop stays free.

>>> import io
>>> from agentnb.messages import ToolCall
>>> asker = TerminalApprover(io.StringIO("d too risky\\n"), io.StringIO())
>>> asker.ask(ToolCall("c1", "rm", {"path": "/"}))
Deny(reason='too risky')
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from agentnb.control.approval import Approve, Decision, Deny, Edit, parse_edit
from agentnb.errors import UserError
from agentnb.messages import ToolCall
from agentnb.printer import format_arguments
from agentnb.tools.running import call_in_thread
from agentnb.untrusted import untrusted_terminal


class TerminalApprover:
    """Asks at the terminal (``stdin``/``stderr`` unless given)."""

    approver_name = "terminal"

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self.stdin = stdin if stdin is not None else sys.stdin
        self.stdout = stdout if stdout is not None else sys.stderr
        #: Set by an ``all`` answer: every later call is approved unasked.
        self.approve_rest = False

    async def decide_approval(self, call: ToolCall, tool: Any = None) -> Decision:
        result: Decision = await call_in_thread(self.ask, {"call": call, "tool": tool}, "approval")
        return result

    def ask(self, call: ToolCall, tool: Any = None) -> Decision:
        """Ask until the answer is one of approve, deny or a valid edit."""
        if self.approve_rest:
            return Approve()
        shown = untrusted_terminal(f"{call.name}({format_arguments(call.arguments)})")
        while True:
            self.stdout.write(f"{shown} needs approval. [a]pprove, approve a[l]l, [d]eny [reason], [e]dit {{json}}: ")
            self.stdout.flush()
            line = self.stdin.readline()
            if not line:
                return Deny("no answer at the terminal (end of input)")
            word, _, rest = line.strip().partition(" ")
            word = word.lower()
            if word in ("a", "approve", "y", "yes"):
                return Approve()
            if word in ("l", "all"):
                self.approve_rest = True
                return Approve()
            if word in ("d", "deny", "n", "no", ""):
                return Deny(rest.strip() or "denied at the terminal")
            if word in ("e", "edit"):
                try:
                    return Edit(parse_edit(rest, tool))
                except UserError as exc:
                    self.stdout.write(f"{untrusted_terminal(str(exc))}\n")
                    continue
            self.stdout.write("answer a, all, d [reason] or e {json}\n")
