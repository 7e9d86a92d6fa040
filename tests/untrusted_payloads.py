"""Hostile text for the views, and a checker for the HTML they make of it (tests only).

Each payload carries a marker (``PWN1``...) that must show as text and never as markup: a
live script, an event handler, a ``javascript:`` link or a fetch from a URL a model chose.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

EVIL = "evil.example"

PAYLOADS = [
    '<img src=x style="display:none" onerror="document.title=\'PWN1\'">',
    "<script>document.title='PWN2'</script>",
    "<iframe srcdoc=\"<script>parent.document.title='PWN3'</script>\">PWN3</iframe>",
    '<a href="#" onclick="document.title=\'PWN4\'">PWN4</a>',
    "<svg onload=\"document.title='PWN5'\"><circle r=1 /></svg>",
    "[PWN6](javascript:document.title='PWN6')",
    f"![PWN7](http://{EVIL}/PWN7.png)",
    "<math><mtext><table><mglyph><style><img src=x onerror=\"document.title='PWN8'\">",
    "&lt;script&gt;document.title='PWN9'&lt;/script&gt; &#60;img src=x onerror=alert(9)&#62;",
    f"[[PWN10](javascript:alert(10))](http://{EVIL}/PWN10)",
    f'<base href="http://{EVIL}/PWN11/">',
    f'<div style="background:url(http://{EVIL}/PWN12.png);position:fixed;inset:0">PWN12</div>',
    "<noscript><p title=\"</noscript><img src=x onerror=document.title='PWN13'>\">",
    f'<form action="http://{EVIL}/PWN14"><input name=q value=PWN14></form>',
    f'<meta http-equiv="refresh" content="0;url=http://{EVIL}/PWN15">',
    f"<link rel=stylesheet href=http://{EVIL}/PWN16.css><style>@import 'http://{EVIL}/PWN16b.css';</style>",
    "[PWN17](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    f'<object data="http://{EVIL}/PWN18"></object><embed src="http://{EVIL}/PWN18b">',
    '<a href="vbscript:msgbox(19)">PWN19</a> <a href="jav&#x09;ascript:alert(19)">x</a>',
    f'<PWN20 x=1>[x](http://{EVIL}/PWN20 "a" onmouseover="alert(20)")',
    '<svg><a xlink:href="javascript:alert(21)"><text>PWN21</text></a></svg>',
    f'<img srcset="http://{EVIL}/PWN22.png 1x" src="data:image/svg+xml,<svg onload=alert(22)>">',
    "\x1b]0;PWN23\x07\x1b[2J\x1b[31mred\r\u202ePWN23",
    # issue 36: text that an HTML rewrite after escaping turned into attributes (quotes, var())
    "style=\"var(--a,b) open ontoggle=document.title='PWN24' x",
    f'style="var(--a,b);x:1" style=background-image:url(http://{EVIL}/PWN25.png) y "',
    '" onmouseover="document.title=\'PWN26\'" x="&quot; style=&quot;var(--b,c)&quot;',
    f"'style='color:var(--c,d);background:url(http://{EVIL}/PWN27.png)' open ontoggle=document.title='PWN27' '",
]
ALL = "\n\n".join(PAYLOADS)
MARKERS = [f"PWN{i}" for i in range(1, 28)]

_BAD_TAGS = {
    "script", "iframe", "frame", "frameset", "object", "embed", "applet", "form", "input", "textarea",
    "select", "base", "meta", "link", "svg", "math", "noscript", "template", "video", "audio", "source",
}  # fmt: skip
_URL_ATTRS = {"href", "src", "action", "formaction", "xlink:href", "data", "poster", "background", "srcset"}
_SAFE_IMG = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*$")


class _Checker(HTMLParser):
    def __init__(self, ours: tuple[str, ...], page: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.ours, self.page = ours, page
        self.problems: list[str] = []
        self.text: list[str] = []
        self._raw: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        where = f"<{tag} {attrs}>"
        inert = {"title", "alt"} | ({"href"} if tag == "a" else set())  # text, or a link the user may click
        marked = any("PWN" in (v or "") or EVIL in (v or "") for n, v in attrs if n not in inert) or "pwn" in tag
        if marked:
            self.problems.append(f"payload text inside markup: {where}")
        if self.page and not marked:
            return  # nbconvert's own page template: only the payloads' markup is checked
        if tag in _BAD_TAGS:
            self.problems.append(f"forbidden tag: {where}")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") and value not in self.ours:
                self.problems.append(f"event handler: {where}")
            if name == "style" and re.search(r"url\(|expression|position\s*:\s*fixed|@import", value, re.I):
                self.problems.append(f"style that fetches or overlays: {where}")
            if name in _URL_ATTRS:
                flat = re.sub(r"[\s\x00-\x1f]", "", value).lower()
                if tag == "img" and name == "src":
                    if not _SAFE_IMG.match(value):
                        self.problems.append(f"image from a URL: {where}")
                elif name == "href" and tag == "a":
                    ok = flat.startswith(("http://", "https://", "mailto:", "#", "data:application/json;base64,"))
                    if not ok:
                        self.problems.append(f"link scheme: {where}")
                else:
                    self.problems.append(f"URL attribute {name}: {where}")
        if tag == "style":
            self._raw = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "style" and self._raw is not None:
            if re.search(r"url\(|@import|PWN", self._raw, re.I):
                self.problems.append(f"style sheet with a fetch or payload: {self._raw[:200]}")
            self._raw = None

    def handle_data(self, data: str) -> None:
        if self._raw is not None:
            self._raw += data
        else:
            self.text.append(data)


def check_html(html: str, *, ours: tuple[str, ...] = (), page: bool = False) -> tuple[list[str], str]:
    """(problems, visible text) of an HTML string; ``ours``: event-handler values agentnb wrote itself."""
    c = _Checker(ours, page)
    c.feed(html)
    c.close()
    return c.problems, "".join(c.text)
