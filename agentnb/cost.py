"""The documented path of :mod:`agentnb.control.cost` (``from agentnb.cost import format_cost``).

>>> format_cost(0.0123)
'$0.0123'
"""

from agentnb.control.cost import format_cost, price, price_ref, priced

__all__ = ["format_cost", "price", "price_ref", "priced"]
