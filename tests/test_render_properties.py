"""Every renderer, fed generated untrusted text, makes inert HTML that shows the text as itself.

Issue 36: a string such as ``style="var(--a,b) open ontoggle=...`` became a live attribute of
the static trace because HTML was rewritten after escaping. These properties hold for any
text, not only for known payloads: each output is parsed with html5lib (the parsing algorithm
browsers use, so mutation-XSS shapes parse here as they would there), and

* no element carries an event handler (only the Copy button's own, constant one, in live views);
* no script or other executable or fetching element exists;
* no ``javascript:`` / ``data:`` URL exists outside the images and the transcript link agentnb
  built, no image loads from a URL, and no inline style holds ``url()`` or another fetch;
* the visible text holds the input exactly as escaped text shows it;
* no text is typeset as TeX (issue 45): every text node has an ancestor (or is in an element)
  with both MathJax-ignore classes (``tex2jax_ignore`` for MathJax 2, ``mathjax_ignore`` for 3),
  and no element turns MathJax back on (``mathjax_process``). A typeset ``$\\style{...}$`` fetched a
  URL the model chose and drew a fake "approved" banner; ``$5 and $6`` turned into math.
  Widgets that ipywidgets typesets itself (a ``description``, a ``Label``, ``HTMLMath``) hold no
  ``$`` or backslash.
"""

from __future__ import annotations

import asyncio
import html as htmllib
import json
import re
from typing import Any

import pytest

widgets = pytest.importorskip("ipywidgets")
html5lib = pytest.importorskip("html5lib")
pytest.importorskip("nh3")

import nbformat  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from ipywidgets.widgets.widget_description import DescriptionWidget  # noqa: E402

from agentnb import Agent, RunResult, evaluate, tool  # noqa: E402
from agentnb.control.approval import Deny  # noqa: E402
from agentnb.errors import UserError  # noqa: E402
from agentnb.evaluation.report import evaluation_html  # noqa: E402
from agentnb.messages import ToolCall  # noqa: E402
from agentnb.notebook.approval import ApprovalPanel  # noqa: E402
from agentnb.notebook.debugger.debugger import Debugger  # noqa: E402
from agentnb.notebook.export import StaticTraces  # noqa: E402
from agentnb.notebook.forks.bar import ForkBar  # noqa: E402
from agentnb.notebook.trace.blocks import _COPY_JS  # noqa: E402
from agentnb.notebook.trace.widget import TraceWidget  # noqa: E402
from agentnb.printer import TextPrinter  # noqa: E402
from agentnb.testing import FunctionProvider, ScriptedProvider, Streamed, call  # noqa: E402
from agentnb.timetravel.diff import diff  # noqa: E402
from agentnb.untrusted import NO_MATH, html_widget, no_math, untrusted_html  # noqa: E402

#: Pieces that hostile text is made of: quotes and entities (css-inline wrote &quot; back as "),
#: tags, CSS (var() matched the old rewrite; url() fetches), mutation-XSS shapes, controls.
FRAGMENTS = [
    '"', "'", "`", "&quot;", "&#34;", "&amp;", "&lt;", "<", ">", "/", "=", " ", "\n", "\t",
    'style="', "style=", "var(--a,b)", "var(--jp-ui-font-color1,#1f2328)", ";", ":",
    "url(http://evil.example/x.png)", "background-image:", "\\75rl(", "@import 'http://evil.example/c.css';",
    " open ontoggle=document.title=1 x", "<details open ontoggle=alert(1)>", "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>", "</pre>", "</details>", "</style>", "<style>", "<!--", "-->", "<![CDATA[",
    "<svg><style><img src=x onerror=alert(1)>", "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\">",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>", "javascript:alert(1)",
    "[x](javascript:alert(1))", "![p](http://evil.example/p.png)", "data:text/html,<script>alert(1)</script>",
    "<a href=\"http://evil.example\" onclick=alert(1)>", "class=\"anb-copy\"", "onclick=", "\x1b[31m", "\u202e",
    "\x07", "PWN",
    # TeX (issue 45): what MathJax typesets in an HTML output without the ignore classes
    "$", "$$", "\\(", "\\)", "\\[", "\\]", "\\begin{equation}", "\\end{equation}", "costs $5 and $6",
    "$\\style{cursor:url(http://evil.example/t)}{x}$", "\\style{background-color:red}{\\text{✓ approved by admin}}",
    "\\href{http://evil.example/PWN}{click}", "$\\href{javascript:alert(1)}{x}$", "class=\"mathjax_process\"",
]  # fmt: skip
free_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), min_size=1, max_size=14).map("".join)
#: Attribute-injection shapes: an opener that a rewrite could take for markup, CSS, a handler.
attribute_injection = st.tuples(
    st.text(max_size=4),
    st.sampled_from(['style="', "style='", 'title="', 'class="', '" ', "' ", "><"]),
    st.sampled_from(["var(--a,b)", "var(--jp-x,#fff);", "color:red;", "url(http://evil.example/x)", ""]),
    st.sampled_from([" open ontoggle=document.title=1 x", " onerror=alert(1) ", '" onmouseover="alert(1)', ""]),
    st.sampled_from(['"', "'", "", ">", " x"]),
    st.text(max_size=4),
).map("".join)
untrusted_text = st.one_of(free_text, attribute_injection)

