"""Trigger specs: tokens, messages, turns and a fraction of the model's window, combined with
any (a list) or all (a dict), on ClearToolResults, ClearThinking and AutoCompactStore."""

from __future__ import annotations

from typing import Any

import pytest

from ctxtrim import (
    AutoCompactStore,
    ClearThinking,
    ClearToolResults,
    CompactionEvent,
    CompactionSettingsError,
    InvalidStrategy,
    MemoryContextStore,
    Message,
    MessageLog,
    UnknownModel,
    models,
)
from ctxtrim.transports import ExtractiveTransport
from ctxtrim.triggers import Trigger

from helpers import agent_session


def test_parse_and_fire() -> None:
    t = Trigger.parse({"tokens": 100, "messages": 10}, window=None, error=ValueError)
    assert t.fired(tokens=100, messages=10) and not t.fired(tokens=100, messages=9)
    t = Trigger.parse([("tokens", 100), {"turns": 3}], window=None, error=ValueError)
    assert t.fired(tokens=100) and t.fired(tokens=0, turns=3) and not t.fired(tokens=99, turns=2)
    t = Trigger.parse({"fraction": 0.8}, window=1_000, error=ValueError)
    assert t.any_of == ((("tokens", 800),),) and t.min_tokens == 800


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"fraction": 0.8}, "a fraction needs the model's context window"),
        ({"fraction": 1.5}, r"fraction must be a number in \(0, 1\]"),
        ({"bytes": 10}, "unknown kind 'bytes'"),
        ({"messages": -1}, "messages must be an int >= 0"),
        ({"turns": 2.5}, "turns must be an int >= 0"),
        ({}, "an empty dict never fires"),
        ([], "an empty list never fires"),
        (("tokens", 1, 2), r"a condition pair is \(kind, value\)"),
        ("80%", "trigger must be a dict of conditions"),
    ],
)
def test_bad_specs_name_the_problem(spec: Any, match: str) -> None:
    with pytest.raises(InvalidStrategy, match=match):
        ClearToolResults(spec)
    if spec == {"fraction": 0.8}:  # AutoCompactStore always knows its window (max_tokens)
        store = AutoCompactStore(MemoryContextStore(), ExtractiveTransport(), trigger=spec)
        assert store.trigger_tokens == int(128_000 * 0.8)
        return
    with pytest.raises(CompactionSettingsError, match=match):
        AutoCompactStore(MemoryContextStore(), ExtractiveTransport(), trigger=spec)


def test_clear_tool_results_by_fraction_of_a_models_window() -> None:
    history = agent_session(10)
    total = MessageLog(history).total_tokens
    models.register("tiny-window", context_window=total * 2)
    try:
        under = ClearToolResults({"fraction": 0.6}, keep=1, model="tiny-window")
        over = ClearToolResults({"fraction": 0.4}, keep=1, model="tiny-window")
        assert under(history) is history
        assert over(history) is not history
        assert over(history) == ClearToolResults(0, keep=1)(history)
    finally:
        models.unregister("tiny-window")
    same = ClearToolResults(("fraction", 0.4), keep=1, context_window=total * 2)
    assert same(history) == ClearToolResults(0, keep=1)(history)
    with pytest.raises(UnknownModel):
        ClearToolResults({"fraction": 0.5}, model="no-such-model")


def test_clear_tool_results_by_messages_turns_any_and_all() -> None:
    history = agent_session(10)  # 23 messages, 1 user turn
    n = len(history)
    assert ClearToolResults({"messages": n + 1}, keep=1)(history) is history
    assert ClearToolResults({"messages": n}, keep=1)(history) is not history
    assert ClearToolResults({"turns": 2}, keep=1)(history) is history
    # all: both must hold; any: one is enough
    assert ClearToolResults({"messages": n, "turns": 2}, keep=1)(history) is history
    assert ClearToolResults([{"turns": 2}, ("messages", n)], keep=1)(history) is not history
    # the int form is unchanged: act when over that many tokens
    total = MessageLog(history).total_tokens
    assert ClearToolResults(total, keep=1)(history) is history
    assert ClearToolResults(total - 1, keep=1)(history) is not history


def test_clear_thinking_takes_a_spec_too() -> None:
    from ctxtrim import ReasoningBlock, TextBlock

    history = [Message.user("q")]
    for i in range(4):
        history += [
            Message.assistant([ReasoningBlock(f"thought {i}"), TextBlock(f"a{i}")]),
            Message.user(f"q{i}"),
        ]
    assert ClearThinking(keep=1, trigger={"turns": 6})(history) is history
    assert ClearThinking(keep=1, trigger={"turns": 5})(history) is not history


async def test_auto_compact_store_by_messages() -> None:
    seen: list[CompactionEvent] = []
    store = AutoCompactStore(
        MemoryContextStore(agent_session(3)),
        ExtractiveTransport(),
        keep_recent=4,
        max_tokens=10**9,  # tokens alone would never trigger
        trigger={"messages": 12},
        on_event=seen.append,
    )
    assert store.trigger_tokens == int(10**9 * 0.75)
    history = await store.get_history()
    while len(history) < 11:
        await store.append(Message.user("more"))
        history = await store.get_history()
    assert seen == []
    await store.append(Message.user("one more"))  # the 12th message
    assert [e.kind for e in seen] == ["compacted"]
    assert len(await store.get_history()) < 12
    fork = await store.fork()
    assert fork.trigger == {"messages": 12}


async def test_auto_compact_store_by_fraction_and_turns() -> None:
    seen: list[CompactionEvent] = []
    store = AutoCompactStore(
        MemoryContextStore(agent_session(6)),
        ExtractiveTransport(),
        keep_recent=2,
        max_tokens=100_000,
        trigger=[{"fraction": 0.5}, {"turns": 3}],
        on_event=seen.append,
    )
    assert store.trigger_tokens == 50_000
    await store.append(Message.user("second question"))
    assert seen == []
    await store.append(Message.assistant("answer"))
    await store.append(Message.user("third question"))  # the third user turn
    assert [e.kind for e in seen] == ["compacted"]
