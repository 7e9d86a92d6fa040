"""numpy arrays described: shape, dtype, size, NaNs, statistics from a sample, numpy's own preview.

>>> import numpy as np
>>> print(describe_ndarray(np.arange(6, dtype="float32").reshape(2, 3), "a"))
a: ndarray (2, 3) float32, 24 bytes
NaN: 0; mean 2.5, std 1.871, min 0, max 5
[[0. 1. 2.]
 [3. 4. 5.]]
"""

from __future__ import annotations

from typing import Any

from agentnb.kernel.bounded import TooSlow, clip, plain, within

#: Arrays of up to this many elements are summarised whole; a larger one from a sample.
WHOLE_ELEMENTS = 1_000_000
#: Elements drawn (with replacement, then deduplicated) for a larger array's statistics.
SAMPLE_ELEMENTS = 100_000
#: Elements whose NaNs are counted exactly; beyond, estimated from the sample.
EXACT_NAN_ELEMENTS = 30_000_000
PREVIEW_CHARS = 2_000


def describe_ndarray(a: Any, name: str) -> str:
    """An array's shape, dtype and size, its numbers' summary, and numpy's summarised print."""
    lines = [f"{name}: ndarray {tuple(a.shape)} {a.dtype}, {_size(a.nbytes)}"]
    if a.dtype.kind in "biuf" and a.size:
        lines.append(_numbers(a))
    lines.append(_preview(a))
    return "\n".join(lines)


def _numbers(a: Any) -> str:
    import numpy as np

    sample, note = a, ""
    if a.size > WHOLE_ELEMENTS:
        positions = np.unique(np.random.default_rng(0).integers(0, a.size, SAMPLE_ELEMENTS))
        sample = a.flat[positions]  # a gather: the array is not copied, even when not contiguous
        note = f" (statistics from a random sample of {len(positions):,} of {a.size:,} elements, seed 0)"
    values = np.asarray(sample, dtype="float64").ravel()
    if a.dtype.kind == "f":
        nans = _nans(a, values)
        values = values[~np.isnan(values)]
    else:
        nans = "0"
    if not len(values):
        return f"NaN: {nans}; all NaN"
    std = values.std(ddof=1) if len(values) > 1 else 0.0
    stats = f"mean {values.mean():.4g}, std {std:.4g}, min {values.min():.4g}, max {values.max():.4g}"
    return f"NaN: {nans}; {stats}{note}"


def _nans(a: Any, sample: Any) -> str:
    import numpy as np

    if a.size <= EXACT_NAN_ELEMENTS:
        return f"{int(np.isnan(a).sum()):,}"
    found = int(np.isnan(sample).sum())
    return f"~{found / len(sample):.1%}" if found else "~0"


def _preview(a: Any) -> str:
    """numpy's own print, summarised (``...`` past a few items); an object array's items are
    user objects, so it is bounded in time."""
    import numpy as np

    try:
        text = within(lambda: np.array2string(a, threshold=60, edgeitems=3, max_line_width=100), 0.5)
    except TooSlow:
        return "(preview did not finish in 0.5 s)"
    except Exception as exc:
        return f"(no preview: {type(exc).__name__})"
    return clip(plain(text), PREVIEW_CHARS)


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"
