"""Fork from here: pick a step of a finished run, edit it in the debugger's editor, run the fork.

The panel sits under a trace (its "Fork…" button opens it; ``%agent --fork N`` shows it open
at step N). The editor is prefilled with what the recording holds at that step (a tool's
result, a call's arguments, the reply, the system prompt); a bad edit is shown beside the
button, not raised. Each fork runs live in a new trace below, its recorded prefix folded, with
its diff against the parent under it. The view depends on :mod:`agentnb.timetravel`; nothing
there imports it.

What the panel made outlives its widgets: :meth:`ForkPanel.static_copy` is every fork made here
(and in the forks' own "Fork…" panels, at any depth) as sanitized static HTML, and ``on_change``
is called whenever that changes (a fork starts, ends, or is refused), so the output that shows
the panel can keep a static copy of it current (:mod:`agentnb.notebook.forks.display`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from agentnb.errors import UserError
from agentnb.timetravel.diff import diff
from agentnb.timetravel.drafts import KINDS, edit_from_text, prefill, recorded_steps_text, step_choices
from agentnb.untrusted import html_widget
from agentnb.untrusted import untrusted_html as escape

_RUNNING = '<div class="anb anb-m"><i>(this fork was still running when this copy was made)</i></div>'


class ForkPanel(widgets.VBox):
    """The fork editor for one finished run (``result`` must know its agent, or pass ``agent``)."""

    def __init__(
        self,
        result: Any,
        make_trace: Any,
        at: int | None = None,
        agent: Any = None,
        on_change: Callable[[], Any] | None = None,
    ) -> None:
        self.result = result
        self.make_trace = make_trace  # the trace widget's class (the view below never imports it)
        self.agent = agent
        #: Called when what :meth:`static_copy` shows changes (a fork started, ended or was refused).
        self.on_change = on_change
        self.forks: list[Any] = []  # the RunResults of the forks made here, in order
        self.tasks: list[asyncio.Task[Any]] = []
        choices = step_choices(result)
        if not choices:
            raise UserError("this run made no model step to fork from")
        first = choices[0][1] if at is None else at
        if first not in [d for _, d in choices]:
            raise UserError(f"fork step {at!r} is out of range: this run has steps 0 to {choices[-1][1]}")
        self.step = widgets.Dropdown(options=choices, value=first, description="Step")
        self.kind = widgets.Dropdown(options=[(v, k) for k, v in KINDS.items()], value=self._kind(first))
        self.kind.description = "Edit"
        self.editor = widgets.Textarea(rows=5)
        self.editor.layout.width = "auto"
        self.editor.layout.flex = "1 1 auto"
        self.editor.add_class("anb-editor")  # the debugger's editor
        self.fork_button = widgets.Button(description="Fork from here", icon="code-fork", button_style="primary")
        self.fork_button.layout.width = "auto"
        self.fork_button.on_click(lambda _: self.fork())
        self.problem = html_widget()
        self.problem.add_class("anb-fork-problem")
        self.below = widgets.VBox()  # the forks' traces
        self.step.observe(lambda _: self._refill(kind_too=True), names="value")
        self.kind.observe(lambda _: self._refill(), names="value")
        self._refill()
        bar = widgets.HBox([self.step, self.kind])
        bar.layout.flex_flow = "row wrap"
        buttons = widgets.HBox([self.fork_button, self.problem])
        buttons.layout.align_items = "center"
        super().__init__([bar, self.editor, buttons, self.below])
        self.add_class("anb-fork")

    def _kind(self, at: int) -> str:
        """The edit a step suggests: a tool result where it called, else its reply."""
        return (
            "tool_result" if any(d == at and "calls " in label for label, d in step_choices(self.result)) else "reply"
        )

    def _refill(self, kind_too: bool = False) -> None:
        if kind_too:
            self.kind.value = self._kind(self.step.value)
        try:
            self.editor.value = prefill(self.result, self.step.value, self.kind.value)
        except UserError as exc:
            self.editor.value = ""
            self.problem.value = f'<span style="color:#cf222e">✗ {escape(str(exc))}</span>'
        else:
            self.problem.value = ""

    def fork(self) -> Any:
        """What "Fork from here" does: the fork runs in a new trace below (a task when the kernel's
        loop runs, else now); a bad edit is shown beside the button. Returns the trace widget."""
        at = self.step.value
        try:
            edits = edit_from_text(self.result, at, self.kind.value, self.editor.value)
        except UserError as exc:
            self.problem.value = f'<span style="color:#cf222e">✗ {escape(str(exc))}</span>'
            return None
        if self.agent is not None:
            edits["agent"] = self.agent
        trace = self.make_trace(open_depths=1, show_on_start=False)  # shown in this panel only
        title = html_widget(
            f'<div class="anb anb-m">fork of step [{escape(str(at))}]: {escape(KINDS[self.kind.value])} edited; '
            f"{escape(recorded_steps_text(at, self.kind.value))}</div>"
        )
        after = html_widget()
        box = widgets.VBox([title, trace, after])
        trace.on_fork_change = self.changed  # a fork of this fork ("Fork…" on its trace) changes us too
        self.below.children = (*self.below.children, box)
        self.problem.value = ""
        self.changed()

        async def go() -> Any:
            try:
                done = await self.result.afork(at, on_event=trace, **edits)
            except UserError as exc:  # refused before anything ran: no trace for it
                self.problem.value = f'<span style="color:#cf222e">✗ {escape(str(exc))}</span>'
                self.below.children = tuple(c for c in self.below.children if c is not box)
                self.changed()
                return None
            trace.finish(done)
            trace.open_depths = max(1, trace.state.current_depth - done.lineage.live_from + 1)  # prefix folded
            trace.expand_all(None)
            shown = diff(self.result, done, labels=("parent", "fork"))._repr_html_()  # escaped inside
            after.value = f"<details><summary>diff with the parent run</summary>{shown}</details>"
            self.forks.append(done)
            self.changed()
            return done

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            from agentnb.run.sync import run_sync

            if run_sync(go) is None:
                return None
        else:  # a click in the kernel: the fork runs on its loop, the kernel stays free
            self.tasks.append(loop.create_task(go()))
        return trace

    def changed(self) -> None:
        """Tell the owner (``on_change``) that the forks made here changed."""
        if self.on_change is not None:
            self.on_change()

    def running(self) -> list[asyncio.Task[Any]]:
        """The forks still running, here and in the forks' own panels."""
        out = [t for t in self.tasks if not t.done()]
        for box in self.below.children:
            nested = getattr(box.children[1], "fork_panel", None)
            if nested is not None:
                out += nested.running()
        return out

    def static_copy(self) -> tuple[str, str]:
        """``(html, text)``: every fork made here, and the forks made from them, as static HTML
        (each fork's title, sanitized trace and diff with its parent) and as text."""
        html, text = [], []
        for box in self.below.children:
            title, trace, after = box.children
            if trace.state.finished is None:  # saved while it runs: what it did so far
                html.append(title.value + _RUNNING + (trace.static_html() if trace.state.started else ""))
                text.append(trace.text())
                continue
            html.append(title.value + trace.static_html() + after.value)
            text.append(trace.text())
            nested = getattr(trace, "fork_panel", None)
            if nested is not None:
                inner, inner_text = nested.static_copy()
                if inner:
                    html.append(f'<div class="anb-fork-nested" style="margin-left:18px">{inner}</div>')
                    text.append(inner_text)
        return "".join(html), "\n".join(text)


def attach(trace: Any, result: Any) -> None:
    """Give a finished trace its "Fork…" button (only for a run whose agent is known)."""
    if getattr(result, "agent", None) is None or getattr(trace, "fork_button", None) is not None:
        return
    button = widgets.Button(description="Fork…", icon="code-fork", tooltip="Fork this run from a step")
    button.layout.width = "auto"
    button.layout.height = "24px"
    button.add_class("anb-small")

    def open_panel(_: Any = None) -> None:
        if getattr(trace, "fork_panel", None) is None:
            trace.fork_panel = ForkPanel(result, type(trace), on_change=getattr(trace, "on_fork_change", None))
            trace.children = (*trace.children, trace.fork_panel)

    button.on_click(open_panel)
    trace.fork_button = button
    trace.open_fork_panel = open_panel
    trace.toolbar.children = (*trace.toolbar.children, button)
