"""Tool results that are not text: pictures are attached, numbers stay numbers, tables stay short."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys

import pytest

from agentnb import Agent, Image, tool
from agentnb.events import AttachmentAdded, ToolFinished
from agentnb.messages import UserMessage
from agentnb.testing import ScriptedProvider, call
from agentnb.tools import ToolContext
from agentnb.tools.rendering import MAX_ROWS, render_value

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")
PIL = pytest.importorskip("PIL.Image")


def run_tool(fn):  # type: ignore[no-untyped-def]
    """Run one tool through the loop; its result text, the attached images, and what the model got next."""
    t = tool(fn)
    model = ScriptedProvider([call(t.name), "ok"])
    result = Agent(model, tools=[t]).run("go")
    finished = next(e for e in result.events if isinstance(e, ToolFinished))
    images = [e.image for e in result.events if isinstance(e, AttachmentAdded)]
    return finished, images, model.requests[1].messages


def test_agentnb_image_is_attached() -> None:
    def chart() -> Image:
        """A chart."""
        return Image(b"\x89PNG\r\n\x1a\nfake", "image/png")

    finished, images, sent = run_tool(chart)
    assert "Image attached (image/png" in finished.result and "Image(" not in finished.result
    assert images == [Image(b"\x89PNG\r\n\x1a\nfake", "image/png")]
    assert isinstance(sent[-1], UserMessage) and sent[-1].images == tuple(images)


def test_pil_image_is_attached_as_png() -> None:
    def photo():  # type: ignore[no-untyped-def]
        """A photo."""
        return PIL.new("RGB", (4, 3), "red")

    finished, images, _ = run_tool(photo)
    assert finished.error is None and "Image attached" in finished.result
    assert images[0].mime == "image/png" and PIL.open(io.BytesIO(images[0].data)).size == (4, 3)


def test_matplotlib_figure_and_axes_are_attached() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def plot():  # type: ignore[no-untyped-def]
        """A plot."""
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.plot([1, 2, 3])
        plt.close(fig)
        return fig

    finished, images, _ = run_tool(plot)
    assert "Image attached" in finished.result and images[0].data.startswith(b"\x89PNG")
    fig, ax = plt.subplots(figsize=(2, 1))
    plt.close(fig)
    ctx = ToolContext("c", "t", 0)
    assert "Image attached" in render_value(ax, ctx) and len(ctx.images) == 1


def test_numpy_scalars_are_numbers() -> None:
    assert render_value(np.int64(5)) == "5"
    assert render_value(np.float32(0.5)) == "0.5"
    assert render_value(np.bool_(True)) == "true"
    assert render_value({"n": np.int64(5), "xs": np.arange(3)}) == '{"n": 5, "xs": [0, 1, 2]}'

    def count() -> int:
        """Count."""
        return np.int64(5)  # type: ignore[return-value]

    finished, _, _ = run_tool(count)
    assert finished.result == "5"


def test_arrays_are_bounded_tables() -> None:
    text = render_value(np.arange(10_000).reshape(100, 100))
    assert text.startswith("array of shape (100x100), dtype int64:")
    assert "| 0 | 0 | 1 |" in text and "first rows and columns shown" in text
    assert len(text.splitlines()) == MAX_ROWS + 4 and len(text) < 10_000
    assert render_value(np.array([1.5, 2.0])).endswith("[1.5, 2]")
    assert "…" in render_value(np.zeros(5000))
    assert "first values" in render_value(np.zeros((2, 2, 2)))


def test_dataframes_are_markdown_tables_with_the_shape() -> None:
    frame = pd.DataFrame({"city": ["Oslo", "Rome"] * 30, "temp": np.linspace(0, 1, 60)})
    text = render_value(frame)
    lines = text.splitlines()
    assert lines[0] == "DataFrame with 60 rows x 2 columns"
    assert lines[1] == "|  | city | temp |" and lines[3] == "| 0 | Oslo | 0 |"
    assert "(first 20 rows and 2 columns shown)" in text and len(lines) == 2 + 2 + MAX_ROWS
    assert render_value(frame["city"].head(2)).startswith("Series with 2 rows x 1 columns")


def test_bytes_get_a_note_and_image_bytes_are_attached() -> None:
    assert render_value(b"\x00" * 2048) == "(binary data: 2,048 bytes, not shown)"
    ctx = ToolContext("c", "t", 0)
    assert "Image attached (image/jpeg" in render_value(b"\xff\xd8\xff\xe0rest", ctx)


def test_models_and_dataclasses_are_json() -> None:
    from pydantic import BaseModel

    class P(BaseModel):
        a: int

    @dataclasses.dataclass
    class D:
        b: str

    assert render_value([P(a=1), D("x")]) == '[{"a": 1}, {"b": "x"}]'


def test_rendering_needs_none_of_the_libraries() -> None:
    code = (
        "import sys; import agentnb; from agentnb.tools.rendering import render_value;"
        "print(render_value({'a': 1}), render_value(b'xy'));"
        "print(sorted(m for m in ('numpy', 'PIL', 'pandas', 'matplotlib') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ['{"a": 1} (binary data: 2 bytes, not shown)', "[]"]


def test_returned_generators_ranges_and_dict_views_are_their_items() -> None:
    """A tool returning ``(x for x in ...)`` gave the model '"<generator object <genexpr> at 0x...>"'."""
    from agentnb.tools.rendering import MAX_ITEMS, render_value

    assert render_value(i * i for i in range(4)) == "[0, 1, 4, 9]"
    assert render_value({"keys": {"a": 1}.keys(), "span": range(2), "m": map(str, [1])}) == (
        '{"keys": ["a"], "span": [0, 1], "m": ["1"]}'
    )

    def forever():
        n = 0
        while True:
            yield n
            n += 1

    text = render_value(forever())
    assert text.endswith(f'{MAX_ITEMS - 1}, "... (more than {MAX_ITEMS} items)"]')
