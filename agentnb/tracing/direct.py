"""Finished spans handed straight to the OpenTelemetry SDK's span processors.

A model call's or a tool call's span is made only once the call is over, with every attribute
known. Made through ``Tracer.start_span`` and ``Span.end`` the SDK spends ~14-17 us on a span
here (most of it re-checking each attribute value in ``BoundedAttributes``); the same finished
``ReadableSpan`` given to the same span processors costs ~3 us. In a 100-step run that is the
difference between tracing costing 3x the loop's own overhead and under 2x
(``python benchmarks/loop_overhead.py``).

It is taken only where the result is the same span the SDK would have made, checked once per
run (:func:`direct_sink`) and per span (:meth:`Sink.emit`); everything else goes through the
tracer as before:

* the tracer is the SDK's own, enabled, with no span metrics being recorded;
* every span processor is one whose ``on_start`` and ``_on_ending`` do nothing (the SDK's
  batch and simple processors): they cannot tell the difference;
* span limits truncate no value and leave room for at least 64 attributes and events, and
  the span is within them;
* every attribute value is already a clean scalar or a tuple of strings (no conversion, no
  dropped ``None`` to warn about);
* the sampler is asked as ``start_span`` asks it, and its attributes and trace state are used;
  the SDK's default (``ParentBased(ALWAYS_ON)`` under the run's sampled span) and ``ALWAYS_ON``
  are known to keep every span as it is, so they are not asked;
* no span processor was added since the run started.

The SDK's private parts read here (``_is_enabled``, ``_tracer_metrics``, ``_span_limits``,
``_span_processors``, the samplers' ``_local_parent_sampled`` and ``_decision``) are read
defensively: if any is missing or different, the tracer path is used. The SDK's docstring asks
users not to make ``ReadableSpan`` objects themselves: this module does, for the one case above
where the tracer would make exactly this object, and
``tests/test_tracing_direct.py`` checks that both paths export the same spans (names, kinds,
parents, attributes, events, status, resource, scope, flags, trace state) on a nested run with
failures and under an incoming trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from time import time_ns
from typing import Any

__all__ = ["Sink", "direct_sink"]

_CLEAN = (str, bool, int, float)
_MIN_LIMIT = 64  # attributes or events a span may hold before the SDK would start dropping


class Sink:
    """Where a run's finished spans go when they may skip the tracer (see the module docstring)."""

    __slots__ = (
        "tracer",
        "multi",
        "processors",
        "sdk",
        "trace_api",
        "parent_ctx",
        "parent",
        "random",
        "sampled",
        "unset",
    )

    def __init__(self, tracer: Any, parent_ctx: Any, parent: Any, sdk: Any, trace_api: Any) -> None:
        self.tracer = tracer
        self.multi = tracer.span_processor
        self.processors = self.multi._span_processors  # as checked by direct_sink
        self.sdk = sdk
        self.trace_api = trace_api
        self.parent_ctx = parent_ctx  # the OTel context of the run's span: every span here is its child
        self.parent = parent  # that span's SpanContext
        self.random = trace_api.TraceFlags.RANDOM_TRACE_ID if parent.trace_flags.random_trace_id else 0
        # The sampler's answer when it is known without asking: always record and sample, the
        # attributes as given, the parent's trace state (the SDK's default ParentBased(ALWAYS_ON)
        # under a sampled local parent, or ALWAYS_ON).
        self.sampled = (
            trace_api.TraceFlags(trace_api.TraceFlags.SAMPLED | self.random) if _always_on(tracer, parent) else None
        )
        self.unset = trace_api.Status(trace_api.StatusCode.UNSET)

    def emit(
        self,
        name: str,
        kind: Any,
        attributes: dict[str, Any],
        start: int,
        events: Sequence[tuple[str, dict[str, Any], int]] = (),
        status: Any = None,
    ) -> bool:
        """Hand over the finished span; False (nothing done) when the tracer must make it."""
        if len(attributes) > _MIN_LIMIT or not _clean(attributes) or self.multi._span_processors is not self.processors:
            return False  # (a processor added since the run started has not been checked)
        if events and (len(events) > _MIN_LIMIT or any(len(a) > _MIN_LIMIT or not _clean(a) for _, a, _ in events)):
            return False
        trace_api, tracer, parent = self.trace_api, self.tracer, self.parent
        flags, trace_state = self.sampled, parent.trace_state
        if flags is None:
            sampled = tracer.sampler.should_sample(self.parent_ctx, parent.trace_id, name, kind, attributes, ())
            if not sampled.decision.is_recording():
                return True  # the tracer would make a non-recording span: nothing reaches a processor
            flags = trace_api.TraceFlags.SAMPLED if sampled.decision.is_sampled() else trace_api.TraceFlags.DEFAULT
            flags, trace_state = trace_api.TraceFlags(flags | self.random), sampled.trace_state
            attributes = dict(sampled.attributes)
        context = trace_api.SpanContext(
            parent.trace_id, tracer.id_generator.generate_span_id(), False, flags, trace_state
        )
        sdk = self.sdk
        span = sdk.ReadableSpan(
            name=name,
            context=context,
            parent=parent,
            resource=tracer.resource,
            attributes=attributes,
            events=tuple(sdk.Event(n, a, t) for n, a, t in events) if events else (),
            kind=kind,
            status=status if status is not None else self.unset,
            start_time=start,
            end_time=time_ns(),
            instrumentation_info=tracer.instrumentation_info,
            instrumentation_scope=tracer._instrumentation_scope,
        )
        for processor in self.processors:
            processor.on_end(span)
        return True


