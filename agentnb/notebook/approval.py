"""The trace widget's approval panel: a pending tool call with Approve, Deny and Edit arguments.

A code step (arguments with a ``code`` string, such as ``run_python``) shows its code
highlighted and escaped (:mod:`agentnb.kernel.highlight`), and its edit box holds the code
itself: "Run this code" runs the person's version (:meth:`ApprovalPanel.edit_code`). "Approve
all" approves this call and every later one of the same run (:meth:`ApprovalPanel.approve_all`).

The run waits on :meth:`ApprovalPanel.decide` (the loop asked the trace widget, its approver);
the buttons, or the same methods called from Python (how tests and executed notebooks click),
settle it through ``loop.call_soon_threadsafe``, so a click delivered on any thread resumes
the run. Stop while a call waits ends the run (``cancelled``); the call never runs.

>>> panel = ApprovalPanel()
>>> panel.pending is None, panel.layout.display
(True, 'none')
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from agentnb.control.approval import Approve, Decision, Deny, Edit, parse_edit
from agentnb.errors import StopRun, UserError
from agentnb.kernel.highlight import code_html, code_of
from agentnb.messages import ToolCall
from agentnb.notebook.cells.inplace import acknowledge
from agentnb.notebook.trace.blocks import STYLE
from agentnb.untrusted import html_widget, untrusted_html

#: What the model reads when the person denies without writing a reason.
DEFAULT_REASON = "the user denied this call"


class ApprovalPanel(widgets.VBox):
    """Approve / Deny (with a reason the model reads) / Edit arguments, for one pending call."""

    def __init__(self, ended: Callable[[], bool] | None = None) -> None:
        #: Whether the run this panel approves for has ended (no call can wait any more).
        self.ended = ended or (lambda: False)
        self.pending: ToolCall | None = None
        self.decisions: list[Decision] = []  # every decision made here, in order
        #: Approve every later call of this run without asking ("Approve all"); the trace widget
        #: clears it when a new run starts.
        self.approve_rest = False
        self._tool: Any = None
        self._settle: tuple[asyncio.AbstractEventLoop, asyncio.Future[Decision]] | None = None
        self._lock = threading.Lock()
        self.label = html_widget()
        self.approve_button = widgets.Button(description="Approve", icon="check", button_style="success")
        self.deny_button = widgets.Button(description="Deny", icon="times", button_style="danger")
        self.all_button = widgets.Button(description="Approve all", icon="check-circle")
        self.all_button.tooltip = "Approve this call and every later call of this run"
        self.reason = widgets.Text(placeholder="reason (the model reads it)")
        self.arguments = widgets.Textarea(rows=3)
        # 100% plus the widget's own side margins (2px each) overflowed the panel (a horizontal
        # scrollbar); the margins stay, so the box lines up with the buttons above it
        self.arguments.layout.width = "calc(100% - 4px)"
        self.edit_button = widgets.Button(description="Run with these arguments", icon="pencil")
        self.edit_button.layout.width = "auto"
        self.error = html_widget()
        self.approve_button.on_click(lambda _: self._click(self.approve))
        self.all_button.on_click(lambda _: self._click(self.approve_all))
        self.deny_button.on_click(lambda _: self._click(lambda: self.deny(self.reason.value)))
        self.edit_button.on_click(lambda _: self._click(self._edit_clicked))
        # Typed into while a cell awaits the run: let the front end send the next edit too.
        self.reason.observe(acknowledge, names="value")
        self.arguments.observe(acknowledge, names="value")
        row = widgets.HBox([self.approve_button, self.all_button, self.deny_button, self.reason])
        row.layout.flex_flow = "row wrap"  # a narrow notebook wraps the reason, never scrolls
        super().__init__([self.label, row, self.arguments, self.edit_button, self.error])
        self.add_class("anb-approval-panel")
        self.layout.display = "none"
        self.layout.border_left = "3px solid #9a6700"
        self.layout.padding = "4px 8px"

    # --- the approver side (the run waits here) ----------------------------------------------

    async def decide(self, call: ToolCall, tool: Any = None) -> Decision:
        """Show ``call`` and wait for a click (or a call of approve / deny / edit)."""
        if self.approve_rest:  # "Approve all" was clicked earlier in this run
            self.decisions.append(Approve())
            return Approve()
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Decision] = loop.create_future()
        with self._lock:
            self._settle = (loop, fut)
            self.pending = call
            self._tool = tool
        self._show(call)
        try:
            decision = await fut
        finally:
            with self._lock:
                self._settle = None
                self.pending = None
                self._tool = None
            self.layout.display = "none"
        self.decisions.append(decision)
        return decision

    # --- the deciding side (buttons, or Python) -----------------------------------------------

    def approve(self) -> None:
        """Run the pending call as the model wrote it."""
        self._resolve(Approve())

    def approve_all(self) -> None:
        """Run the pending call, and every later call of this run that needs approval, unasked."""
        self._resolve(Approve())
        self.approve_rest = True

    def deny(self, reason: str = "") -> None:
        """Do not run the pending call; the model reads ``reason``."""
        self._resolve(Deny(reason.strip() or DEFAULT_REASON))

    def edit(self, arguments: dict[str, Any] | str) -> None:
        """Run the pending call with ``arguments`` (a dict or JSON text), checked against the
        tool's schema first: a :class:`UserError` says what is wrong and the call still waits."""
        with self._lock:
            tool = self._tool
            waiting = self._settle is not None
        if not waiting:
            raise UserError("no tool call is waiting for approval")
        self._resolve(Edit(parse_edit(arguments, tool)))

    def edit_code(self, code: str) -> None:
        """Run the pending code step with ``code`` instead of the model's (its other arguments kept)."""
        with self._lock:
            call = self.pending
            waiting = self._settle is not None
        if not waiting or call is None:
            raise UserError("no tool call is waiting for approval")
        if code_of(call.arguments) is None:
            raise UserError(f"{call.name} has no code argument: edit its arguments instead")
        if not isinstance(code, str):
            raise UserError(f"the code must be text, not {type(code).__name__}")
        self.edit({**(call.arguments or {}), "code": code})

    def _edit_clicked(self) -> None:
        call = self.pending
        if call is not None and code_of(call.arguments) is not None:
            self.edit_code(self.arguments.value)
        else:
            self.edit(self.arguments.value)

    def stop(self) -> bool:
        """End the run from here (Stop while a call waits); False when nothing waits."""
        with self._lock:
            settle, self._settle = self._settle, None
            self.pending = None
        if settle is None:
            return False
        loop, fut = settle
        loop.call_soon_threadsafe(_fail, fut, StopRun("stopped while a call waited for approval"))
        return True

    async def next_pending(self, timeout: float = 30.0) -> ToolCall:
        """Wait until a call waits for approval (from any event loop); that call. Raises
        :class:`~agentnb.errors.UserError` once the run has ended, TimeoutError after ``timeout``."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            call = self.pending
            if call is not None and self._settle is not None:
                return call
            if self.ended():  # answered by hand already, say, and the run went on to its end
                raise UserError("the run has ended: no tool call will wait for approval")
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"no tool call waited for approval within {timeout:g} s")
            await asyncio.sleep(0.01)

    def _resolve(self, decision: Decision) -> None:
        with self._lock:
            settle, self._settle = self._settle, None
            self.pending = None
        if settle is None:
            raise UserError("no tool call is waiting for approval")
        loop, fut = settle
        self.error.value = ""
        loop.call_soon_threadsafe(_set, fut, decision)

    def _click(self, action: Any) -> None:
        try:
            action()
        except UserError as exc:  # shown under the buttons; the call still waits
            self.error.value = f'{STYLE}<div class="anb"><span class="anb-bad">{untrusted_html(str(exc))}</span></div>'

    def _show(self, call: ToolCall) -> None:
        args = json.dumps(call.arguments, ensure_ascii=False, indent=1) if call.arguments is not None else "{}"
        code = code_of(call.arguments)
        others = {k: v for k, v in (call.arguments or {}).items() if k != "code"}
        shown = code_html(code) if code is not None else f"<pre>{untrusted_html(args)}</pre>"
        if code is not None and others:
            shown += f"<pre>{untrusted_html(json.dumps(others, ensure_ascii=False, indent=1))}</pre>"
        self.label.value = (
            f'{STYLE}<div class="anb"><span class="anb-warn">Approve this tool call?</span> '
            f'<code>{untrusted_html(call.name)}</code> <span class="anb-m">{untrusted_html(call.id)}</span>'
            f"{shown}</div>"
        )
        self.arguments.value = code if code is not None else args
        self.arguments.rows = min(max(3, (code or "").count("\n") + 2), 20)
        self.edit_button.description = "Run this code" if code is not None else "Run with these arguments"
        self.reason.value = ""
        self.error.value = ""
        self.layout.display = None


def _set(fut: asyncio.Future[Decision], decision: Decision) -> None:
    if not fut.done():
        fut.set_result(decision)


def _fail(fut: asyncio.Future[Decision], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
