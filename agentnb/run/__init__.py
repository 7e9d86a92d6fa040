"""The run: an :class:`~agentnb.run.agent.Agent`, its loop, its state, how it ends, its result.

Owns the agent and its options, the core loop (:mod:`~agentnb.run.loop`, a short loop over
named phases), the run's configuration and state (:mod:`~agentnb.run.state`), agents as tools
(:mod:`~agentnb.run.agent_tool`, :mod:`~agentnb.run.nested`), endings and stops, the
result and its transcript on disk, sessions and the synchronous driver. May import every
lower layer (errors, messages, events, control, tracing, tools, output, providers); the
views (notebook, evaluation, the CLI) import it, never the other way round.
"""