def _clean(attributes: dict[str, Any]) -> bool:
    """Every value is what the SDK would keep as it is (so skipping its checks changes nothing)."""
    for value in attributes.values():
        if type(value) in _CLEAN:
            continue
        if type(value) is tuple and all(type(v) is str for v in value):
            continue
        return False
    return True


def _always_on(tracer: Any, parent: Any) -> bool:
    """The tracer's sampler records and samples every child of ``parent`` as it is."""
    from opentelemetry.sdk.trace import sampling

    sampler = tracer.sampler
    if type(sampler) is sampling.ParentBased and not parent.is_remote and parent.trace_flags.sampled:
        sampler = sampler._local_parent_sampled
    return type(sampler) is sampling.StaticSampler and sampler._decision is sampling.Decision.RECORD_AND_SAMPLE


def direct_sink(tracer: Any, parent_ctx: Any) -> Sink | None:
    """A :class:`Sink` for ``tracer``'s spans under the span in ``parent_ctx`` when they may be
    handed over finished, else None."""
    try:
        from opentelemetry import trace as trace_api
        from opentelemetry.sdk import trace as sdk
        from opentelemetry.sdk.trace import SpanProcessor
        from opentelemetry.sdk.trace._tracer_metrics import NoOpTracerMetrics
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError:
        return None
    try:
        if type(tracer) is not sdk.Tracer or not tracer._is_enabled():
            return None
        if type(tracer._tracer_metrics) is not NoOpTracerMetrics:
            return None
        multi = tracer.span_processor
        if type(multi) is not sdk.SynchronousMultiSpanProcessor:
            return None
        quiet = {SpanProcessor.on_start, BatchSpanProcessor.on_start, SimpleSpanProcessor.on_start}
        ending = {getattr(c, "_on_ending", None) for c in (SpanProcessor, BatchSpanProcessor, SimpleSpanProcessor)}
        for processor in multi._span_processors:
            if type(processor).on_start not in quiet or getattr(type(processor), "_on_ending", None) not in ending:
                return None
        limits = tracer._span_limits
        if limits.max_attribute_length is not None or limits.max_span_attribute_length is not None:
            return None
        if min(limits.max_span_attributes, limits.max_events, limits.max_event_attributes) < _MIN_LIMIT:
            return None
        parent = trace_api.get_current_span(parent_ctx).get_span_context()
        if parent is None or not parent.is_valid:
            return None  # the tracer makes a root span's trace
        return Sink(tracer, parent_ctx, parent, sdk, trace_api)
    except (AttributeError, TypeError):
        return None