_FORBIDDEN_TAGS = {
    "script", "iframe", "frame", "frameset", "object", "embed", "applet", "form", "input", "textarea", "select",
    "base", "meta", "link", "svg", "math", "noscript", "template", "video", "audio", "source", "portal",
}  # fmt: skip
_SAFE_IMAGE = re.compile(r"data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*")
_STYLE_FETCH = re.compile(r"url\s*\(|image-set|expression|@import|\\", re.I)
#: Both classes: MathJax 2 (nbconvert, nbviewer, Voila's classic template) skips tex2jax_ignore,
#: MathJax 3 (JupyterLab, Notebook 7) mathjax_ignore; a *_process class below turns it back on.
_NO_MATH = {"tex2jax_ignore", "mathjax_ignore"}
_MATH_ON = {"tex2jax_process", "mathjax_process"}
_PROPERTIES = dict(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def _problems_and_text(html: str, *, live: bool) -> tuple[list[str], str]:
    """What is wrong with ``html`` (parsed as a browser would) and the text it shows."""
    root = html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)
    problems: list[str] = []
    text: list[str] = []
    ours = {_COPY_JS} if live else set()
    for el in root.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        tag = tag.rsplit("}", 1)[-1].lower()
        if tag in _FORBIDDEN_TAGS:
            problems.append(f"<{tag}>")
        if tag == "style" and _STYLE_FETCH.search(el.text or ""):
            problems.append(f"style sheet that fetches: {(el.text or '')[:80]!r}")
        for name, value in el.attrib.items():
            name = str(name).rsplit("}", 1)[-1].lower()
            if name.startswith("on") and value not in ours:
                problems.append(f"<{tag} {name}={value[:60]!r}>")
            if name == "style" and _STYLE_FETCH.search(value):
                problems.append(f"<{tag} style={value[:80]!r}>")
            if name in {"src", "href", "action", "formaction", "srcset", "poster", "background", "data"}:
                flat = re.sub(r"[\s\x00-\x1f]", "", value).lower()
                if tag == "img" and name == "src":
                    ok = bool(_SAFE_IMAGE.fullmatch(value))
                elif tag == "a" and name == "href":
                    ok = flat.startswith(("http://", "https://", "mailto:", "#", "data:application/json;base64,"))
                else:
                    ok = False
                if not ok:
                    problems.append(f"<{tag} {name}={value[:60]!r}>")
        if tag != "style":
            text.append(el.text or "")
        text.append(el.tail or "")
    return problems + _typeset(root), "".join(text)


def _typeset(root: Any) -> list[str]:
    """Text that MathJax would typeset: any text node with no ancestor carrying both ignore classes."""
    problems: list[str] = []

    def walk(el: Any, ignored: bool) -> None:
        if not isinstance(el.tag, str):  # a comment: never typeset
            return
        classes = set(el.attrib.get("class", "").split())
        if classes & _MATH_ON:
            problems.append(f"<{el.tag} class={el.attrib['class'][:60]!r}> turns MathJax on")
        ignored = ignored or classes >= _NO_MATH
        tag = el.tag.rsplit("}", 1)[-1].lower()
        if tag != "style" and (el.text or "").strip() and not ignored:
            problems.append(f"text MathJax would typeset: <{tag}>{el.text[:60]!r}")
        for child in el:
            walk(child, ignored)
            if (child.tail or "").strip() and not ignored:
                problems.append(f"text MathJax would typeset: {child.tail[:60]!r}")

    walk(root, False)
    return problems


def _shown(text: str) -> str:
    """``text`` as escaped HTML shows it once a browser has parsed it (line ends normalised)."""
    out = htmllib.unescape(untrusted_html(text))
    return re.sub("\r\n?", "\n", out).replace("\x00", "").strip()


