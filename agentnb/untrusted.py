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
* :func:`static_view`: the **last step** of every static view (the finished trace, the debugger,
  the exports, a diff): agentnb's own HTML, already built from escaped text, optionally styled
  inline, then parsed and cleaned by ``nh3`` with an allow-list of agentnb's tags, attributes and
  CSS properties. Nothing rewrites HTML after it, so whatever string work happens before (an
  inliner that unescapes quotes, a template bug) cannot produce a live attribute or a remote fetch.
* :func:`no_math` and :func:`html_widget`: untrusted text is not TeX. Every HTML output and every
  widget's HTML value sits under one root that MathJax skips (:data:`NO_MATH`), so ``$\\style{...}$``
  or ``\\href{...}`` from a model is shown as written, never typeset (a typeset ``\\style`` can fetch
  a URL or draw a fake banner). :func:`static_view` and :func:`html_widget` put the root there
  themselves: a view made with them cannot forget it.

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
_ROOT = f'<div class="{NO_MATH}">'
#: Classes that turn MathJax back on inside an ignored element: never on agentnb's elements.
_MATH_ON = re.compile(r"\b(?:tex2jax_process|mathjax_process)\b", re.I)

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


def no_math(html: str) -> str:
    """``html`` (agentnb's own, its untrusted text already escaped) under a root that MathJax skips.

    JupyterLab, Voila, nbconvert and nbviewer typeset ``$...$``, ``\\(...\\)`` and ``\\begin{...}``
    in HTML outputs; a model's ``$\\style{cursor:url(http://...)}{x}$`` would fetch that URL on render.

    >>> no_math("costs $5 and $6")
    '<div class="tex2jax_ignore mathjax_ignore">costs $5 and $6</div>'
    """
    return f"{_ROOT}{html}</div>"


def html_widget(value: str = "", **kwargs: Any) -> Any:
    """An ``ipywidgets.HTML`` whose every value, now and later, is held under :func:`no_math`'s root.

    The one way agentnb makes an HTML widget (a test holds that): a validator wraps each value as
    it is set, so no view has to remember the root. An empty value stays empty.

    >>> w = html_widget("$x$")
    >>> w.value
    '<div class="tex2jax_ignore mathjax_ignore">$x$</div>'
    >>> w.value = ""
    >>> w.value
    ''
    """
    return _html_widget_class()(value=value, **kwargs)


@functools.cache
def _html_widget_class() -> Any:
    import ipywidgets as widgets
    import traitlets

    class InertHTML(widgets.HTML):  # type: ignore[misc]
        """An HTML widget whose value is always under the no-math root."""

        @traitlets.validate("value")
        def _no_math(self, proposal: Any) -> str:
            value = str(proposal["value"])
            return value if not value or value.startswith(_ROOT) else no_math(value)

    return InertHTML


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


#: What a static view may contain: agentnb's own elements and attributes, nothing that runs.
_VIEW_TAGS = _TAGS | {"b", "i", "details", "summary", "dl", "dt", "dd", "img", "small"}
_VIEW_ATTRIBUTES = {
    "*": {"class", "style", "title", "hidden", "data-depth"},
    "details": {"open"},
    "a": {"href", "download", "target"},
    "img": {"src", "alt", "width", "height"},
    "ol": {"start"},
}
#: CSS properties a static view's inline styles may set: layout and typography only. Properties
#: that can load a resource (``background-image``, ``list-style-image``, ``border-image``,
#: ``cursor``, ``content``, ``mask``, ``filter``) are not here; shorthands that could hold a
#: ``url()`` (``background``, ``list-style``) are kept only with a value :func:`_style_value` passes.
STYLE_PROPERTIES = frozenset(
    [
        "color",
        "background",
        "background-color",
        "opacity",
        "border",
        "border-top",
        "border-bottom",
        "border-left",
        "border-right",
        "border-color",
        "border-left-color",
        "border-radius",
        "border-collapse",
        "border-spacing",
        "margin",
        "margin-top",
        "margin-bottom",
        "margin-left",
        "margin-right",
        "padding",
        "padding-top",
        "padding-bottom",
        "padding-left",
        "padding-right",
        "font-family",
        "font-size",
        "font-weight",
        "font-style",
        "font-variant-numeric",
        "line-height",
        "text-align",
        "text-decoration",
        "white-space",
        "word-break",
        "overflow",
        "overflow-x",
        "overflow-y",
        "max-height",
        "max-width",
        "min-width",
        "width",
        "height",
        "display",
        "flex",
        "flex-wrap",
        "align-items",
        "justify-content",
        "gap",
        "grid-template-columns",
        "vertical-align",
        "list-style",
        "list-style-type",
    ]
)
# A style value may hold only these characters (no quotes, backslash escapes, "@", "<" or "&")
# and call only these functions: no url(), image-set(), expression(), attr().
_STYLE_CHARS = re.compile(r"[^A-Za-z0-9\s:;#%.,()!_+*/-]")
_STYLE_CALL = re.compile(r"([A-Za-z_-]*)\s*\(")
_STYLE_FUNCTIONS = frozenset({"var", "rgb", "rgba", "hsl", "hsla", "calc"})
_VAR = re.compile(r"var\(--[\w-]+,\s*([^()]*)\)")
_IMAGE_DATA = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*")
_JSON_DATA = re.compile(r"data:application/json;base64,[A-Za-z0-9+/=]*")


