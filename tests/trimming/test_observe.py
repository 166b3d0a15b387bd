"""Observable trimming: a DEBUG line per call, listeners, OpenTelemetry spans and counters, and
no work at all while nobody watches."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ctxtrim import (
    AutoCompactStore,
    ClearToolResults,
    FitContextWindow,
    KeepLastMessages,
    MemoryContextStore,
    Message,
    Pipeline,
    TrimReport,
    TruncateToolOutputs,
    observe,
)
from ctxtrim.transports import ExtractiveTransport

from helpers import agent_session

SECRET = "the launch code is 0000"


def history(rounds: int = 40) -> list[Message]:
    out = [Message.system("You are terse."), Message.user(f"Find the bug. {SECRET}")]
    for i in range(rounds):
        out.append(Message.assistant(f"step {i} {SECRET}", tool_uses=[(f"t{i}", "grep", {})]))
        out.append(Message.tool_results((f"t{i}", f"match {SECRET} " * 20)))
    return out


@pytest.fixture
def unwatched(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Nobody watches, and a watched run would fail the test."""
    assert not observe.state.watching

    def refuse(call: Any) -> Any:
        raise AssertionError("an unwatched call ran the watched path")

    monkeypatch.setattr(observe, "watched", refuse)
    yield


def test_unwatched_calls_take_the_plain_path(unwatched: None) -> None:
    h = history()
    for strategy in (FitContextWindow(500), KeepLastMessages(4), TruncateToolOutputs(20)):
        strategy(h)
        strategy.apply(h)
        strategy.apply(h, report=True)
    Pipeline(TruncateToolOutputs(20), FitContextWindow(500))(h)


def test_a_debug_logger_gets_one_line_per_call_with_numbers_and_no_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = history()
    strategy = Pipeline(TruncateToolOutputs(20), FitContextWindow(500))
    with caplog.at_level(logging.DEBUG, logger="ctxtrim.trim"):
        assert observe.state.watching
        out = strategy(h)
    assert not observe.state.watching  # the level restored: unwatched again
    (record,) = caplog.records  # the pipeline is one call, not one per step
    report = strategy.describe(h)
    assert out == strategy(h)
    text = record.getMessage()
    assert record.levelno == logging.DEBUG and record.name == "ctxtrim.trim"
    assert text.startswith(f"{report.strategy}: {len(h)} -> {len(out)} messages, ")
    assert f"~{report.tokens_before} -> ~{report.tokens_after} tokens" in text
    assert f"dropped {report.dropped_messages} messages, {report.dropped_turns} turns" in text
    assert "budget 500" in text and text.endswith(" us")
    assert SECRET not in caplog.text and "launch" not in caplog.text


def test_logging_disable_and_a_parent_level_turn_watching_off_and_on() -> None:
    parent = logging.getLogger("ctxtrim")
    old = parent.level
    try:
        parent.setLevel(logging.DEBUG)  # the parent's level reaches ctxtrim.trim
        assert observe.state.watching
        logging.disable(logging.DEBUG)
        assert not observe.state.watching
        logging.disable(logging.NOTSET)
        assert observe.state.watching
    finally:
        parent.setLevel(old)
    assert not observe.state.watching


def test_listeners_get_each_call_with_its_report_and_timing_until_removed() -> None:
    events: list[Any] = []
    remove = observe.add_listener(events.append)
    try:
        h = history()
        strategy = FitContextWindow(400)
        out, report = strategy.apply(h, report=True)
        assert strategy(h) == out
        payload = [m.to_dict() for m in h]
        strategy(payload, format="ctxtrim")  # provider dicts: counted as the payload's entries
    finally:
        remove()
    assert [type(e) for e in events] == [observe.TrimEvent] * 3
    assert events[0].report == report == strategy.describe(h) == events[1].report
    assert isinstance(events[2].report, TrimReport) and events[2].report.messages_before == len(h)
    assert all(e.duration_ns > 0 and e.start_ns > 1_600_000_000 * 10**9 for e in events)
    strategy(h)
    assert len(events) == 3 and not observe.state.watching


