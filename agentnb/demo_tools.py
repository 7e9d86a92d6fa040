"""A few small, safe, useful tools for the demo (``agentnb demo``) and the notebooks.

>>> calculator("2 * (3 + 4) ** 2")
'98'
>>> convert_units(5, "km", "mi")
'5 km = 3.10686 mi'
"""

from __future__ import annotations

import ast
import datetime as _dt
import math
import operator
from collections.abc import Callable
from typing import Any, Literal

from agentnb.tools import tool

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "sin": math.sin,
    "cos": math.cos,
    "abs": abs,
    "round": round,
}
_CONSTS = {"pi": math.pi, "e": math.e}


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 100:
            raise ValueError("exponent too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS:
        return _FUNCS[node.func.id](*(_eval(a) for a in node.args))
    if isinstance(node, ast.Name) and node.id in _CONSTS:
        return _CONSTS[node.id]
    raise ValueError(f"unsupported expression: {ast.unparse(node)}")


@tool(examples=[("What is 12 times 7?", {"expression": "12 * 7"}), ("Square root of 2?", {"expression": "sqrt(2)"})])
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly, e.g. "3 * (4 + 5)" or "sqrt(2)".

    Args:
        expression: arithmetic with + - * / // % ** and sqrt, log, sin, cos, abs, round, pi, e
    """
    value = _eval(ast.parse(expression.replace("^", "**"), mode="eval"))
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    return str(round(value, 10) if isinstance(value, float) else value)


_LENGTH_M = {"m": 1.0, "km": 1000.0, "cm": 0.01, "mm": 0.001, "mi": 1609.344, "ft": 0.3048, "in": 0.0254, "yd": 0.9144}
_MASS_KG = {"kg": 1.0, "g": 0.001, "lb": 0.45359237, "oz": 0.028349523125}


@tool(examples=[("How many miles is 10 km?", {"value": 10, "from_unit": "km", "to_unit": "mi"})])
def convert_units(
    value: float,
    from_unit: Literal["m", "km", "cm", "mm", "mi", "ft", "in", "yd", "kg", "g", "lb", "oz", "c", "f"],
    to_unit: Literal["m", "km", "cm", "mm", "mi", "ft", "in", "yd", "kg", "g", "lb", "oz", "c", "f"],
) -> str:
    """Convert a length, mass or temperature between units.

    Args:
        value: the amount to convert
        from_unit: the unit of value
        to_unit: the unit to convert to
    """
    if {from_unit, to_unit} <= {"c", "f"}:
        out = value if from_unit == to_unit else (value * 9 / 5 + 32 if from_unit == "c" else (value - 32) * 5 / 9)
    elif from_unit in _LENGTH_M and to_unit in _LENGTH_M:
        out = value * _LENGTH_M[from_unit] / _LENGTH_M[to_unit]
    elif from_unit in _MASS_KG and to_unit in _MASS_KG:
        out = value * _MASS_KG[from_unit] / _MASS_KG[to_unit]
    else:
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    return f"{value:g} {from_unit} = {out:.6g} {to_unit}"


@tool(examples=[("What day of the week is 2024-07-04?", {"date": "2024-07-04"})])
def weekday(date: str) -> str:
    """The day of the week of a date written as YYYY-MM-DD.

    Args:
        date: the date, e.g. "2025-01-31"
    """
    return _dt.date.fromisoformat(date).strftime("%A")


DEMO_TOOLS = [calculator, convert_units, weekday]
