"""Handoffs: the conversation passes to another agent, whose answer ends the run."""

from __future__ import annotations

import io
import os
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentnb import Agent, TextPrinter, UsageLimits, UserError, handoff, load_transcript, tool
from agentnb.events import SubAgentEvent
from agentnb.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from agentnb.testing import ScriptedProvider, call
from agentnb.tracing.otel import SpanWatcher


@tool
def order_status(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refund for {order} sent"


def billing_and_triage(triage_replies: list[Any], **options: Any) -> tuple[Agent, Agent]:
    billing = Agent(
        ScriptedProvider([call("refund", order="A1"), "Refunded A1: the money is on its way."]),
        tools=[refund],
        system="You are the billing agent.",
        name="billing",
    )
    triage = Agent(
        ScriptedProvider(triage_replies),
        tools=[order_status, handoff(billing)],
        system="You are the triage agent.",
        name="triage",
        **options,
    )
    return triage, billing


def test_the_other_agent_takes_the_conversation_on_and_answers() -> None:
    triage, billing = billing_and_triage([call("order_status", order="A1"), call("transfer_to_billing")])
    r = triage.run("Refund my order A1")
    assert r.output == "Refunded A1: the money is on its way." and r.stop_reason == "direct_output"
    seen = billing.provider.requests[0].messages  # type: ignore[attr-defined]
    # its own system prompt, not the caller's; the whole conversation; the handoff call answered
    assert seen[0] == SystemMessage("You are the billing agent.")
    assert not any(m.content == "You are the triage agent." for m in seen)
    assert isinstance(seen[1], UserMessage) and seen[1].content == "Refund my order A1"
    assert any(isinstance(m, ToolMessage) and m.content == "order A1: shipped" for m in seen)
    assert isinstance(seen[-2], AssistantMessage) and seen[-2].tool_calls[0].name == "transfer_to_billing"
    assert isinstance(seen[-1], ToolMessage) and "Transferred to the billing agent" in seen[-1].content
    assert [t.name for t in billing.provider.requests[0].tools] == ["refund"]  # type: ignore[attr-defined]
    # the caller's transcript: the handoff call's result is the other agent's answer
    assert r.messages[-1] == ToolMessage(seen[-1].tool_call_id, "transfer_to_billing", r.output)


def test_the_handoff_shows_in_events_printer_and_transcript(tmp_path: Any) -> None:
    triage, _ = billing_and_triage([call("transfer_to_billing")])
    out = io.StringIO()
    r = triage.run("Refund my order A1", on_event=TextPrinter(out))
    kinds = [(e.kind, e.event.kind if isinstance(e, SubAgentEvent) else None) for e in r.events]
    started = kinds.index(("tool_started", None))
    assert kinds[started + 1] == ("sub_agent", "run_started")
    assert kinds.index(("sub_agent", "run_finished")) < kinds.index(("tool_finished", None))
    assert ("direct_output", None) in kinds
    inner = [e for e in r.events if isinstance(e, SubAgentEvent)]
    assert {e.agent for e in inner} == {"transfer_to_billing"} and inner[0].event.agent_name == "billing"
    assert "| billing: run started" in out.getvalue()
    path = os.path.join(tmp_path, "run.json")
    r.save(path)
    assert load_transcript(path).events == r.events


def test_the_span_tree_shows_the_other_agent_under_the_handoff_call() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    triage, _ = billing_and_triage([call("transfer_to_billing")], instrument=SpanWatcher(provider))
    triage.run("Refund my order A1")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    by_id = {s.context.span_id: s for s in exporter.get_finished_spans()}

    def parent(name: str) -> str:
        return by_id[spans[name].parent.span_id].name

    assert parent("execute_tool transfer_to_billing") == "invoke_agent triage"
    assert parent("invoke_agent billing") == "execute_tool transfer_to_billing"
    assert parent("execute_tool refund") == "invoke_agent billing"
    assert [e.name for e in spans["invoke_agent triage"].events] == ["agentnb.direct_output"]


def test_a_handoff_beside_other_calls_is_refused_then_made_alone() -> None:
    triage, billing = billing_and_triage(
        [[call("order_status", order="A1"), call("transfer_to_billing")], call("transfer_to_billing")]
    )
    r = triage.run("Refund my order A1")
    refused = [e for e in r.events if e.kind == "tool_finished" and e.name == "transfer_to_billing"]
    assert refused[0].error is not None and "only call of its turn" in refused[0].error
    assert refused[1].error is None and r.output == "Refunded A1: the money is on its way."
    assert len(billing.provider.requests) == 2  # type: ignore[attr-defined]  # it ran once, after the refusal


def test_the_other_agent_spends_the_callers_budgets() -> None:
    triage, billing = billing_and_triage([call("transfer_to_billing")], limits=UsageLimits(requests=3))
    r = triage.run("Refund my order A1")
    # triage made 1 request and keeps 1 (a caller always does), so billing has 1: its last, without tools
    assert len(billing.provider.requests) == 1 and billing.provider.requests[0].tools == ()  # type: ignore[attr-defined]
    assert r.stop_reason == "direct_output"


def test_a_session_goes_on_with_its_own_agent_after_a_handoff() -> None:
    triage, _ = billing_and_triage([call("transfer_to_billing"), "Anything else?"])
    session = triage.session()
    first = session.run("Refund my order A1")
    second = session.run("Thanks")
    assert first.output == "Refunded A1: the money is on its way." and second.output == "Anything else?"
    seen = triage.provider.requests[-1].messages  # type: ignore[attr-defined]
    assert any(isinstance(m, ToolMessage) and m.content == first.output for m in seen)


def test_handoff_needs_a_name() -> None:
    with pytest.raises(UserError, match="needs a name"):
        handoff(Agent(ScriptedProvider(["x"])))
    assert handoff(Agent(ScriptedProvider(["x"])), name="to_x").name == "to_x"
    with pytest.raises(UserError, match="must be 1-64"):
        handoff(Agent(ScriptedProvider(["x"]), name="bad name"))


def test_the_trace_widget_shows_the_other_agent_under_the_handoff_call() -> None:
    from agentnb.notebook.trace.render import depth_html
    from agentnb.notebook.trace.widget import TraceWidget

    triage, _ = billing_and_triage([call("transfer_to_billing")])
    w = TraceWidget()
    triage.run("Refund my order A1", on_event=w)
    html = "".join(depth_html(v) for _, v in sorted(w.state.depths.items()))
    assert html.count('class="anb-sub"') == 1 and "agent <code>billing</code>" in html
    assert "Tool call <code>refund</code>" in html
    handed = w.state.depths[0].calls["call_1"]
    assert handed.inner.answer == "Refunded A1: the money is on its way."
