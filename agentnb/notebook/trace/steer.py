"""The trace widget's "Tell the agent…" box: a message for the running agent, through its inbox.

It is shown while a run that reads an :class:`~agentnb.Inbox` goes on (a trace widget given as
``on_event`` gets one of its own where the run has none: :func:`agentnb.run.steer.inbox_for_sink`),
and hidden when the run ends. Send (or :meth:`SteerBox.send` from Python, how tests and
executed notebooks type) queues the text in the inbox; the run adds it before its next model
request and the trace shows it there (a ``user_interjected`` event). The cell is busy meanwhile:
the click reaches the run the way Stop's does (:mod:`agentnb.notebook.cells.inplace`).

>>> from agentnb import Inbox
>>> box = SteerBox()
>>> box.attach(Inbox())
>>> box.run_started(served=True)
>>> box.send("<b>also</b> check 2024")
>>> box.inbox.pending, "&lt;b&gt;also&lt;/b&gt;" in box.note.value, box.text.value
(1, True, '')
>>> box.run_ended("answer")
>>> box.layout.display, box.button.disabled
('none', True)
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from agentnb.errors import UserError
from agentnb.notebook.cells.inplace import acknowledge
from agentnb.notebook.trace.blocks import STYLE
from agentnb.printer import shorten
from agentnb.untrusted import html_widget, untrusted_html

#: The box's tooltip where nothing can deliver a click while the cell waits for the run.
NOT_SERVED = (
    "This kernel cannot take messages while agent.run() holds the cell: use %agent, or "
    "'await agent.arun(..., on_event=trace)', or send from code with inbox.send(text)"
)


class SteerBox(widgets.VBox):
    """ "Tell the agent…" + Send, for the run's inbox (see the module)."""

    def __init__(self) -> None:
        self.inbox: Any = None
        self.sent: list[str] = []  # every text sent from here, in order
        self.text = widgets.Text(placeholder="Tell the agent…")
        self.text.layout.flex = "1 1 auto"
        # Typed into while a cell awaits the run: let the front end send the next edit too.
        self.text.observe(acknowledge, names="value")
        self.button = widgets.Button(description="Send", icon="paper-plane", tooltip="Send to the running agent")
        self.button.layout.width = "80px"
        self.button.on_click(lambda _: self._click())
        self.note = html_widget()
        row = widgets.HBox([self.text, self.button])
        row.layout.align_items = "center"
        super().__init__([row, self.note])
        self.add_class("anb-steer")
        self.layout.display = "none"

    def attach(self, inbox: Any) -> None:
        """The inbox of the run this trace shows (shown once the run starts)."""
        self.inbox = inbox

    def run_started(self, served: bool) -> None:
        """Show the box for a run with an inbox; ``served``: a click can reach the run now."""
        if self.inbox is None or not self.inbox.open:
            return
        self.layout.display = None
        self.text.disabled = self.button.disabled = not served
        self.button.tooltip = "Send to the running agent" if served else NOT_SERVED
        if not served:
            self._say("anb-m", NOT_SERVED)

    def send(self, text: str | None = None) -> None:
        """Send ``text`` (by default what the box holds) to the running agent; an ended run, or
        an empty text, is a :class:`~agentnb.errors.UserError` and the text stays in the box."""
        text = self.text.value if text is None else text
        if self.inbox is None:
            raise UserError("this trace's run reads no inbox: run it with inbox=agentnb.Inbox()")
        self.inbox.send(text)
        self.sent.append(text)
        self.text.value = ""
        self._say("anb-m", f"sent: {shorten(text, 200)} (the model reads it before its next request)")

    def delivered(self, depth: int) -> None:
        """What was sent went in before step ``depth``'s request (the trace shows it there)."""
        if self.sent:
            self._say("anb-ok", f"the model reads it from step {depth} on")

    def run_ended(self, stop_reason: str) -> None:
        """The run ended: nothing more can be sent; the box goes."""
        self.text.disabled = self.button.disabled = True
        self.layout.display = "none"

    def _click(self) -> None:
        try:
            self.send()
        except UserError as exc:  # shown under the box; the text stays to copy
            self._say("anb-bad", str(exc))

    def _say(self, cls: str, text: str) -> None:
        self.note.value = f'{STYLE}<div class="anb"><span class="{cls}">{untrusted_html(text)}</span></div>'
