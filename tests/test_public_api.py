"""The public surface is deliberate, light to import, and its docstring examples run."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

import agentnb

EXPECTED_ALL = [
    "DEFAULT_MAX_TOOL_CALLS",
    "Agent",
    "AgentnbError",
    "Approve",
    "AssistantMessage",
    "AuthenticationError",
    "CassetteError",
    "CassetteMiss",
    "Compaction",
    "ContextOverflow",
    "Deny",
    "Edit",
    "Evaluation",
    "Image",
    "Improvement",
    "Inbox",
    "InboxClosedError",
    "Label",
    "MissingDependencyError",
    "ModelBehaviorError",
    "ModelNotFoundError",
    "Provider",
    "ProviderError",
    "RateLimitError",
    "ReplayMismatch",
    "RunDiff",
    "RunResult",
    "ServerError",
    "Session",
    "StepController",
    "StopRun",
    "SystemMessage",
    "TextPrinter",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDecision",
    "ToolDefinitionError",
    "ToolExample",
    "ToolMessage",
    "UnTooled",
    "Usage",
    "UsageLimits",
    "UserError",
    "UserMessage",
    "aevaluate",
    "aimprove",
    "cassette",
    "diff",
    "evaluate",
    "get_provider",
    "handoff",
    "improve",
    "instrument",
    "keep_runs",
    "kernel_tools",
    "load_transcript",
    "replay",
    "runs",
    "tool",
    "uninstrument",
]

CORE_MODULES = [
    "agentnb",
    "agentnb.run.agent",
    "agentnb.control.approval",
    "agentnb.control.inbox",
    "agentnb.kernel.sandbox.copying",
    "agentnb.kernel.sandbox.results",
    "agentnb.kernel.sandbox.toolset",
    "agentnb.messages.codec",
    "agentnb.control.cost",
    "agentnb.control.limits",
    "agentnb.tools.dedupe",
    "agentnb.errors",
    "agentnb.evaluation",
    "agentnb.evaluation.cases",
    "agentnb.evaluation.log",
    "agentnb.evaluation.progress",
    "agentnb.evaluation.results",
    "agentnb.evaluation.run",
    "agentnb.evaluation.scorers",
    "agentnb.evaluation.stats",
    "agentnb.improvement",
    "agentnb.improvement.events",
    "agentnb.improvement.pareto",
    "agentnb.improvement.reflect",
    "agentnb.improvement.result",
    "agentnb.improvement.run",
    "agentnb.improvement.texts",
    "agentnb.improvement.views",
    "agentnb.events",
    "agentnb.messages.fastinit",
    "agentnb.run.history",
    "agentnb.messages.jsonsafe",
    "agentnb.run.loop",
    "agentnb.messages",
    "agentnb.messages.types",
    "agentnb.output",
    "agentnb.output.structured",
    "agentnb.cost",
    "agentnb.dedupe",
    "agentnb.printer",
    "agentnb.tools.rendering",
    "agentnb.providers",
    "agentnb.providers.base",
    "agentnb.providers.sdk_client",
    "agentnb.providers.guidance",
    "agentnb.providers.guidance.constraint",
    "agentnb.providers.openai",
    "agentnb.providers.openai.chat",
    "agentnb.providers.openai.responses",
    "agentnb.providers.guidance.steer",
    "agentnb.providers.guidance.partial_json",
    "agentnb.run.result",
    "agentnb.tools.schema",
    "agentnb.tools.schema_values",
    "agentnb.testing",
    "agentnb.testing.server",
    "agentnb.providers.openai.route",
    "agentnb.providers.openai.route_state",
    "agentnb.providers.untooled.envelope",
    "agentnb.providers.untooled.layer",
    "agentnb.providers.untooled.prompt",
    "agentnb.providers.openai.steer",
    "agentnb.providers.openai.decide",
    "agentnb.providers.openai.logprobs",
    "agentnb.providers.guidance.byteguide",
    "agentnb.providers.openai.templates",
    "agentnb.providers.openai.text_calls",
    "agentnb.providers.openai.stream",
    "agentnb.providers.openai.ignored",
    "agentnb.providers.openai.errors",
    "agentnb.providers.openai.failures",
    "agentnb.tools.running",
    "agentnb.tools",
    "agentnb.tools.definition",
    "agentnb.run.transcript",
    "agentnb.run.labels",
    "agentnb.tools.validate",
    "agentnb.tracing.observe",
    "agentnb.run.session",
    "agentnb.run.agent_tool",
    "agentnb.run.nested",
    "agentnb.tracing",
    "agentnb.tracing.redact",
    "agentnb.tracing.pieces",
    "agentnb.tracing.otel",
    "agentnb.timetravel.canonical",
    "agentnb.timetravel.cassette",
    "agentnb.timetravel.diff",
    "agentnb.timetravel.diff_view",
    "agentnb.timetravel.drafts",
    "agentnb.timetravel.entries",
    "agentnb.timetravel.fork",
    "agentnb.timetravel.mismatch",
    "agentnb.timetravel.recording",
    "agentnb.timetravel.replay",
    "agentnb.kernel",
    "agentnb.kernel.arrays",
    "agentnb.kernel.bounded",
    "agentnb.kernel.describe",
    "agentnb.kernel.frames",
    "agentnb.kernel.history",
    "agentnb.kernel.mentions",
    "agentnb.kernel.names",
    "agentnb.kernel.summary",
    "agentnb.kernel.tools",
    "agentnb.runstore",
    "agentnb.runstore.schema",
    "agentnb.runstore.record",
    "agentnb.runstore.store",
    "agentnb.runstore.query",
    "agentnb.runstore.view",
]


def test_all_is_pinned() -> None:
    assert agentnb.__all__ == EXPECTED_ALL
    for name in agentnb.__all__:
        assert hasattr(agentnb, name), name


def test_import_stays_light() -> None:
    code = (
        "import sys, agentnb, agentnb.testing, agentnb.providers;"
        "heavy = [m for m in ('torch', 'transformers', 'openai', 'ipywidgets', 'IPython', 'jsonschema', 'opentelemetry')"
        " if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", CORE_MODULES)
def test_docstring_examples_run(module: str) -> None:
    mod = importlib.import_module(module)
    failures, _ = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert failures == 0


def test_default_limit_has_one_name_and_one_value() -> None:
    import inspect

    assert agentnb.DEFAULT_MAX_TOOL_CALLS == 10
    assert inspect.signature(agentnb.Agent).parameters["max_tool_calls"].default == 10


def test_unknown_provider_spec_is_a_clear_user_error() -> None:
    with pytest.raises(agentnb.UserError, match="unknown provider spec 'gpt4'"):
        agentnb.Agent("gpt4")
    with pytest.raises(agentnb.UserError, match="names no model"):
        agentnb.get_provider("openai:")


def test_a_tool_can_be_defined_after_a_bare_import_pydantic() -> None:
    """``import pydantic`` alone leaves ``pydantic.fields`` unloaded; defining a tool must not trip on it."""
    code = (
        "import pydantic\n"
        "from agentnb import tool\n"
        "@tool\n"
        "def add(a: int, b: int = 2) -> int:\n"
        "    '''Add.'''\n"
        "    return a + b\n"
        "print(add(1))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"