def _visible(text: str) -> str:
    return re.sub("\r\n?", "\n", text).replace("\x00", "").replace("\ufffd", "")


def assert_inert(htmls: list[str], *, shows: str | None = None, live: bool = False) -> None:
    seen = []
    for html in htmls:
        problems, text = _problems_and_text(html, live=live)
        assert not problems, (problems[:3], html[:400])
        seen.append(_visible(text))
    if shows is not None:
        assert _shown(shows) in "".join(seen), (shows, [s[:300] for s in seen])


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


@tool
def boom(text: str) -> str:
    """Always fails."""
    raise ValueError(text)


def _widget_htmls(w: Any) -> list[str]:
    """The HTML a widget tree shows; asserts that nothing in it is typeset by ipywidgets itself
    (a description's label, a ``Label``, ``HTMLMath``: the front end calls MathJax on those)."""
    found: list[str] = []

    def walk(x: Any) -> None:
        assert not isinstance(x, (widgets.HTMLMath, widgets.Label)), type(x)
        if isinstance(x, DescriptionWidget):
            assert not re.search(r"[$\\]", x.description), (type(x), x.description)
        if isinstance(x, widgets.Output):
            for out in x.outputs:
                found.extend(v for k, v in out.get("data", {}).items() if k == "text/html")
        elif isinstance(x, widgets.HTML):
            found.append(x.value)
        for child in getattr(x, "children", ()):
            walk(child)

    walk(w)
    return found


def _run_with(s: str) -> RunResult:
    """One run that puts ``s`` everywhere a trace shows text."""
    script = [
        Streamed([s[: len(s) // 2], s[len(s) // 2 :]]),
        call("echo", text=s),
        call("boom", text=s),
        call(s[:40] or "x", x=s),
        s,
    ]
    agent = Agent(ScriptedProvider(script), tools=[echo, boom], system=s)
    return agent.run(s, stream=True)


@settings(**_PROPERTIES)
@given(untrusted_text)
def test_trace_views_are_inert_and_show_the_text(s: str) -> None:
    result = _run_with(s)
    live = TraceWidget()
    for event in result.events:
        live(event)
    live.finish(result)
    # the live widget's HTML (Copy buttons carry agentnb's own handler, nothing else does)
    assert_inert(_widget_htmls(live), shows=s, live=True)
    # the static view: what replaces the widget when the run ends, and the bundle it publishes
    replay = TraceWidget.replay(result)
    static = [replay.static_html(), live.static_bundle()[0]["text/html"]]
    assert_inert(static, shows=s)
    # the export: the stored snapshot, swapped in by nbconvert
    nb = nbformat.v4.new_notebook()
    data, meta = live._repr_mimebundle_()
    cell = nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output("display_data", data=data, metadata=meta)])
    nb.cells = [cell]
    (out,) = StaticTraces().preprocess(nb, {})[0].cells[0].outputs
    assert_inert([out.data["text/html"]], shows=s)


@settings(**_PROPERTIES)
@given(untrusted_text)
def test_a_tampered_snapshot_in_a_notebook_file_is_sanitized_on_export(s: str) -> None:
    """The output metadata of a notebook file is untrusted too: raw markup there is cleaned."""
    nb = nbformat.v4.new_notebook()
    out = nbformat.v4.new_output(
        "display_data",
        data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"}, "text/plain": "t"},
        metadata={"agentnb": {"html": f"<div class='anb-static'>{s}</div>", "answer": s}},
    )
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[out])]
    (cell,) = StaticTraces().preprocess(nb, {})[0].cells
    assert_inert([cell.outputs[0].data["text/html"]])


@settings(**_PROPERTIES)
@given(untrusted_text)
def test_the_approval_panel_and_a_denial_are_inert(s: str) -> None:
    panel = ApprovalPanel()
    panel._show(ToolCall(s, s, {"x": s}))
    panel._click(lambda: (_ for _ in ()).throw(UserError(s)))
    assert_inert([panel.label.value, panel.error.value], shows=s)
    denied = Agent(
        ScriptedProvider([call("echo", text=s), s]), tools=[echo], requires_approval=True, approver=lambda c: Deny(s)
    ).run(s)
    assert_inert([TraceWidget.replay(denied).static_html()], shows=s)


@settings(**{**_PROPERTIES, "max_examples": 15})
@given(untrusted_text)
def test_the_debugger_is_inert(s: str) -> None:
    async def main() -> list[str]:
        dbg = Debugger(Agent(ScriptedProvider([call("echo", text=s), s]), tools=[echo])).start(s)
        seen: list[str] = []
        while await dbg.next_pause() is not None:
            seen += _widget_htmls(dbg.view)
            dbg.step()
        await dbg.wait()
        return [*seen, dbg.view.static_html()]

    assert_inert(asyncio.run(main()), shows=s, live=True)


