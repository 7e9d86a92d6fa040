"""The debugger's widget: a control bar (Step, Continue, Skip tool, Edit arguments, Stop) above
the live trace. Every button calls the same :class:`~agentnb.notebook.debugger.stepper.Stepper` method a
test would; problems (invalid edited arguments) are shown beside the "paused before…" line,
not raised. When the run has ended the bar gives way to a one-line summary.

The view depends on its model (it subscribes to it); the model never imports the view.
"""

from __future__ import annotations

import json
from typing import Any

import ipywidgets as widgets

from agentnb.errors import UserError
from agentnb.notebook.debugger.stepper import Stepper
from agentnb.notebook.trace import state as trace_state
from agentnb.notebook.trace.display import LiveDisplay
from agentnb.notebook.trace.snapshot import KEY, snapshot_metadata
from agentnb.notebook.trace.snapshot import static_html as trace_static_html
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.printer import plural
from agentnb.untrusted import html_widget
from agentnb.untrusted import untrusted_html as escape


class DebuggerView(LiveDisplay, widgets.VBox):
    """Buttons and an argument editor bound to one :class:`Stepper`."""

    def __init__(self, debugger: Stepper) -> None:
        self.debugger = debugger
        self.trace = TraceWidget(show_on_start=False)  # shown inside this view
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
        self.message = html_widget()  # where the run is: "paused before ...", "running…"
        self.message.add_class("anb-debugger-where")
        self.problem = html_widget()  # why the last command did not apply (beside the message)
        self.problem.add_class("anb-debugger-problem")
        self.summary = html_widget()  # one line once the run has ended
        self.summary.add_class("anb-debugger-summary")
        self.summary.layout.display = "none"
        self.editor = widgets.Textarea(rows=5)
        # 100% plus the widget's own margin overflowed the box: let the flex box size it.
        self.editor.layout.width = "auto"
        self.editor.layout.flex = "1 1 auto"
        self.editor.add_class("anb-editor")
        self.apply_button = widgets.Button(description="Run with these arguments", icon="check", button_style="primary")
        self.apply_button.layout.width = "auto"
        self.apply_button.on_click(lambda _: self._do(self._apply_edit))
        self.cancel_edit_button = widgets.Button(description="Cancel", icon="times")
        self.cancel_edit_button.layout.width = "auto"
        self.cancel_edit_button.on_click(lambda _: self._close_editor())
        self.editor_box = widgets.VBox([self.editor, widgets.HBox([self.apply_button, self.cancel_edit_button])])
        self.editor_box.layout.display = "none"
        self.editor_box.layout.align_items = "stretch"
        self.editor_box.layout.overflow = "hidden"
        self.buttons = widgets.HBox(
            [self.step_button, self.continue_button, self.skip_button, self.edit_button, self.stop_button]
        )
        self.buttons.layout.flex = "0 0 auto"
        where = widgets.HBox([self.message, self.problem])
        where.layout.align_items = "center"
        where.layout.flex_flow = "row wrap"
        self.bar = widgets.HBox([self.buttons, where])
        self.bar.layout.align_items = "center"
        self.bar.layout.flex_flow = "row wrap"
        self.bar.add_class("anb-debugger-bar")
        super().__init__([self.bar, self.summary, self.editor_box, self.trace])
        self.add_class("anb-debugger")
        debugger.add_sink(self.trace)
        debugger.subscribe(self.refresh)

    def __repr__(self) -> str:
        return repr(self.debugger)

    def text(self) -> str:
        return f"{self.debugger!r}\n{self.trace.text()}"

    def _run_ended(self) -> bool:
        return self.debugger.state == "finished" and self.trace.state.finished is not None

    def static_html(self) -> str:
        """The finished debugger: its one-line summary above the static trace."""
        summary = f'<div class="anb-debugger-summary">{self.summary.value}</div>'
        return f'<div class="anb-debugger">{trace_static_html(self.trace, summary)}</div>'

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        data = super()._repr_mimebundle_(**kwargs)
        self._live = True  # a debugger view is always updated in place when its run ends
        data["text/plain"] = self._marked(self.text())
        snap = snapshot_metadata(self.trace, self.summary.value if self.debugger.state == "finished" else "")
        return data, ({KEY: snap} if snap is not None else {})

    def _do(self, action: Any) -> None:
        try:
            action()
        except UserError as exc:
            self.problem.value = f'<span style="color:#cf222e">✗ {escape(str(exc))}</span>'
        else:
            self.problem.value = ""

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
        """Match the buttons, the message and the trace to the debugger's state."""
        d = self.debugger
        if d.history is not None and not self.trace.state.events:
            self.trace.set_history(d.history)
        pause = d.pause if d.state == "paused" else None
        at_tool = pause is not None and pause.target == "tool"
        self.step_button.disabled = pause is None
        self.continue_button.disabled = pause is None
        self.skip_button.disabled = not at_tool
        self.edit_button.disabled = not at_tool
        self.stop_button.disabled = d.state not in ("paused", "running")
        if pause is None:
            self._close_editor()
            self.problem.value = ""
        if d.state == "finished":
            self.bar.layout.display = "none"
            self.summary.value = self._summary()
            self.summary.layout.display = None
            if d.result is not None:
                self.trace.finish(d.result)
            self._publish_static()
        elif pause is not None:
            self.message.value = f'<b style="color:#9a6700"><i class="fa fa-pause"></i> {escape(pause.describe())}</b>'
        else:
            self.message.value = "running…"
        if pause is None:
            self.trace.set_pause(None)
        else:
            call_id = pause.call.id if pause.call is not None else None
            self.trace.set_pause(pause.describe(), trace_state.Pause(pause.target, pause.depth, call_id))

    def _summary(self) -> str:
        d = self.debugger
        r = d.result
        skips = sum(1 for e in (r.events if r else ()) if e.kind == "step_decision" and e.action == "skip")
        parts = [plural(len(d.pauses), "pause"), plural(len(d.edits), "edit"), plural(skips, "skip")]
        if r is None:
            head = '<span class="anb-bad">the run failed</span>'
        else:
            head = f"run ended: <b>{escape(r.stop_reason)}</b> · {escape(plural(r.tool_calls, 'tool call'))}"
        return f'<div class="anb anb-m"><i class="fa fa-flag-checkered"></i> Debugger: {head} · {escape(" · ".join(parts))}</div>'
