"""kernel_tools("read") on a plain namespace: list_variables, describe, hostile names and values."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
import tracemalloc
from typing import Any

import numpy as np
import pandas as pd
import pydantic
import pytest

from agentnb import Agent, UserError, kernel_tools
from agentnb.kernel import KernelReadError
from agentnb.kernel import tools as kernel_tools_module
from agentnb.kernel.frames import SAMPLE_ROWS
from agentnb.testing import ScriptedProvider, call


def reader(ns: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {t.name: t for t in kernel_tools("read", namespace=ns, **options)}


@dataclasses.dataclass
class Config:
    lr: float
    layers: list[int]
    name: str = "base"


class Point(pydantic.BaseModel):
    x: int
    label: str


# --- list_variables ------------------------------------------------------------------------


def test_list_variables_lists_the_users_variables_newest_first_with_one_line_each() -> None:
    ns: dict[str, Any] = {
        "os": os,  # a module
        "In": [""],
        "Out": {},
        "exit": object(),
        "_private": 1,
        "frame": pd.DataFrame(np.zeros((1_000_000, 12))),
        "image": np.zeros((512, 512), dtype="float32"),
        "rows": [{"a": i} for i in range(3_000)],
        "text": "x" * 20_114,
    }
    listing = reader(ns)["list_variables"]()
    assert listing.splitlines() == [
        "4 variables, most recently defined first:",
        "text: str of 20,114 characters",
        "rows: list of 3,000 dict",
        "image: ndarray (512, 512) float32",
        "frame: DataFrame 1,000,000 x 12",
    ]


def test_list_variables_is_bounded_and_says_how_many_there_are() -> None:
    ns = {f"v{i}": i for i in range(250)}
    listing = reader(ns, max_variables=10)["list_variables"]()
    lines = listing.splitlines()
    assert lines[0] == "250 variables, most recently defined first (the first 10; describe(name) reads any of them):"
    assert lines[1:] == [f"v{i}: int {i}" for i in range(249, 239, -1)]
    assert reader({})["list_variables"]() == "The notebook has no variables yet."


def test_a_summary_runs_no_user_code() -> None:
    touched: list[str] = []

    class Loud:
        def __repr__(self) -> str:
            touched.append("repr")
            return "Loud()"

        def __len__(self) -> int:
            touched.append("len")
            return 1

    listing = reader({"loud": Loud(), "many": [Loud()] * 5})["list_variables"]()
    assert "loud: Loud object" in listing and "many: list of 5 Loud" in listing
    assert touched == []


# --- describe: what a person would print ---------------------------------------------------


def test_describe_a_small_frame_whole() -> None:
    df = pd.DataFrame(
        {
            "price": [10.0, None, 30.0, 40.0],
            "qty": [1, 2, 3, 4],
            "city": pd.Series(["Oslo", "Rome", "Oslo", None], dtype=object),
            "when": pd.to_datetime(["2024-01-01", "2024-03-01", None, "2024-02-01"]),
        }
    )
    text = reader({"df": df})["describe"](name="df")
    lines = text.splitlines()
    assert lines[0] == "df: DataFrame 4 x 4; index: RangeIndex 0..3"
    assert "sample" not in text  # a small frame is read whole
    price = next(line for line in lines if line.strip().startswith("price"))
    assert price.split()[1:4] == ["float64", "1", "(25.0%)"]
    assert "mean 26.67" in price and "min 10" in price and "max 40" in price
    city = next(line for line in lines if line.strip().startswith("city"))
    assert "2 distinct; top: 'Oslo' (2), 'Rome' (1)" in city and " 1 (25.0%) " in city
    when = next(line for line in lines if line.strip().startswith("when"))
    assert "from 2024-01-01 00:00:00 to 2024-03-01 00:00:00" in when
    assert "first 4 rows:" in text and "Rome" in lines[-3]


def test_describe_a_large_frame_from_a_sample_saying_so_without_copying_it() -> None:
    rows = 2_000_000
    rng = np.random.default_rng(5)
    df = pd.DataFrame({"a": rng.random(rows), "b": rng.random(rows), "n": np.arange(rows)})
    df.loc[::4, "a"] = np.nan
    df["city"] = np.array(["x", "y", None], dtype=object)[np.arange(rows) % 3]
    before = df.copy()
    describe = reader({"df": df})["describe"]
    tracemalloc.start()
    try:
        text = describe(name="df")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    frame_bytes = int(df.memory_usage(deep=False).sum())
    assert peak < frame_bytes / 10, (peak, frame_bytes)  # no copy of the frame, nor of a column
    sampled = re.search(r"statistics are from a random sample of ([\d,]+) of the 2,000,000 rows \(seed 0\)", text)
    assert sampled is not None and 0.99 * SAMPLE_ROWS <= int(sampled.group(1).replace(",", "")) <= SAMPLE_ROWS
    a_line = next(line for line in text.splitlines() if line.strip().startswith("a "))
    assert "500,000 (25.0%)" in a_line  # float nulls: counted exactly over the whole column
    city = next(line for line in text.splitlines() if line.strip().startswith("city"))
    assert "~33." in city  # object nulls: estimated from the sample, marked ~
    pd.testing.assert_frame_equal(df, before)
    assert describe(name="df") == text  # the same frame reads the same (seeded sample)


def test_describe_series_arrays_and_paths() -> None:
    df = pd.DataFrame({"price": [1.5, 2.5, None]})
    cfg = {"lr": 0.1, "nested": {"depth": 3}}
    runs = [Config(0.1, [64, 64])]
    read = reader({"df": df, "cfg": cfg, "runs": runs, "a": np.arange(12, dtype="int16").reshape(3, 4)})["describe"]
    series = read(name="df.price")
    assert series.startswith("df.price: Series 'price' of 3 float64") and "nulls: 1 (33.3%)" in series
    assert read(name='cfg["lr"]') == 'cfg["lr"]: float 0.1\n0.1'
    assert read(name="cfg['nested']['depth']").startswith("cfg['nested']['depth']: int 3")
    assert read(name="runs[0].layers").startswith("runs[0].layers: list of 2 int")
    array = read(name="a")
    assert array.splitlines()[:2] == ["a: ndarray (3, 4) int16, 24 bytes", "NaN: 0; mean 5.5, std 3.606, min 0, max 11"]
    assert "[ 8  9 10 11]]" in array
    assert reader({"e": pd.DataFrame()})["describe"](name="e").endswith("\nno columns")


def test_describe_dataclasses_pydantic_models_strings_and_other_objects() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<Opaque " + "z" * 5_000 + ">"

    ns = {"cfg": Config(0.01, [8, 16]), "p": Point(x=3, label="<b>a</b>"), "s": "line 1\nline 2", "o": Opaque()}
    read = reader(ns)["describe"]
    assert read(name="cfg").splitlines() == [
        "cfg: Config (dataclass, 3 fields)",
        "  lr: float = 0.01",
        "  layers: list[int] = [8, 16]",
        "  name: str = 'base'",
    ]
    assert read(name="p").splitlines() == [
        "p: Point (pydantic model, 2 fields)",
        "  x: int = 3",
        "  label: str = '<b>a</b>'",
    ]
    assert read(name="s") == "s: str of 13 characters, 2 lines\nline 1\nline 2"
    opaque = read(name="o")
    assert opaque.startswith("o: Opaque object\nrepr: <Opaque zzz") and "[5,009 characters]" in opaque
    assert len(opaque) < 2_200


# --- bad input: names that are not names ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("__import__('os')", "is not a variable name"),
        ("df; 1", "is not a variable name"),
        ("a[0]()", "is not a variable name"),
        ("df + 1", "is not a variable name"),
        ("side()", "is not a variable name"),
        ("", "is not a variable name"),
        ("x" * 500, "is not a variable name"),
        ("_private", "'_private' is private"),
        ("df.__class__", "df.__class__ is private"),
        ("df._mgr", "df._mgr is private"),
        ("In", "'In' is IPython's"),
        ("nosuch", "no variable 'nosuch' in the notebook; list_variables() lists them"),
        ("df.nosuch", "df.nosuch does not exist (AttributeError)"),
        ("cfg['nope']", "cfg['nope'] does not exist (KeyError)"),
    ],
)
def test_a_name_that_is_not_a_users_variable_is_a_clear_error(name: str, message: str) -> None:
    called: list[int] = []
    ns = {"df": pd.DataFrame({"a": [1]}), "cfg": {"lr": 1}, "a": [len], "side": lambda: called.append(1), "_private": 2}
    ns["In"] = [""]
    with pytest.raises(KernelReadError, match=re.escape(message)):
        reader(ns)["describe"](name=name)
    assert called == []


def test_the_model_reads_the_error_and_the_run_goes_on() -> None:
    ns = {"df": pd.DataFrame({"price": [1.0, None]})}
    provider = ScriptedProvider(
        [call("describe", name="__import__('os').system('x')"), call("describe", name="df"), "ok"]
    )
    result = Agent(provider, tools=kernel_tools("read", namespace=ns)).run("why nulls?")
    assert result.output == "ok"
    tool_texts = [m.content for m in result.messages if m.role == "tool"]
    assert "is not a variable name" in tool_texts[0] and "expressions are not evaluated" in tool_texts[0]
    assert tool_texts[1].startswith("df: DataFrame 2 x 1") and "1 (50.0%)" in tool_texts[1]


# --- bad input: values that fight back -----------------------------------------------------


class Raises:
    def __repr__(self) -> str:
        raise ValueError("no repr for you")


class Hangs:
    def __repr__(self) -> str:
        while True:
            try:
                time.sleep(0.001)
            except Exception:  # swallowing Exception does not swallow the deadline
                pass


class Huge:
    def __repr__(self) -> str:
        return "h" * 10_000_000


class SlowProperty:
    @property
    def value(self) -> int:
        while True:
            pass


def test_hostile_reprs_are_bounded_and_the_trace_function_is_put_back() -> None:
    trace = sys.gettrace()
    read = reader({"r": Raises(), "h": Hangs(), "huge": Huge(), "slow": SlowProperty(), "box": [Hangs(), 1]})[
        "describe"
    ]
    assert read(name="r") == "r: Raises object\nrepr: <Raises: repr raised ValueError>"
    start = time.monotonic()
    assert read(name="h") == "h: Hangs object\nrepr: <Hangs: repr did not finish in 0.5 s>"
    assert "[10,000,000 characters]" in read(name="huge") and len(read(name="huge")) < 2_200
    with pytest.raises(KernelReadError, match=r"reading slow\.value did not finish in 1 s"):
        read(name="slow.value")
    assert "<Hangs: repr did not finish in 0.1 s>" in read(name="box")
    assert time.monotonic() - start < 10  # each bound held (0.5 + 1 + 0.1 s of work, on a busy machine)
    assert sys.gettrace() is trace


def test_ansi_html_and_script_in_values_reach_the_model_as_characters() -> None:
    hostile = "\x1b[31mred\x1b[0m <script>alert(1)</script> \u202egnp.exe"
    df = pd.DataFrame({"note": [hostile, "<img src=x onerror=alert(1)>"]})
    read = reader({"s": hostile, "df": df, "d": {"k": hostile}})["describe"]
    for name in ("s", "df", "d"):
        text = read(name=name)
        assert "\x1b" not in text and "\u202e" not in text, name
        assert "\\x1b[31m" in text, name
    assert "\\u202e" in read(name="s") and "\\u202e" in read(name="d")
    assert "<script>alert(1)</script>" in read(name="s")  # text, shown escaped by every view


def test_the_trace_and_the_printer_show_hostile_text_from_a_read_as_text() -> None:
    import io

    from agentnb import TextPrinter
    from agentnb.notebook.trace.widget import TraceWidget

    ns = {"s": "<script>alert(1)</script><img src=x onerror=alert(2)> \x1b[2J\x1b[31mred"}
    widget, out = TraceWidget(), io.StringIO()
    printer = TextPrinter(out)
    agent = Agent(ScriptedProvider([call("describe", name="s"), "ok"]), tools=kernel_tools("read", namespace=ns))
    agent.run("?", on_event=lambda e: (widget(e), printer(e)))
    html = widget.static_html()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)" in html
    assert "\x1b" not in out.getvalue() and "<script>alert(1)" in out.getvalue()


# --- the API -------------------------------------------------------------------------------


def test_modes_not_built_yet_and_bad_options_are_user_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [t.name for t in kernel_tools("code", namespace={})][-1] == "run_python"  # tests/test_kernel_code.py
    with pytest.raises(UserError, match=r"kernel_tools\('read'\) takes no share"):
        kernel_tools("read", namespace={}, share=["x"])
    with pytest.raises(UserError, match="mode must be one of 'read', 'code', 'sandbox', not 'write'"):
        kernel_tools("write", namespace={})  # type: ignore[arg-type]
    with pytest.raises(UserError, match="max_variables must be a whole number >= 1, not 0"):
        kernel_tools("read", namespace={}, max_variables=0)
    with pytest.raises(UserError, match="namespace must be a dict"):
        kernel_tools("read", namespace=[1])  # type: ignore[arg-type]
    monkeypatch.setattr(kernel_tools_module, "_shell", lambda: None)
    with pytest.raises(
        UserError, match=r"needs a namespace outside IPython: kernel_tools\('read', namespace=globals\(\)\)"
    ):
        kernel_tools("read")


def test_notebook_cells_outside_a_kernel_says_why() -> None:
    with pytest.raises(KernelReadError, match="no cell history here"):
        reader({"x": 1})["notebook_cells"]()
    with pytest.raises(KernelReadError, match="last must be between 1 and 50, not 0"):
        reader({"x": 1})["notebook_cells"](last=0)
