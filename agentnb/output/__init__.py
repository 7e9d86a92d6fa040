"""Structured output: a run's final answer as a typed value (``Agent(..., output_type=T)``).

Owns the output spec (schema + validator, :mod:`~agentnb.output.structured`) and the final-tool
convention native providers use for it. May import :mod:`agentnb.errors`, messages, events
and :mod:`agentnb.tools` (for schema helpers); never providers or the run.

>>> output_spec(int).check("42").value
42
"""

from agentnb.output.structured import (
    FINAL_TOOL,
    OutputCheck,
    OutputSpec,
    answer_from_final_tool,
    final_tool_description,
    output_spec,
    output_step,
    strict_schema,
)

__all__ = [
    "FINAL_TOOL",
    "OutputCheck",
    "OutputSpec",
    "answer_from_final_tool",
    "final_tool_description",
    "output_spec",
    "output_step",
    "strict_schema",
]