def test_a_failing_listener_is_logged_and_the_trim_still_returns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: Any) -> None:
        raise RuntimeError("listener bug")

    remove = observe.add_listener(broken)
    try:
        h = history()
        assert ClearToolResults(100, keep=1)(h) == ClearToolResults(100, keep=1).apply(h)
    finally:
        remove()
    assert "a ctxtrim listener failed" in caplog.text and "listener bug" in caplog.text


async def test_compaction_attempts_reach_the_listeners() -> None:
    events: list[Any] = []
    remove = observe.add_listener(events.append)
    try:
        store = AutoCompactStore(MemoryContextStore(agent_session(12)), ExtractiveTransport())
        event = await store.compact()
    finally:
        remove()
    assert event.kind == "compacted" and events == [event]


@pytest.fixture
def otel() -> Iterator[tuple[Any, Any]]:
    sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ctxtrim.integrations.opentelemetry import instrument

    spans = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    stop = instrument(
        tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader])
    )
    try:
        yield spans, reader
    finally:
        stop()
    assert not observe.state.watching


def metric_points(reader: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                out[metric.name] = list(metric.data.data_points)
    return out


async def test_opentelemetry_gets_a_span_per_call_and_counters(otel: tuple[Any, Any]) -> None:
    spans, reader = otel
    h = history()
    strategy = FitContextWindow(400)
    report = strategy.describe(h)
    strategy(h)
    KeepLastMessages(10**6)(h)  # nothing dropped: counted as a call
    store = AutoCompactStore(MemoryContextStore(agent_session(12)), ExtractiveTransport())
    await store.compact()

    trim, keep, compaction = spans.get_finished_spans()
    assert (trim.name, keep.name, compaction.name) == ("ctxtrim.trim",) * 2 + (
        "ctxtrim.compaction",
    )
    assert trim.attributes["ctxtrim.strategy"] == "FitContextWindow(400)"
    assert trim.attributes["ctxtrim.messages_before"] == len(h)
    assert trim.attributes["ctxtrim.messages_after"] == report.messages_after
    assert trim.attributes["ctxtrim.tokens_after"] == report.tokens_after
    assert trim.attributes["ctxtrim.budget"] == 400 and trim.end_time > trim.start_time
    assert compaction.attributes["ctxtrim.kind"] == "compacted"
    for span in (trim, keep, compaction):
        assert not any(SECRET in str(v) for v in span.attributes.values())

    points = metric_points(reader)
    by_strategy = {p.attributes["ctxtrim.strategy"]: p.value for p in points["ctxtrim.trim.calls"]}
    assert by_strategy == {"FitContextWindow": 1, "KeepLastMessages": 1}
    dropped = {
        p.attributes["ctxtrim.strategy"]: p.value for p in points["ctxtrim.trim.dropped_messages"]
    }
    assert dropped == {"FitContextWindow": report.dropped_messages, "KeepLastMessages": 0}
    assert [(p.attributes["ctxtrim.kind"], p.value) for p in points["ctxtrim.compactions"]] == [
        ("compacted", 1)
    ]


def test_a_process_without_logging_makes_the_logger_on_its_first_trim() -> None:
    """``import ctxtrim`` does not import logging; the first trim makes and hooks the
    ``ctxtrim.trim`` logger, and from then on the flag follows the logging configuration
    (a level set later, a listener) exactly as when logging was loaded first."""
    code = """
import sys
from ctxtrim import FitContextWindow, Message, observe
h = [Message.system("s"), Message.user("task")] + [Message.assistant(f"r{i}") for i in range(9)]
print("logging" in sys.modules, observe.state.watching)   # not yet known: the safe answer
FitContextWindow(8)(h)
print("logging" in sys.modules, observe.state.watching)
import logging
logging.basicConfig(stream=sys.stdout, format="%(name)s %(message)s")
logging.getLogger("ctxtrim").setLevel(logging.DEBUG)
print(observe.state.watching)
FitContextWindow(8)(h)
logging.getLogger("ctxtrim").setLevel(logging.WARNING)
print(observe.state.watching, observe.logger is logging.getLogger("ctxtrim.trim"))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()
    assert out[:3] == ["False True", "True False", "True"]
    assert out[3].startswith("ctxtrim.trim FitContextWindow(8): 11 -> ")
    assert out[4:] == ["False True"]
