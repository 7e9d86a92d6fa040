"""Structured output with the embedded SmolLM2-135M: how often ``result.value`` validates, and is right.

Each case is a short text and an ``output_type`` (pydantic models, a dataclass, a TypedDict,
lists of records, plain ints and bools); the expected value is written by hand. The agent is
``Agent("local", output_type=T)`` with greedy decoding: the answer is decoded under the schema's
grammar, so every value should validate (by construction); *right* means every field equals
the expected one (strings compared without case and surrounding punctuation, numbers exactly).

Cases are split in two halves by position: ``even`` (looked at while building the feature) and
``odd`` (held out); both are reported. ``--split even|odd|all`` picks which to run.

    .venv/bin/python benchmarks/structured_output.py            # all cases, ~3-10 s each on 2 cores
    .venv/bin/python benchmarks/structured_output.py --split odd --limit 6
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pydantic import BaseModel

from agentnb import Agent


class Person(BaseModel):
    name: str
    age: int
    city: str


class Price(BaseModel):
    fruit: str
    price: float


class Flight(BaseModel):
    origin: str
    destination: str
    passengers: int


@dataclasses.dataclass
class Book:
    title: str
    year: int


class Capital(TypedDict):
    country: str
    capital: str


class Order(BaseModel):
    item: str
    quantity: int
    express: bool


# (output_type, text, expected value as JSON data)
CASES: list[tuple[Any, str, Any]] = [
    (Person, "Maria Lopez is 34 years old and lives in Madrid.", {"name": "Maria Lopez", "age": 34, "city": "Madrid"}),
    (Person, "Tom, 71, retired in Dublin.", {"name": "Tom", "age": 71, "city": "Dublin"}),
    (
        Person,
        "Our new colleague Aiko Tanaka (29) moved here from Osaka.",
        {"name": "Aiko Tanaka", "age": 29, "city": "Osaka"},
    ),
    (
        Person,
        "Lars Berg, a 45-year-old engineer from Oslo, won the prize.",
        {"name": "Lars Berg", "age": 45, "city": "Oslo"},
    ),
    (
        list[Price],
        "Apples cost 1.20, bananas 0.50 and cherries 4.75.",
        [{"fruit": "Apples", "price": 1.2}, {"fruit": "bananas", "price": 0.5}, {"fruit": "cherries", "price": 4.75}],
    ),
    (
        list[Price],
        "Mangoes are 2.30 and kiwis 0.45 today.",
        [{"fruit": "Mangoes", "price": 2.3}, {"fruit": "kiwis", "price": 0.45}],
    ),
    (Flight, "Book 3 seats from Paris to Rome.", {"origin": "Paris", "destination": "Rome", "passengers": 3}),
    (
        Flight,
        "We are 5 people flying from Berlin to Lisbon.",
        {"origin": "Berlin", "destination": "Lisbon", "passengers": 5},
    ),
    (Book, "Dune by Frank Herbert was published in 1965.", {"title": "Dune", "year": 1965}),
    (Book, "In 1949 George Orwell published Nineteen Eighty-Four.", {"title": "Nineteen Eighty-Four", "year": 1949}),
    (Capital, "The capital of Kenya is Nairobi.", {"country": "Kenya", "capital": "Nairobi"}),
    (Capital, "Canberra, not Sydney, is the capital of Australia.", {"country": "Australia", "capital": "Canberra"}),
    (int, "The invoice lists 17 chairs.", 17),
    (int, "She ran 42 kilometres on Sunday.", 42),
    (Order, "Please send 2 lamps, express delivery.", {"item": "lamps", "quantity": 2, "express": True}),
    (Order, "One sofa, standard shipping is fine.", {"item": "sofa", "quantity": 1, "express": False}),
    (
        list[Capital],
        "Peru's capital is Lima and Chile's is Santiago.",
        [{"country": "Peru", "capital": "Lima"}, {"country": "Chile", "capital": "Santiago"}],
    ),
    (
        list[Book],
        "Emma came out in 1815 and Ulysses in 1922.",
        [{"title": "Emma", "year": 1815}, {"title": "Ulysses", "year": 1922}],
    ),
    (bool, "Is Paris in France? Answer true or false.", True),
    (bool, "Is the Moon larger than the Earth? Answer true or false.", False),
]


def normalise(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip(" .,!?\"'").casefold()
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def as_data(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [as_data(v) for v in value]
    return value


def fields_right(got: Any, expected: Any) -> tuple[int, int]:
    """(right, total) over the expected fields (records of a list paired in order)."""
    if isinstance(expected, list):
        pairs = [fields_right(g, e) for g, e in zip(got or [], expected, strict=False)]
        total = sum(fields_right(e, e)[1] for e in expected)
        return sum(p[0] for p in pairs), total
    if isinstance(expected, dict):
        got = got if isinstance(got, dict) else {}
        return sum(normalise(got.get(k)) == normalise(v) for k, v in expected.items()), len(expected)
    return int(normalise(got) == normalise(expected)), 1


def run(cases: list[tuple[Any, str, Any]], max_new_tokens: int) -> dict[str, Any]:
    agent = Agent("local", max_output_retries=0, settings={"max_new_tokens": max_new_tokens})
    valid = right = field_ok = field_total = 0
    seconds = 0.0
    for output_type, text, expected in cases:
        start = time.perf_counter()
        result = agent.run(text, output_type=output_type)
        seconds += time.perf_counter() - start
        ok = result.stop_reason == "answer" and result.value is not None
        got = as_data(result.value)
        valid += ok
        r, n = fields_right(got, expected)
        field_ok += r
        field_total += n
        exact = ok and normalise(got) == normalise(expected)
        right += exact
        mark = "right" if exact else ("valid" if ok else "INVALID")
        print(f"  {mark:7} {getattr(output_type, '__name__', str(output_type))[:14]:14} {result.output[:90]}")
    n = len(cases)
    return {"n": n, "valid": valid / n, "right": right / n, "fields": field_ok / field_total, "s": seconds / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["all", "even", "odd"], default="all")
    parser.add_argument("--limit", type=int, default=0, help="at most this many cases per half")
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("AGENTNB_BENCH_QUICK") == "1",
        help="a smoke run in seconds (also AGENTNB_BENCH_QUICK=1): one held-out case",
    )
    args = parser.parse_args()
    if args.quick:
        args.split, args.limit = "odd", 1
    halves = {"even (tuning)": CASES[0::2], "odd (held out)": CASES[1::2]}
    if args.split != "all":
        halves = {k: v for k, v in halves.items() if k.startswith(args.split)}
    rows = []
    for name, cases in halves.items():
        cases = cases[: args.limit] if args.limit else cases
        print(f"{name}: {len(cases)} cases")
        rows.append((name, run(cases, args.max_new_tokens)))
    print()
    print(f"{'half':16} {'cases':>5} {'valid':>7} {'right':>7} {'fields':>7} {'s/case':>7}")
    for name, r in rows:
        print(f"{name:16} {r['n']:5} {r['valid']:7.0%} {r['right']:7.0%} {r['fields']:7.0%} {r['s']:7.2f}")


if __name__ == "__main__":
    main()
