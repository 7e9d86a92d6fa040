"""Property-based tests: generated schemas accept exactly the values of their types; fingerprints
ignore key order."""

from __future__ import annotations

import random
from typing import Any, Literal, Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from agentnb import Tool
from agentnb.tools.dedupe import fingerprint

# (annotation, strategy of values of that type, a value that is never of that type)
LEAVES = [
    (str, st.text(max_size=5), 3),
    (int, st.integers(), "1"),
    (float, st.floats(allow_nan=False, allow_infinity=False), "x"),
    (bool, st.booleans(), 0),
    (Literal["a", "b"], st.sampled_from(["a", "b"]), "c"),
]


def typed() -> st.SearchStrategy[tuple[Any, st.SearchStrategy[Any], Any]]:
    leaves = st.sampled_from(LEAVES)

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            inner.map(lambda t: (list[t[0]], st.lists(t[1], max_size=3), [t[2]])),  # type: ignore[valid-type]
            inner.map(lambda t: (dict[str, t[0]], st.dictionaries(st.text(max_size=3), t[1], max_size=3), {"k": t[2]})),  # type: ignore[valid-type]
            inner.map(lambda t: (Optional[t[0]], st.one_of(st.none(), t[1]), t[2])),  # noqa: UP045
        )

    return st.recursive(leaves, extend, max_leaves=3)


def make_tool(annotations: list[Any]) -> Tool:
    def fn(**kwargs: Any) -> None:
        return None

    # Build a real signature p0: T0, p1: T1, ... and let Tool.from_function read it.
    import inspect

    params = [
        inspect.Parameter(f"p{i}", inspect.Parameter.KEYWORD_ONLY, annotation=a) for i, a in enumerate(annotations)
    ]
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__annotations__ = {f"p{i}": a for i, a in enumerate(annotations)}
    fn.__doc__ = "Generated."
    return Tool.from_function(fn, name="generated")


@settings(max_examples=150, deadline=None)
@given(st.lists(typed(), min_size=1, max_size=3), st.data())
def test_generated_schema_accepts_values_of_the_type(specs: list[Any], data: st.DataObject) -> None:
    t = make_tool([s[0] for s in specs])
    args = {f"p{i}": data.draw(s[1]) for i, s in enumerate(specs)}
    assert t.validate(args) == []
    assert t.parameters["required"] == [f"p{i}" for i in range(len(specs))]


@settings(max_examples=150, deadline=None)
@given(st.lists(typed(), min_size=1, max_size=3), st.data())
def test_generated_schema_rejects_wrong_values_missing_and_unknown_keys(specs: list[Any], data: st.DataObject) -> None:
    t = make_tool([s[0] for s in specs])
    good = {f"p{i}": data.draw(s[1]) for i, s in enumerate(specs)}
    k = data.draw(st.integers(0, len(specs) - 1))
    bad = {**good, f"p{k}": specs[k][2]}
    assert t.validate(bad) != []
    missing = dict(good)
    del missing[f"p{k}"]
    assert t.validate(missing) == [f"'p{k}' is a required property"]
    assert t.validate({**good, "zz": 1}) == ["Additional properties are not allowed ('zz' was unexpected)"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=8,
)


def shuffled(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [shuffled(v, rng) for v in value]
    return value


@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5), st.integers())
def test_fingerprint_ignores_key_order_at_every_level(args: dict[str, Any], seed: int) -> None:
    assert fingerprint("f", args) == fingerprint("f", shuffled(args, random.Random(seed)))


@given(st.dictionaries(st.text(max_size=4), json_values, min_size=1, max_size=5))
def test_fingerprint_distinguishes_names_and_values(args: dict[str, Any]) -> None:
    assert fingerprint("f", args) != fingerprint("g", args)
    key = next(iter(args))
    changed = {**args, key: ["changed", args[key]]}
    assert fingerprint("f", args) != fingerprint("f", changed)
