"""A code step's code in a view: highlighted HTML and a unified line diff, every token escaped.

The code is the model's (or a person's edit): untrusted text. It is split into tokens by
pygments' Python lexer (IPython's dependency; plain escaped text without it) and each token's
text goes through :func:`~agentnb.untrusted.untrusted_html`; the only markup is agentnb's own
``<span class="anb-k">`` around it. Nothing of the code becomes a tag, an attribute or TeX.

>>> code_html('print("<b>hi</b>")  # 1 < 2')
'<pre class="anb-code"><span class="anb-f">print</span>(<span class="anb-s">&quot;&lt;b&gt;hi&lt;/b&gt;&quot;</span>)  <span class="anb-c"># 1 &lt; 2</span></pre>'
>>> print(code_diff("x = 1\\n", "x = 2\\n"))
-x = 1
+x = 2
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from agentnb.untrusted import untrusted_html

#: Styles of the highlighted code (for the trace's and the approval panel's stylesheet).
CODE_CSS = """
.anb pre.anb-code{border-left:3px solid #0969da}
.anb-code .anb-k{color:#cf222e}.anb-code .anb-s{color:#0a3069}.anb-code .anb-c{color:#6e7781;font-style:italic}
.anb-code .anb-n{color:#0550ae}.anb-code .anb-f{color:#8250df}
.anb-code .anb-del{background:rgba(255,0,0,.12)}.anb-code .anb-add{background:rgba(0,160,0,.12)}
"""

#: Code longer than this is shown as plain escaped text (highlighting it would cost time).
MAX_HIGHLIGHT = 50_000


def code_html(code: str) -> str:
    """``code`` as a highlighted ``<pre class="anb-code">``, escaped token by token."""
    return f'<pre class="anb-code">{highlighted(code)}</pre>'


def highlighted(code: str) -> str:
    """The inside of :func:`code_html`: escaped tokens, some in a class's ``<span>``."""
    lexer = _lexer() if len(code) <= MAX_HIGHLIGHT else None
    if lexer is None:
        return untrusted_html(code)
    runs: list[tuple[str | None, str]] = []  # (class, text), neighbours of one class joined
    for kind, text in lexer.get_tokens(code):
        cls = _class(str(kind)) if text.strip() else None
        if runs and runs[-1][0] == cls:
            runs[-1] = (cls, runs[-1][1] + text)
        else:
            runs.append((cls, text))
    out = "".join(f'<span class="{c}">{untrusted_html(t)}</span>' if c else untrusted_html(t) for c, t in runs)
    return out[:-1] if out.endswith("\n") and not code.endswith("\n") else out  # the lexer adds one


def code_diff(old: str, new: str) -> str:
    """A unified line diff of two versions of code (without the file header)."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2)
    return "\n".join(line for line in lines if not line.startswith(("---", "+++", "@@")))


def code_diff_html(old: str, new: str) -> str:
    """:func:`code_diff` as HTML: removed lines red, added lines green, escaped."""
    rows = []
    for line in code_diff(old, new).splitlines():
        cls = {"-": "anb-del", "+": "anb-add"}.get(line[:1])
        rows.append(f'<span class="{cls}">{untrusted_html(line)}</span>' if cls else untrusted_html(line))
    return '<pre class="anb-code">' + "\n".join(rows) + "</pre>"


def code_of(arguments: Any) -> str | None:
    """The code of a code step's arguments (a ``code`` string), else None."""
    if isinstance(arguments, dict):
        code = arguments.get("code")
        if isinstance(code, str):
            return code
    return None


def code_outcome_html(structured: Any) -> str:
    """A code step's exception, stop and names changed (from its ``tool_finished`` data)."""
    if not isinstance(structured, dict) or structured.get("kind") != "code":
        return ""
    out = []
    if structured.get("error"):
        out.append(
            f'<div><span class="anb-bad">✗ the code raised</span> <code>{untrusted_html(str(structured["error"]))}</code></div>'
        )
    if structured.get("stopped"):
        out.append(
            f'<div><span class="anb-warn">⊘ stopped</span> <span class="anb-m">{untrusted_html(str(structured["stopped"]))}</span></div>'
        )
    names = structured.get("names")
    if isinstance(names, list) and names:
        shown = ", ".join(
            f"<code>{untrusted_html(str(n.get('name')))}</code> ({untrusted_html(str(n.get('change')))}"
            + (f", {untrusted_html(str(n.get('type')))}" if n.get("type") else "")
            + ")"
            for n in names[:30]
            if isinstance(n, dict)
        )
        more = f" and {len(names) - 30} more" if len(names) > 30 else ""
        out.append(f'<div class="anb-names"><span class="anb-m">names changed:</span> {shown}{more}</div>')
    return "".join(out)


def _class(kind: str) -> str | None:
    if kind.startswith("Token.Keyword") or kind == "Token.Operator.Word":
        return "anb-k"
    if kind.startswith("Token.Literal.String"):
        return "anb-s"
    if kind.startswith("Token.Comment"):
        return "anb-c"
    if kind.startswith("Token.Literal.Number"):
        return "anb-n"
    if kind.startswith(("Token.Name.Function", "Token.Name.Builtin", "Token.Name.Class")):
        return "anb-f"
    return None


@functools.cache
def _lexer() -> Any:
    try:
        from pygments.lexers.python import PythonLexer
    except ImportError:
        return None
    return PythonLexer(stripnl=False, ensurenl=True)
