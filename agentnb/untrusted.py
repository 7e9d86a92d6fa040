"""The one place where untrusted text becomes something a view shows.

Text from a model, a tool, an MCP server, a transcript file or a server's error is untrusted:
a prompt injection can put ``<script>`` or ``<img onerror=...>`` into it. Every view (the trace
widget, the debugger, tables, exports, the terminal printer) turns such text into output through
these functions only, never by hand:

* :func:`untrusted_html`: escaped text, every character shown as itself.
* :func:`untrusted_markdown`: an answer as formatted text. Markdown is rendered by markdown-it-py
  with raw HTML *off* (written HTML shows as text), then cleaned by the ``nh3`` allow-list
  sanitizer: no scripts, no event handlers, no styles, no ``javascript:``/``data:`` links, no
  iframes or forms; links open in a new tab with ``rel="noopener noreferrer nofollow"``; images
  are never fetched (shown as "image: URL (not loaded)"). Emphasis needs word boundaries, so
  ``37*91 = 3367``, ``a_b_c`` and ``__init__`` keep their characters; backslashes and entities
  are shown as written (``\\d+\\.\\d+``, ``&lt;``).
* :func:`untrusted_terminal`: text for a terminal, control and escape sequences shown, not sent.

>>> untrusted_html('<img src=x onerror="alert(1)">')
'&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
>>> untrusted_markdown("**5** is 37*91 <b>")
'<div class="anb-md"><p><strong>5</strong> is 37*91 &lt;b&gt;</p></div>'
>>> untrusted_terminal("red \\x1b[31mtext")
'red \\\\x1b[31mtext'
"""

from __future__ import annotations

import functools
import re
from html import escape
from typing import Any

#: Classes that keep MathJax (JupyterLab's HTML outputs, nbconvert, nbviewer) from typesetting
#: ``$...$`` in an element and its children: untrusted text is not LaTeX ("costs $5 and $6" showed
#: as "costs 5and6" in italics in a reopened notebook). ``tex2jax_ignore`` for MathJax 2,
#: ``mathjax_ignore`` for MathJax 3. On the root of every HTML output that holds such text.
NO_MATH = "tex2jax_ignore mathjax_ignore"

# C0 controls except \t and \n, DEL, C1 controls (\x9b is a one-byte CSI), bidi overrides/isolates.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# Bidi overrides and isolates reorder what follows them on screen ("Trojan source"): shown as \\u202e.
_BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")

#: What sanitized Markdown may contain: text formatting, lists, tables, code, links.
_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a", "span", "div",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"style"}, "td": {"style"}}


def untrusted_html(text: str) -> str:
    """``text`` as inert HTML: every character shown as itself, nothing interpreted."""
    return escape(_BIDI.sub(_written_out, str(text)), quote=True)


def untrusted_markdown(text: str, *, raw: bool = False) -> str:
    """``text`` (an answer) as sanitized HTML: formatted, never live (no scripts, no remote fetches).

    Args:
        text: the untrusted text, e.g. a model's final answer.
        raw: add a folded "raw text" section with the text exactly as written.

    >>> html = untrusted_markdown("[x](javascript:alert(1)) ![pixel](http://evil.example/p.png)")
    >>> 'href="javascript' in html, "<img" in html, "(not loaded)" in html
    (False, False, True)
    """
    text = _BIDI.sub(_written_out, _SURROGATE.sub(_written_out, str(text)))
    try:
        import nh3

        md = _markdown()
    except ImportError:  # without the notebook extra: the text, escaped, line breaks kept
        body = f'<div class="anb-md" style="white-space:pre-wrap">{untrusted_html(text)}</div>'
    else:
        clean = nh3.clean(
            md.render(text),
            tags=_TAGS,
            clean_content_tags={"script", "style"},
            attributes=_ATTRIBUTES,
            url_schemes={"http", "https", "mailto"},
            url_relative="deny",  # no links into the Jupyter server's own API
            link_rel="noopener noreferrer nofollow",
            set_tag_attribute_values={"a": {"target": "_blank"}},
            filter_style_properties={"text-align"},
            allowed_classes={"span": {"anb-img"}},
        )
        body = f'<div class="anb-md">{clean.strip()}</div>'
    if raw:
        body += f'<details class="anb-raw"><summary>raw text</summary><pre>{untrusted_html(text)}</pre></details>'
    return body


_IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def untrusted_image(data: bytes, mime: str, alt: str = "attached image") -> str:
    """An image a tool returned, as an ``<img>`` with a ``data:`` URL; only raster types are shown.

    The bytes are base64 (inert); a MIME type outside PNG/JPEG/GIF/WebP (SVG can carry scripts,
    a forged type can break out of the attribute) is named, not shown.

    >>> untrusted_image(b"x", 'image/png" onerror="alert(1)')
    '<span class="anb-m">[image of type image/png&quot; onerror=&quot;alert(1) not shown]</span>'
    """
    import base64

    if str(mime).lower() not in _IMAGE_MIMES:
        return f'<span class="anb-m">[image of type {untrusted_html(mime)} not shown]</span>'
    b64 = base64.b64encode(bytes(data)).decode("ascii")
    return f'<img src="data:{mime.lower()};base64,{b64}" alt="{untrusted_html(alt)}">'


def untrusted_terminal(text: str) -> str:
    """``text`` safe to print to a terminal: control characters (escape sequences) shown, not sent.

    Line breaks and tabs stay; carriage returns, ANSI escapes and bidi overrides are written out.
    """
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(text))


def _written_out(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


@functools.lru_cache(maxsize=1)
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # backslashes and entities are shown as written: a regex, a Windows path, "&lt;" keep every character
    md.disable(["escape", "entity"])
    md.inline.ruler.before("emphasis", "anb_literal_marks", _literal_marks)
    md.add_render_rule("image", _image)
    return md


def _literal_marks(state: Any, silent: bool) -> bool:
    """``_`` never emphasises (identifiers: ``a_b``, ``__init__``); ``*`` not inside a word (``37*91``)
    nor after a backslash (``\\*star\\*``: the backslash is shown, so the star is literal too)."""
    src, start = state.src, state.pos
    mark = src[start]
    if mark not in "*_":
        return False
    end = start
    while end < state.posMax and src[end] == mark:
        end += 1
    before = src[start - 1] if start > 0 else " "
    after = src[end] if end < state.posMax else " "
    if mark == "*" and before != "\\" and not (before.isalnum() and after.isalnum()):
        return False  # a word-boundary star: ordinary emphasis
    if not silent:
        state.pending += src[start:end]
    state.pos = end
    return True


def _image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """An image is never loaded: its alt text and address are shown, the address as a link."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = f"image: {untrusted_html(alt)} " if alt else "image: "
    if src.lower().startswith(("http://", "https://")):
        where = f'<a href="{untrusted_html(src)}">{untrusted_html(src)}</a>'
    else:
        where = untrusted_html(src[:60] + ("…" if len(src) > 60 else ""))
    return f'<span class="anb-img">[{label}{where} (not loaded)]</span>'
