"""The debugger's widget: a control bar (Step, Continue, Skip tool, Edit arguments, Stop) above
the live trace. Every button calls the same :class:`~agentnb.notebook.debugger.Debugger`
method a test would; problems (invalid edited arguments) are shown in the bar, not raised.
"""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from agentnb.errors import UserError
from agentnb.notebook.trace import LIVE_MARKER, TraceWidget

if TYPE_CHECKING:
    from agentnb.notebook.debugger import Debugger


class DebuggerView(widgets.VBox):
    """Buttons and an argument editor bound to one :class:`Debugger`."""

    def __init__(self, debugger: Debugger) -> None:
        self.debugger = debugger
        self.trace = TraceWidget()
        self.trace.on_stop(debugger.stop)
        self.trace.stop_button.layout.display = "none"  # the bar has its own Stop

        def button(label: str, icon: str, style: str, tip: str, action: Any) -> widgets.Button:
            b = widgets.Button(description=label, icon=icon, button_style=style, tooltip=tip, disabled=True)
            b.layout.width = "auto"
            b.on_click(lambda _: self._do(action))
            return b

        self.step_button = button("Step", "step-forward", "primary", "Run the next model or tool call", debugger.step)
        self.continue_button = button("Continue", "play", "success", "Run to the end", debugger.continue_)
        self.skip_button = button("Skip tool", "forward", "warning", "Do not run this tool call", debugger.skip)
        self.edit_button = button("Edit arguments", "edit", "", "Change the arguments, then run", self._open_editor)
        self.stop_button = button("Stop", "stop", "danger", "End the run now", debugger.stop)
        self.message = widgets.HTML()
        self.editor = widgets.Textarea(rows=5)
        self.editor.layout.width = "100%"
        self.apply_button = widgets.Button(description="Run with these arguments", icon="check", button_style="primary")
        self.apply_button.layout.width = "auto"
        self.apply_button.on_click(lambda _: self._do(self._apply_edit))
        self.cancel_edit_button = widgets.Button(description="Cancel", icon="times")
        self.cancel_edit_button.on_click(lambda _: self._close_editor())
        self.editor_box = widgets.VBox([self.editor, widgets.HBox([self.apply_button, self.cancel_edit_button])])
        self.editor_box.layout.display = "none"
        bar = widgets.HBox(
            [self.step_button, self.continue_button, self.skip_button, self.edit_button, self.stop_button, self.message]
        )
        bar.layout.align_items = "center"
        bar.layout.flex_flow = "row wrap"
        bar.add_class("anb-debugger-bar")
        super().__init__([bar, self.editor_box, self.trace])
        self.add_class("anb-debugger")

    def __repr__(self) -> str:
        return repr(self.debugger)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = f"{LIVE_MARKER}\n{self.debugger!r}\n{self.trace.text()}"
        return data

    def _do(self, action: Any) -> None:
        try:
            action()
        except UserError as exc:
            self.message.value = f'<span style="color:#cf222e">{escape(str(exc))}</span>'

    def _open_editor(self) -> None:
        pause = self.debugger.pause
        if pause is None or pause.call is None:
            raise UserError("Edit applies to tool calls")
        self.editor.value = json.dumps(pause.call.arguments, indent=2, ensure_ascii=False)
        self.editor_box.layout.display = None

    def _close_editor(self) -> None:
        self.editor_box.layout.display = "none"

    def _apply_edit(self) -> None:
        self.debugger.edit(self.editor.value)  # raises UserError with the schema problems
        self._close_editor()

    def refresh(self) -> None:
        """Match the buttons and the trace header to the debugger's state."""
        d = self.debugger
        pause = d.pause if d.state == "paused" else None
        at_tool = pause is not None and pause.target == "tool"
        self.step_button.disabled = pause is None
        self.continue_button.disabled = pause is None
        self.skip_button.disabled = not at_tool
        self.edit_button.disabled = not at_tool
        self.stop_button.disabled = d.state not in ("paused", "running")
        if pause is None:
            self._close_editor()
        if d.state == "finished":
            self.message.value = ""
        elif pause is not None:
            self.message.value = f'<b style="color:#9a6700"><i class="fa fa-pause"></i> {escape(pause.describe())}</b>'
        else:
            self.message.value = "running…"
        self.trace.set_pause(pause.describe() if pause is not None else None)
