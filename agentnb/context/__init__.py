"""What fits in a model's context window: the size of each request (the gauge), and compaction
that keeps long runs inside the window, exact under replay and fork (issue 47).

The model's window itself is found by :mod:`agentnb.providers.window`.
"""
