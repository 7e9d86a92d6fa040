"""The one place where untrusted text becomes something a view shows.

Text from a model, a tool, an MCP server, a transcript file or a server's error is untrusted:
a prompt injection can put ``<script>`` or ``<img onerror=...>`` into it. Every view (the trace
widget, the debugger, tables, exports, the terminal printer) turns such text into output through
these functions only, never by hand.

>>> untrusted_html('<img src=x onerror="alert(1)">')
'&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
>>> untrusted_terminal("red \\x1b[31mtext")
'red \\\\x1b[31mtext'
"""

from __future__ import annotations

import re
from html import escape

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def untrusted_html(text: str) -> str:
    """``text`` as inert HTML: every character shown as itself, nothing interpreted."""
    return escape(str(text), quote=True)


def untrusted_markdown(text: str) -> str:
    """``text`` as HTML for display as an answer; never live markup (no scripts, no remote fetches)."""
    return f'<div style="white-space:pre-wrap">{untrusted_html(text)}</div>'


def untrusted_terminal(text: str) -> str:
    """``text`` safe to print to a terminal: control characters (escape sequences) shown, not sent."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))
