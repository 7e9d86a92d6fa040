"""How a run lives in a kernel cell: ``runner`` (blocking, or a background task the cell
returns from) and ``inplace`` (widget messages served while the cell still runs).
"""
