"""A tool's return value as the text the model reads, and the images it attaches.

Strings pass as they are. Pictures -- an :class:`~agentnb.messages.Image`, a PIL image, a
matplotlib figure (or axes), PNG/JPEG bytes -- are attached as ``ctx.attach_image`` does, and
the text says so. numpy scalars become plain numbers; numpy arrays and pandas DataFrames /
Series a bounded, readable text (shape and dtype, then a markdown table of the first rows);
other bytes a short note. None of numpy, PIL, pandas or matplotlib is imported here: values
are recognised by their type's module and duck-typed.

>>> render_value({"n": 3, "ok": True})
'{"n": 3, "ok": true}'
>>> render_value(b"\\x00\\x01\\x02")
'(binary data: 3 bytes, not shown)'
"""

from __future__ import annotations

import dataclasses
import enum
import io
import itertools
import json
import types
from typing import Any

from agentnb.messages import Image

#: Rows and columns of a table shown to the model; the rest is summarised.
MAX_ROWS = 20
MAX_COLUMNS = 20
#: Items read from a returned generator (it may not end).
MAX_ITEMS = 1000
#: Longest cell text in a table.
MAX_CELL = 60
_IMAGE_MAGIC = {b"\x89PNG\r\n\x1a\n": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}


def render_value(value: Any, ctx: Any = None) -> str:
    """``value`` as text for the model; pictures go to ``ctx.attach_image`` (a ToolContext)."""
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is int or kind is float or kind is bool:  # the common cases first: this runs for every call
        return json.dumps(value)  # the default encoder is cached: ~3x faster than with options
    if kind is dict or kind is list:
        return _dumps(value)
    if value is None:
        return "(no output)"
    if isinstance(value, str):
        return value
    image = as_image(value)
    if image is not None:
        if ctx is None:
            return f"(an image, {image.mime}, {len(image.data)} bytes: not shown, no context to attach it)"
        ctx.images.append(image)
        return f"Image attached ({image.mime}, {len(image.data)} bytes): it is shown to you after this result."
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"(binary data: {len(value):,} bytes, not shown)"
    module = _module(value)
    if module == "pandas":
        return _pandas_text(value)
    if module == "numpy" and hasattr(value, "shape") and hasattr(value, "ndim") and value.ndim > 0:
        return _array_text(value)
    return _dumps(value)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    except Exception:  # unserialisable, circular, too deep, or a __str__ that raises
        from agentnb.tools.running import safe_repr

        return safe_repr(value)


def as_image(value: Any) -> Image | None:
    """An :class:`Image` for picture-like values (PIL, matplotlib, image bytes), else None."""
    if isinstance(value, Image):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        head = bytes(value[:8])
        mime = next((m for magic, m in _IMAGE_MAGIC.items() if head.startswith(magic)), None)
        return Image(bytes(value), mime) if mime else None
    module = _module(value)
    if module == "PIL" and hasattr(value, "save"):
        return Image.coerce(value, "image/png")
    if module == "matplotlib":
        figure = value if hasattr(value, "savefig") else getattr(value, "figure", None)
        if figure is not None and hasattr(figure, "savefig"):
            buf = io.BytesIO()
            figure.savefig(buf, format="png", bbox_inches="tight")
            return Image(buf.getvalue(), "image/png")
    return None


def _module(value: Any) -> str:
    return type(value).__module__.split(".", 1)[0]


def _json_default(value: Any) -> Any:
    """JSON for what ``json`` does not know: numpy scalars and small arrays, models, dataclasses."""
    module = _module(value)
    if module == "numpy":
        if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
            return value.item()
        if hasattr(value, "tolist") and getattr(value, "size", MAX_ROWS + 1) <= MAX_ROWS * MAX_COLUMNS:
            return value.tolist()
    if hasattr(value, "model_dump") and callable(value.model_dump):  # pydantic
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple, range, type({}.keys()), type({}.values()), type({}.items()))):
        return list(value)
    if isinstance(value, (types.GeneratorType, map, filter, zip)):  # returned, not yielded: drained, bounded
        items = list(itertools.islice(value, MAX_ITEMS + 1))
        return items if len(items) <= MAX_ITEMS else [*items[:MAX_ITEMS], f"... (more than {MAX_ITEMS} items)"]
    if isinstance(value, enum.Enum):
        return value.value
    return str(value)


def _cell(value: Any) -> str:
    if _module(value) == "numpy" and hasattr(value, "item"):
        value = value.item()
    text = f"{value:.6g}" if isinstance(value, float) else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"


def markdown_table(header: list[str], rows: list[list[Any]]) -> str:
    """A markdown table.

    >>> print(markdown_table(["a", "b"], [[1, 2.5]]))
    | a | b |
    |---|---|
    | 1 | 2.5 |
    """
    lines = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _pandas_text(value: Any) -> str:
    frame = value.to_frame() if hasattr(value, "to_frame") and not hasattr(value, "columns") else value
    if not hasattr(frame, "columns") or not hasattr(frame, "iloc"):
        return str(value)[:2000]
    n_rows, n_cols = frame.shape
    kind = type(value).__name__
    head = frame.iloc[:MAX_ROWS, :MAX_COLUMNS]
    index_name = str(frame.index.name) if frame.index.name is not None else ""
    header = [index_name, *(str(c) for c in head.columns)]
    rows = [[idx, *row] for idx, row in zip(head.index, head.itertuples(index=False, name=None), strict=False)]
    lines = [f"{kind} with {n_rows:,} rows x {n_cols:,} columns", markdown_table(header, rows)]
    if n_rows > MAX_ROWS or n_cols > MAX_COLUMNS:
        lines.append(f"(first {min(n_rows, MAX_ROWS)} rows and {min(n_cols, MAX_COLUMNS)} columns shown)")
    return "\n".join(lines)


def _array_text(value: Any) -> str:
    shape = "x".join(str(n) for n in value.shape)
    title = f"array of shape ({shape}), dtype {value.dtype}"
    if value.ndim == 1:
        shown = [_cell(v) for v in value[: MAX_ROWS * MAX_COLUMNS].tolist()]
        more = f" … ({value.shape[0]:,} values)" if value.shape[0] > len(shown) else ""
        return f"{title}:\n[{', '.join(shown)}{more}]"
    if value.ndim == 2:
        head = value[:MAX_ROWS, :MAX_COLUMNS].tolist()
        table = markdown_table(
            ["", *(str(j) for j in range(len(head[0]) if head else 0))], [[i, *r] for i, r in enumerate(head)]
        )
        note = (
            "" if value.shape[0] <= MAX_ROWS and value.shape[1] <= MAX_COLUMNS else "\n(first rows and columns shown)"
        )
        return f"{title}:\n{table}{note}"
    flat = value.reshape(-1)[:MAX_ROWS].tolist()
    return f"{title}; first values: {', '.join(_cell(v) for v in flat)} …"
