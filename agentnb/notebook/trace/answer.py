"""HTML for a run's answer: text as sanitized Markdown, a structured value as a table, its check.

>>> "<table" in answer_html("", '{"city": "Oslo"}')
True
"""

from __future__ import annotations

import json
from typing import Any

from agentnb.untrusted import untrusted_html as escape
from agentnb.untrusted import untrusted_markdown


def output_html(e: Any) -> str:
    """A structured answer's check: valid (its fields as a small table) or invalid (the errors)."""
    if not e.errors:
        head = f'<span class="anb-ok">✓ valid {escape(e.type_name)}</span>'
        return f'<div class="anb-block anb-final">{head}{value_table(e.value)}</div>'
    then = "sent back to the model to repair" if e.retry else "no retries left: the run ends"
    errs = "".join(f"<li>{escape(x)}</li>" for x in e.errors)
    head = f'<span class="anb-bad">✗ not a valid {escape(e.type_name)}</span> <span class="anb-m">{then}</span>'
    return f'<div class="anb-block anb-toolbad">{head}<ul style="margin:2px 0">{errs}</ul></div>'


def answer_html(answer: str, value_json: str | None = None) -> str:
    """The final answer: a structured value as its table, text as sanitized Markdown (raw text one click away)."""
    if value_json is not None:
        return value_table(value_json)
    return untrusted_markdown(answer, raw=True)


def value_table(value_json: str | None, max_rows: int = 20) -> str:
    """A value as HTML: an object's fields, or a list of objects, as a table; else JSON.

    >>> value_table('{"name": "Oslo", "population": 709000}').count("<tr>")
    2
    """
    try:
        value = json.loads(value_json) if value_json is not None else None
    except ValueError:
        return f"<pre>{escape(str(value_json))}</pre>"

    def cell(x: Any) -> str:
        text = x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)
        return escape(text if len(text) <= 200 else text[:199] + "…")

    if isinstance(value, dict) and value:
        rows = "".join(f"<tr><th>{escape(str(k))}</th><td>{cell(v)}</td></tr>" for k, v in value.items())
        return f'<table class="anb-value">{rows}</table>'
    if isinstance(value, list) and value and all(isinstance(r, dict) for r in value):
        cols = list(dict.fromkeys(k for r in value for k in r))
        head = "<tr>" + "".join(f"<th>{escape(str(c))}</th>" for c in cols) + "</tr>"
        body = "".join(
            "<tr>" + "".join(f"<td>{cell(r.get(c, ''))}</td>" for c in cols) + "</tr>" for r in value[:max_rows]
        )
        more = (
            f'<div class="anb-m">{len(value)} rows, first {int(max_rows)} shown</div>' if len(value) > max_rows else ""
        )
        return f'<table class="anb-value">{head}{body}</table>{more}'
    return f"<pre>{escape(json.dumps(value, ensure_ascii=False, indent=1))}</pre>"
