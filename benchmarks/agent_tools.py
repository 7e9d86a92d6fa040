"""Tools for the grounded-answer benchmark (benchmarks/grounded_answers.py): the demo's three,
plus small lookup tools over fixed tables, so every result is known in advance.

>>> capital_of("Kenya"), stock_price("AAPL"), days_between("2024-01-01", "2024-03-01")
('Nairobi', '189.84 USD', '60 days')
"""

from __future__ import annotations

import datetime as dt

from agentnb.demo_tools import DEMO_TOOLS
from agentnb.tools import tool

_CAPITALS = {
    "kenya": "Nairobi",
    "australia": "Canberra",
    "canada": "Ottawa",
    "peru": "Lima",
    "norway": "Oslo",
    "vietnam": "Hanoi",
    "morocco": "Rabat",
    "chile": "Santiago",
}
_PRICES = {"AAPL": 189.84, "MSFT": 415.5, "TSLA": 248.42, "NVDA": 121.79, "AMZN": 178.25}


@tool(examples=[("What is the capital of France?", {"country": "France"})])
def capital_of(country: str) -> str:
    """The capital city of a country.

    Args:
        country: the country's name in English
    """
    try:
        return _CAPITALS[country.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown country {country!r}") from None


@tool(examples=[("What does Google stock cost?", {"symbol": "GOOG"})])
def stock_price(symbol: str) -> str:
    """The latest price of a stock, by its ticker symbol.

    Args:
        symbol: the ticker symbol, e.g. "IBM"
    """
    try:
        return f"{_PRICES[symbol.strip().upper()]} USD"
    except KeyError:
        raise ValueError(f"unknown symbol {symbol!r}") from None


@tool(examples=[("How many days from 2023-01-01 to 2023-02-01?", {"start": "2023-01-01", "end": "2023-02-01"})])
def days_between(start: str, end: str) -> str:
    """The number of days between two dates written as YYYY-MM-DD.

    Args:
        start: the first date
        end: the second date
    """
    return f"{(dt.date.fromisoformat(end) - dt.date.fromisoformat(start)).days} days"


AGENT_TOOLS = [*DEMO_TOOLS, capital_of, stock_price, days_between]