@settings(**{**_PROPERTIES, "max_examples": 15})
@given(st.lists(untrusted_text, min_size=1, max_size=3))
def test_evaluation_views_are_inert(texts: list[str]) -> None:
    cases = [{"input": t[:80], "expected": t[:80]} for t in texts]
    agent = Agent(ScriptedProvider([t[:80] for t in texts] * 2))
    name = (texts[0][:40] or "a").replace("|", "/")  # "|" is reserved in agent names (log keys)
    ev = evaluate({name: agent}, cases, scorers=[lambda case, r: r.output == case.expected])
    views = [evaluation_html(ev), ev._repr_html_()]
    for t in texts:
        assert_inert(views, shows=t[:80])
    # Two agents with hostile names: the comparison's words, the summary table, the view's static
    # copy with a trace opened, and the progress widget's last line (issue 39's views).
    names = [texts[0][:40].replace("|", "/") or "a", "b" + texts[-1][:40].replace("|", "/")]
    both = {name: Agent(ScriptedProvider([t[:80] for t in texts] * 2)) for name in names}
    ev2 = evaluate(both, cases, scorers=[lambda case, r: r.output == case.expected], progress=False)
    view = ev2.view()
    view.show(0)
    views = [ev2._repr_html_(), ev2.summary()._repr_html_(), view.static_html(), *_widget_htmls(view.widget)]
    views.append(ev2.diff(0)._repr_html_())  # what the view's "diff" button shows, for the first case
    for t in [*texts, *names]:
        assert_inert(views, shows=t[:80])


@settings(**{**_PROPERTIES, "max_examples": 25})
@given(untrusted_text)
def test_diffs_are_inert_and_never_typeset(s: str) -> None:
    """``agentnb.diff`` / ``ev.diff`` / the fork's diff: the one view that was typeset (issue 45)."""
    result = _run_with(s)
    forked = result.fork(0, reply=s + " (forked)")
    d = diff(result, forked, labels=(s[:20] or "a", "b" + s[:20]))
    assert_inert([d._repr_html_()], shows=s)
    assert_inert([d._repr_html_()], shows=s[:20])
    same = diff(result, result)
    assert_inert([same._repr_html_()], shows=str(len(same.steps)))


@settings(**{**_PROPERTIES, "max_examples": 20})
@given(untrusted_text)
def test_the_fork_bar_its_forks_and_its_frozen_copy_are_inert(s: str) -> None:
    name = s[:40] or "x"
    result = Agent(ScriptedProvider([call(name, x=s), s]), tools=[echo], system=s).run(s)
    bar = ForkBar(TraceWidget())
    bar.fill(result)
    assert bar.steps is not None
    # The labels are text (the buttons' front end escapes them once): shown as the model wrote them.
    assert bar.steps.options[0][0] == f"[0] {', '.join(dict.fromkeys([name]))}"
    panel = bar.open_at(1)
    panel.editor.value = s + " (edited)"
    panel.fork()
    assert bar.forks and bar.forks[0].output == s + " (edited)"
    panel.kind.value = "system"
    panel.editor.value = "\n".join([s, "{"])
    assert_inert(_widget_htmls(bar), shows=s, live=True)
    html = bar.static_bundle()["text/html"]
    assert_inert([html], shows=s)
    assert_inert([bar._repr_mimebundle_()[0]["text/html"]])


@settings(**{**_PROPERTIES, "max_examples": 10})
@given(untrusted_text)
def test_improvement_views_are_inert(s: str) -> None:
    from agentnb import improve
    from agentnb.improvement.views import ImprovementView

    student = FunctionProvider(lambda messages, tools: s + " 1")
    reflector = FunctionProvider(lambda messages, tools: f"```\n{s} use add\n```")
    cases = [{"input": f"What is {i}?", "expected": "never"} for i in range(4)]
    imp = improve(Agent(student, system=s), cases, ["contains"], reflector=reflector, budget=12, progress=False)
    view = ImprovementView(imp)
    # the table clips a long text (the best being the original, no view shows it whole)
    assert_inert([imp._repr_html_(), *_widget_htmls(view.widget)], shows=s[:60])


