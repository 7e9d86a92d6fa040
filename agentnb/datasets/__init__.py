"""Small made-up datasets the notebooks analyse, shipped with agentnb so a notebook copied to any
folder still finds its data.

``apartments.csv``: 360 flats for sale in five cities, with the gaps real listings have (made by
``python -m agentnb.datasets.make_apartments``: a fixed seed, the standard library only).

>>> apartments_csv().name
'apartments.csv'
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["apartments_csv"]


def apartments_csv() -> Path:
    """The path of ``apartments.csv`` (notebook 15's listings): read it with ``pandas.read_csv``."""
    return Path(__file__).with_name("apartments.csv")
