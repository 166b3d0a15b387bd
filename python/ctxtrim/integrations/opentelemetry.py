"""Trimming and compaction reported to OpenTelemetry: a span per call, and counters.

``instrument()`` adds a :mod:`ctxtrim.observe` listener; until it is called nothing of
OpenTelemetry is imported and trimming costs what it did (one flag test). Each strategy call
becomes a span ``ctxtrim.trim`` (its true start and duration; attributes: the strategy,
messages and tokens before and after, dropped and changed messages, the budget and whether
it was over) and each compaction attempt a span ``ctxtrim.compaction`` (its kind, reason,
messages and tokens before and after, the session). The metrics:

=================================  ==========  ===================================================
``ctxtrim.trim.calls``             counter     strategy calls (attribute ``ctxtrim.strategy``: the
                                               strategy's class, so the series stay few)
``ctxtrim.trim.dropped_messages``  counter     messages dropped by them
``ctxtrim.trim.dropped_tokens``    counter     estimated tokens dropped or saved by them
``ctxtrim.trim.over_budget``       counter     calls whose minimum window was over budget
``ctxtrim.trim.tokens_after``      histogram   the estimated tokens of each call's result
``ctxtrim.compactions``            counter     compaction attempts (attribute ``ctxtrim.kind``)
=================================  ==========  ===================================================

Spans and metrics carry numbers and names, never message content.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ctxtrim import __version__
from ctxtrim import observe as _observe
from ctxtrim.compaction import CompactionEvent

__all__ = ["instrument"]


def instrument(*, tracer_provider: Any = None, meter_provider: Any = None) -> Callable[[], None]:
    """Report every strategy call and compaction attempt to OpenTelemetry (the global
    providers unless given); returns the function that stops it."""
    from opentelemetry import metrics, trace

    tracer = trace.get_tracer("ctxtrim", __version__, tracer_provider=tracer_provider)
    meter = metrics.get_meter("ctxtrim", __version__, meter_provider=meter_provider)
    calls = meter.create_counter("ctxtrim.trim.calls", "{call}", "strategy calls")
    dropped = meter.create_counter(
        "ctxtrim.trim.dropped_messages", "{message}", "messages dropped by strategy calls"
    )
    saved = meter.create_counter(
        "ctxtrim.trim.dropped_tokens", "{token}", "estimated tokens strategy calls took off"
    )
    over = meter.create_counter(
        "ctxtrim.trim.over_budget", "{call}", "strategy calls whose minimum window was over budget"
    )
    tokens_after = meter.create_histogram(
        "ctxtrim.trim.tokens_after", "{token}", "estimated tokens of each call's result"
    )
    compactions = meter.create_counter(
        "ctxtrim.compactions", "{attempt}", "compaction attempts, by kind"
    )

    def trimmed(event: _observe.TrimEvent) -> None:
        r = event.report
        span = tracer.start_span(
            "ctxtrim.trim",
            start_time=event.start_ns,
            attributes={
                "ctxtrim.strategy": r.strategy,
                "ctxtrim.messages_before": r.messages_before,
                "ctxtrim.messages_after": r.messages_after,
                "ctxtrim.tokens_before": r.tokens_before,
                "ctxtrim.tokens_after": r.tokens_after,
                "ctxtrim.dropped_messages": r.dropped_messages,
                "ctxtrim.changed_messages": r.changed_messages,
                "ctxtrim.over_budget": r.over_budget,
                **({} if r.budget is None else {"ctxtrim.budget": r.budget}),
            },
        )
        span.end(end_time=event.start_ns + event.duration_ns)
        labels = {"ctxtrim.strategy": r.strategy.partition("(")[0]}
        calls.add(1, labels)
        dropped.add(r.dropped_messages, labels)
        saved.add(max(r.tokens_before - r.tokens_after, 0), labels)
        tokens_after.record(r.tokens_after, labels)
        if r.over_budget:
            over.add(1, labels)

    def compacted(event: CompactionEvent) -> None:
        span = tracer.start_span(
            "ctxtrim.compaction",
            attributes={
                "ctxtrim.kind": event.kind,
                "ctxtrim.reason": event.reason,
                "ctxtrim.session_id": event.session_id,
                "ctxtrim.messages_before": event.messages_before,
                "ctxtrim.messages_after": event.messages_after,
                "ctxtrim.tokens_before": event.tokens_before,
                "ctxtrim.tokens_after": event.tokens_after,
                "ctxtrim.summarised": event.summarised,
            },
        )
        span.end()
        compactions.add(1, {"ctxtrim.kind": event.kind})

    def listen(event: _observe.TrimEvent | CompactionEvent) -> None:
        if isinstance(event, CompactionEvent):
            compacted(event)
        else:
            trimmed(event)

    return _observe.add_listener(listen)
