"""Everything agentnb writes reads back to an equal value (issue 39 item 1).

Generated runs, built from the events' own type hints (so a new event or field is covered the
day it is added): every event kind, usage with and without a cost (floats, 0.0, None), images,
tool calls with arbitrary JSON arguments, unicode, nested sub-agent events and approvals. Each
run round-trips through ``save`` / ``load_transcript`` and through an evaluation log line.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import types
import typing
from datetime import timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentnb import Label, RunResult, load_transcript
from agentnb.evaluation.log import EvalLog, load_transcript_at
from agentnb.events import EVENT_TYPES, SubAgentEvent, event_from_dict, event_to_dict
from agentnb.messages import AssistantMessage, Image, SystemMessage, ToolCall, ToolMessage, Usage, UserMessage

texts = st.text(max_size=12)  # any unicode but lone surrogates (those are escaped on write)
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(texts, json_values, max_size=4)
usages = st.builds(Usage, st.integers(0, 10**9), st.integers(0, 10**9), st.none() | finite.map(abs))
images = st.builds(Image, st.binary(max_size=24), st.sampled_from(["image/png", "image/jpeg", "text/plain"]))
tool_calls = st.builds(ToolCall, texts, texts, st.none() | json_objects, st.none() | texts, st.none() | texts)


def _for_hint(hint: Any, depth: int) -> st.SearchStrategy[Any]:
    """A strategy for values of the declared type ``hint`` of an event field."""
    known = {str: texts, int: st.integers(-(2**31), 2**31), float: finite, bool: st.booleans()}
    if hint in known:
        return known[hint]
    if hint is Usage:
        return usages
    if hint is Image:
        return images
    if hint is ToolCall:
        return tool_calls
    if hint is Any:
        return json_values
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is dict or hint is dict:
        return json_objects
    if origin is tuple:
        if not args or (len(args) == 2 and args[1] is Ellipsis):
            return st.lists(_for_hint(args[0] if args else str, depth), max_size=3).map(tuple)
        return st.tuples(*(_for_hint(a, depth) for a in args))
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(st.none() if a is type(None) else _for_hint(a, depth) for a in args))
    if (isinstance(hint, type) and hint.__name__ == "Event") or hint is typing.ForwardRef("Event"):
        return _events(depth + 1)
    raise NotImplementedError(f"no strategy for {hint!r}: add one, so that the field is covered")


def _event_of(cls: type, depth: int) -> st.SearchStrategy[Any]:
    module = sys.modules[cls.__module__]
    hints = typing.get_type_hints(cls, globalns={**vars(typing), **vars(module)})
    fields = {}
    for f in dataclasses.fields(cls):
        if f.name == "kind":
            continue
        if cls is SubAgentEvent and f.name == "event":
            fields[f.name] = _events(depth + 1) if depth < 2 else _event_of(EVENT_TYPES["text_delta"], depth + 1)
        else:
            fields[f.name] = _for_hint(hints[f.name], depth)
    return st.builds(cls, **fields)


def _events(depth: int = 0) -> st.SearchStrategy[Any]:
    kinds = sorted(EVENT_TYPES)
    return st.sampled_from(kinds).flatmap(lambda k: _event_of(EVENT_TYPES[k], depth))


messages = st.one_of(
    st.builds(SystemMessage, texts),
    st.builds(
        UserMessage, texts, st.lists(images.filter(lambda i: i.mime.startswith("image/")), max_size=1).map(tuple)
    ),
    st.builds(AssistantMessage, st.none() | texts, st.lists(tool_calls, max_size=2).map(tuple)),
    st.builds(ToolMessage, texts, texts, texts, st.booleans()),
)
labels = (
    st.tuples(
        st.none() | st.booleans(),
        st.none() | texts,
        st.none() | texts,
        st.datetimes(timezones=st.just(timezone.utc)).map(lambda t: t.isoformat(timespec="milliseconds")),
    )
    .filter(lambda said: said[:3] != (None, None, None))
    .map(lambda fields: Label(*fields))
)
runs = st.builds(
    RunResult,
    output=texts,
    messages=st.lists(messages, max_size=4).map(tuple),
    events=st.lists(_events(), max_size=8).map(tuple),
    usage=usages,
    stop_reason=st.sampled_from(["answer", "direct_output", "limit", "cancelled", "error", "invalid_output"]),
    tool_calls=st.integers(0, 100),
    duration=finite.map(abs),
    error=st.none() | texts,
    partial_output=texts,
    labels=st.lists(labels, max_size=3).map(lambda ls: tuple(sorted(ls, key=lambda label: label.at))),
)

_SETTINGS = dict(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def _same(a: RunResult, b: RunResult) -> None:
    assert b.events == a.events
    assert b.messages == a.messages
    assert (b.output, b.usage, b.stop_reason, b.tool_calls, b.error, b.partial_output) == (
        a.output,
        a.usage,
        a.stop_reason,
        a.tool_calls,
        a.error,
        a.partial_output,
    )
    assert b.duration == a.duration
    assert b.labels == a.labels


@settings(**_SETTINGS)
@given(runs)
def test_a_saved_run_loads_back_equal(tmp_path_factory: Any, run: RunResult) -> None:
    path = Path(tmp_path_factory.mktemp("rt")) / "run.json"
    run.save(path)
    _same(run, load_transcript(path))
    _same(run, RunResult.from_dict(run.to_dict()))


@settings(**_SETTINGS)
@given(st.lists(runs, min_size=1, max_size=3))
def test_runs_in_an_evaluation_log_load_back_equal(tmp_path_factory: Any, batch: list[RunResult]) -> None:
    path = Path(tmp_path_factory.mktemp("log")) / "runs.jsonl"
    with EvalLog(path) as log:
        offsets = [log.append({"key": str(i), "output": r.output}, r.to_dict()) for i, r in enumerate(batch)]
    for run, at in zip(batch, offsets, strict=True):
        _same(run, RunResult.from_dict(load_transcript_at(path, at)))


@pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_event_kind_round_trips_through_json(kind: str, data: st.DataObject) -> None:
    """Each kind on its own, so a kind the mixed runs draw rarely is still covered."""
    event = data.draw(_event_of(EVENT_TYPES[kind], 0))
    assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event