@settings(**_PROPERTIES)
@given(untrusted_text)
def test_the_printer_sends_no_control_sequences(s: str) -> None:
    import io

    out = io.StringIO()
    printer = TextPrinter(out)
    for event in _run_with(s).events:
        printer(event)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out.getvalue())


def test_every_html_widget_is_made_with_no_math_roots() -> None:
    """By construction: agentnb makes HTML widgets only through ``untrusted.html_widget`` (whose
    values are always under the no-math root), and no widget that ipywidgets typesets."""
    from pathlib import Path

    import agentnb

    bare = re.compile(r"\bwidgets\.(HTML|HTMLMath|Label)\s*\(|from ipywidgets import[^\n]*\b(HTML|HTMLMath|Label)\b")
    found = [
        f"{path.name}:{n}"
        for path in Path(agentnb.__file__).parent.rglob("*.py")
        if path.name != "untrusted.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if bare.search(line)
    ]
    assert not found, found
    w = html_widget("$x$")
    w.value = "costs $5 and $6"
    assert_inert([w.value], shows="costs $5 and $6")


def test_the_math_rule_fails_on_a_view_without_its_root() -> None:
    """The checker itself: text outside the root, a root with one class only, a class that turns
    MathJax back on, each is found."""
    assert _typeset(html5lib.parseFragment("<div>costs $5</div>", treebuilder="etree", namespaceHTMLElements=False))
    for html in (
        '<div class="mathjax_ignore">$x$</div>',
        f'<div class="{NO_MATH}">ok</div>$x$',
        f'<div class="{NO_MATH}"><span class="mathjax_process">$x$</span></div>',
    ):
        root = html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)
        assert _typeset(root), html
    assert not _typeset(
        html5lib.parseFragment(no_math("<b>$x$</b> y"), treebuilder="etree", namespaceHTMLElements=False)
    )


def test_the_reported_payload_is_inert_in_every_static_view() -> None:
    """The issue's reproduction: the answer ``style="var(--a,b) open ontoggle=...``."""
    s = 'style="var(--a,b) open ontoggle=document.title=1 x'
    result = Agent(ScriptedProvider([s])).run("go")
    w = TraceWidget.replay(result)
    html = w.static_html()
    assert "ontoggle" not in html.replace("ontoggle=document.title=1", "")  # only as text
    assert_inert([html], shows=s)
    root = html5lib.parseFragment(html, treebuilder="etree", namespaceHTMLElements=False)
    assert not [el for el in root.iter() if "ontoggle" in getattr(el, "attrib", {})]


@pytest.mark.parametrize(
    "field, value",
    [
        ("max_tool_calls", "<img src=x onerror=alert(1)>"),
        ("turn", '"><img src=x onerror=alert(1)>'),
        ("max_tool_calls", 1.5),
        ("tools", "<b>"),
    ],
)
@pytest.mark.parametrize("version", [None, 1, 2])
def test_a_transcript_with_a_hostile_field_is_refused_naming_it(
    tmp_path: Any, field: str, value: Any, version: Any
) -> None:
    """Every version is type-checked: a number that is not a number never reaches a view."""
    from agentnb import load_transcript
    from agentnb.errors import TranscriptError

    data = Agent(ScriptedProvider(["hi"])).run("x").to_dict()
    if version is None:
        data.pop("version")
    else:
        data["version"] = version
    started = next(e for e in data["events"] if e["kind"] == "run_started")
    started[field] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TranscriptError, match=rf"run_started\.{field}"):
        load_transcript(path)
    with pytest.raises(TranscriptError):
        TraceWidget.replay(path)


@pytest.mark.parametrize(
    "usage, ok",
    [
        ({"input_tokens": 10, "output_tokens": 2, "cost": 0.0}, True),
        ({"input_tokens": 10, "output_tokens": 2, "cost": 0.25}, True),
        ({"input_tokens": 10, "output_tokens": 2, "cost": None}, True),
        ({"input_tokens": "<b>", "output_tokens": 2}, False),
        ({"input_tokens": 1, "output_tokens": 2, "cost": "1"}, False),
        ({"input_tokens": 1, "output_tokens": 2, "tokens": 3}, False),
    ],
)
def test_usage_is_read_by_its_fields_types(tmp_path: Any, usage: dict[str, Any], ok: bool) -> None:
    from agentnb import load_transcript
    from agentnb.errors import TranscriptError

    data = Agent(ScriptedProvider(["hi"])).run("x").to_dict()
    data["usage"] = usage
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    if ok:
        assert load_transcript(path).usage.cost == usage.get("cost")
    else:
        with pytest.raises(TranscriptError, match="usage"):
            load_transcript(path)
