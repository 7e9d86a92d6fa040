"""Tracing: agentnb's runs as OpenTelemetry spans (an event consumer, see :mod:`.otel`).

Layer: beside :mod:`agentnb.control`, above the events; may import events, errors and
the version; the run imports it (its watchers), never the other way round.

``opentelemetry-api`` is imported only when :func:`instrument` is called
(``pip install 'agentnb[otel]'`` brings the API, the SDK and the OTLP/HTTP exporter).

>>> from opentelemetry.sdk.trace import TracerProvider
>>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
>>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
>>> from agentnb import Agent
>>> from agentnb.testing import ScriptedProvider
>>> exporter = InMemorySpanExporter()
>>> provider = TracerProvider()
>>> provider.add_span_processor(SimpleSpanProcessor(exporter))
>>> watcher = instrument(provider)
>>> _ = Agent(ScriptedProvider(["hi"])).run("hello")
>>> uninstrument()
>>> [s.name for s in exporter.get_finished_spans()]
['chat scripted', 'invoke_agent']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentnb.tracing import observe


def instrument(
    tracer_provider: Any = None, *, content: bool = False, openinference: bool = False, secrets: Iterable[str] = ()
) -> Any:
    """Make every run in this process emit OpenTelemetry spans (GenAI conventions).

    Args:
        tracer_provider: where spans go; the global tracer provider when None. agentnb adds
            no exporter and sends nothing anywhere by itself.
        content: also record prompts, answers, tool arguments and results (secrets redacted).
        openinference: also add the OpenInference attributes Phoenix reads.
        secrets: more strings to redact from content (keys in the environment already are).

    Calling it again replaces the earlier instrumentation. Returns the
    :class:`~agentnb.tracing.otel.SpanWatcher` (also usable as ``Agent(instrument=...)``).

    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> from agentnb import Agent
    >>> from agentnb.testing import ScriptedProvider
    >>> spans, provider = InMemorySpanExporter(), TracerProvider()
    >>> provider.add_span_processor(SimpleSpanProcessor(spans))
    >>> _ = instrument(provider)
    >>> _ = Agent(ScriptedProvider(["hi"])).run("hello")
    >>> uninstrument()
    >>> [s.name for s in spans.get_finished_spans()]
    ['chat scripted', 'invoke_agent']
    """
    from agentnb.tracing.otel import SpanWatcher

    uninstrument()
    return observe.watch(SpanWatcher(tracer_provider, content=content, openinference=openinference, secrets=secrets))


def uninstrument() -> None:
    """Undo :func:`instrument`: runs emit no spans (``Agent(instrument=...)`` ones still do).

    >>> uninstrument()  # nothing instrumented: nothing to undo
    """
    for w in observe.watching():
        if type(w).__name__ == "SpanWatcher":
            observe.unwatch(w)


__all__ = ["instrument", "uninstrument"]