def static_view(body: str, css: str = "") -> str:
    r"""agentnb's HTML ``body`` as the final, sanitized fragment of a static view.

    ``css`` (agentnb's stylesheet) is first written into each element's ``style`` attribute by
    ``css-inline`` (JupyterLab drops ``<style>`` from an untrusted notebook's outputs), then the
    whole fragment is parsed and cleaned by ``nh3``: only agentnb's tags and attributes stay,
    no event handler, no script, no ``javascript:`` link, ``data:`` URLs only for raster images and
    the transcript download, and inline styles only with allowed properties and no ``url()``.
    Each declaration with a theme variable gets its light fallback first, inside the sanitizer
    (on the parsed value, serialized escaped), since an untrusted notebook drops ``var()``.
    Without ``nh3`` (no notebook extra), ``body`` as built: escaped text, unstyled.

    The result is one element with the :data:`NO_MATH` classes (see :func:`no_math`), and no
    element inside it turns MathJax back on.

    >>> static_view('<details open ontoggle="alert(1)"><summary>x</summary>y</details>')
    '<div class="tex2jax_ignore mathjax_ignore"><details open=""><summary>x</summary>y</details></div>'
    >>> static_view('<div class="a">x</div>', ".a{color:var(--c,#111);background:url(//e.x/p)}")[len(_ROOT):]
    '<div class="a">x</div></div>'
    >>> static_view('<div class="a">x</div>', ".a{color:var(--c,#111)}")[len(_ROOT):]
    '<div class="a" style="color:#111;color:var(--c, #111)">x</div></div>'
    >>> static_view('<span class="x mathjax_process">$x$</span>')[len(_ROOT):]
    '<span class="x">$x$</span></div>'
    """
    try:
        import nh3
    except ImportError:
        return no_math(body)
    if css:
        body = _inline_css(body, css)
    return no_math(
        nh3.clean(
            body,
            tags=_VIEW_TAGS,
            clean_content_tags={"script", "style"},
            attributes=_VIEW_ATTRIBUTES,
            url_schemes={"http", "https", "mailto", "data"},
            url_relative="deny",
            link_rel="noopener noreferrer nofollow",
            filter_style_properties=STYLE_PROPERTIES,
            attribute_filter=_view_attribute,
        )
    )


def _inline_css(body: str, css: str) -> str:
    """``body`` with ``css`` written into style attributes (``css-inline``); unstyled without it."""
    try:
        import css_inline

        return str(_inliner(css_inline).inline_fragment(body, css))
    except Exception:  # not installed, or a fragment it cannot read: unstyled, nothing lost
        return body


@functools.cache
def _inliner(css_inline: Any) -> Any:
    return css_inline.CSSInliner(keep_style_tags=False, load_remote_stylesheets=False)


def _view_attribute(tag: str, attr: str, value: str) -> str | None:
    """nh3's check of one parsed attribute value: None drops the attribute."""
    if attr == "style":
        return _style_value(value)
    if attr == "class":
        return " ".join(_MATH_ON.sub("", value).split()) or None
    if attr in ("href", "src") and value[:5].lower() == "data:":
        fits = _IMAGE_DATA if tag == "img" else _JSON_DATA if tag == "a" else None
        return value if fits is not None and fits.fullmatch(value) else None
    return value


def _style_value(style: str) -> str | None:
    r"""An inline style, with the light fallback before each theme variable; None if it could
    load something or hide something (a quote, an escape, a function other than var/rgb/calc).

    >>> _style_value("color: var(--jp-ui-font-color1,#1f2328); font-size: 12px")
    'color: #1f2328;color: var(--jp-ui-font-color1,#1f2328); font-size: 12px'
    >>> _style_value("background:url(http://e.x/p.png)"), _style_value("color:red;x:\\75rl(a)")
    (None, None)
    """
    if _STYLE_CHARS.search(style) or any(f.lower() not in _STYLE_FUNCTIONS for f in _STYLE_CALL.findall(style)):
        return None
    out = []
    for decl in style.split(";"):
        if "var(--" in decl:
            out.append(_VAR.sub(lambda m: m.group(1), decl))
        out.append(decl)
    return ";".join(out)


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
