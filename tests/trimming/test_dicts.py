"""Provider dicts in, the same provider dicts out: strategies, validate, repair, describe."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ctxtrim
from ctxtrim import (
    ClearToolResults,
    ContextStrategy,
    FitContextWindow,
    FormatError,
    HeadAndTail,
    InvalidMessage,
    KeepLastMessages,
    KeepLastTurns,
    Message,
    TrimRounds,
)
from ctxtrim.formats import dump, load

from strategies import broken_histories, histories

FORMATS = ("openai", "responses", "anthropic", "ctxtrim")

STRATEGIES: list[Callable[[], ContextStrategy]] = [
    lambda: FitContextWindow(120),
    lambda: FitContextWindow(10**6),
    lambda: KeepLastMessages(3),
    lambda: KeepLastTurns(1),
    lambda: TrimRounds(2),
    lambda: HeadAndTail(1, 2),
    lambda: ClearToolResults(40, keep=1),
]


def payload_of(history: list[Message], fmt: str) -> Any:
    """``history`` as ``fmt``'s list (Anthropic: its message list when there is no system
    prompt, its body otherwise), or skip the example if the format cannot carry it."""
    try:
        data = dump(history, fmt)
    except InvalidMessage:
        assume(False)
    if fmt == "anthropic" and "system" not in data:
        return data["messages"]
    return data


def through_messages(strategy: ContextStrategy, data: Any, fmt: str) -> Any:
    """What a user got before dicts were taken: read, apply, write back."""
    out = dump(strategy(load(data, fmt)), fmt)
    if fmt == "anthropic" and isinstance(data, list):
        return out["messages"]
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(history=histories(max_rounds=6), fmt=st.sampled_from(FORMATS), which=st.integers(0, 6))
def test_a_strategy_given_provider_dicts_returns_them_trimmed_in_their_own_format(
    history: list[Message], fmt: str, which: int
) -> None:
    data = payload_of(history, fmt)
    original = copy.deepcopy(data)
    strategy = STRATEGIES[which]()
    out = strategy(data)
    assert data == original  # the caller's dicts are never changed
    # Read as detected (a plain role/content list reads as Chat whichever SDK wrote it).
    assert out == through_messages(STRATEGIES[which](), data, ctxtrim.formats.detect(data))
    assert type(out) is type(data)
    assert not ctxtrim.validate(out, format=fmt) or ctxtrim.validate(data, format=fmt)
    if strategy.describe(data).unchanged:
        assert out is data  # nothing to do: the caller's own object back
    if which != 5:  # HeadAndTail's placeholder is known by its meta, which dicts drop
        assert strategy(out) == out  # idempotent on dicts as on messages


def test_a_request_body_keeps_its_other_keys_and_their_order() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "a " * 400},
            {"role": "assistant", "content": "b " * 400},
            {"role": "user", "content": "and now?"},
        ],
        "temperature": 0,
    }
    out = FitContextWindow(60, pin_task=False)(body)
    assert list(out) == ["model", "messages", "temperature"]
    assert [m["content"] for m in out["messages"]] == ["be brief", "and now?"]
    assert FitContextWindow(10**6)(body) is body

    anthropic = {
        "model": "m",
        "system": "be brief",
        "messages": body["messages"][1:],
        "max_tokens": 9,
    }
    out = FitContextWindow(60, pin_task=False)(anthropic)
    assert list(out) == ["model", "system", "messages", "max_tokens"]
    assert out["system"] == "be brief" and out["messages"] == [
        {"role": "user", "content": "and now?"}
    ]

    responses = {
        "model": "m",
        "input": [{"role": "user", "content": "a " * 400}, {"role": "user", "content": "b"}],
    }
    out = KeepLastMessages(1, pin_task=False)(responses)
    assert out["input"] == [{"role": "user", "content": "b"}] and out["model"] == "m"


CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "first " * 100},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "a", "content": "1"},
    {"role": "tool", "tool_call_id": "b", "content": "2"},
    {"role": "user", "content": "next"},
    {"role": "assistant", "content": "done"},
]


def test_a_report_on_dicts_counts_the_payloads_entries() -> None:
    # The two tool messages are one ctxtrim message; the report names both entries.
    out, report = KeepLastMessages(2, pin_task=False).apply(CHAT, report=True)
    assert out == [CHAT[0], CHAT[5], CHAT[6]]
    assert report.dropped == (1, 2, 3, 4)
    assert (report.messages_before, report.messages_after) == (7, 3)
    assert report.dropped_messages == 4 and report.inserted == 0
    assert KeepLastMessages(2, pin_task=False).describe(CHAT) == report


def test_validate_and_repair_take_dicts_and_name_entries() -> None:
    broken: list[dict[str, Any]] = [
        *CHAT[:3],
        {"role": "tool", "tool_call_id": "zz", "content": "?"},
        *CHAT[3:],
    ]
    (violation,) = ctxtrim.validate(broken)
    assert (violation.kind, violation.index, violation.tool_use_id) == ("orphan_result", 3, "zz")
    assert violation.description.startswith("message 3:")
    assert ctxtrim.repair(broken) == CHAT
    assert ctxtrim.repair(CHAT) is CHAT
    assert ctxtrim.validate(CHAT) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(history=broken_histories(max_rounds=5), fmt=st.sampled_from(FORMATS))
def test_validate_and_repair_on_dicts_agree_with_messages(history: list[Message], fmt: str) -> None:
    data = payload_of(history, fmt)
    messages = load(data, fmt)
    on_dicts = ctxtrim.validate(data, format=fmt)
    assert [v.kind for v in on_dicts] == [v.kind for v in ctxtrim.validate(messages)]
    repaired = ctxtrim.repair(data, format=fmt)
    assert ctxtrim.validate(repaired, format=fmt) == []
    assert repaired == through_repair(messages, data, fmt)


def through_repair(messages: list[Message], data: Any, fmt: str) -> Any:
    out = ctxtrim.repair(messages)
    if out is messages:
        return data
    written = dump(out, fmt)
    return written["messages"] if fmt == "anthropic" and isinstance(data, list) else written


def test_what_is_not_a_payload_says_so() -> None:
    with pytest.raises(FormatError, match="request body with 'messages'"):
        FitContextWindow(10)({"model": "m", "prompt": "hi"})
    with pytest.raises(FormatError, match="unknown format"):
        ctxtrim.validate(CHAT, format="gemini-ish")
    with pytest.raises(
        InvalidMessage, match=r"messages\[1\]: expected a ctxtrim.Message, got dict"
    ):
        FitContextWindow(10)([Message.user("hi"), {"role": "user", "content": "x"}])  # type: ignore[list-item]
    with pytest.raises(InvalidMessage, match=r"messages\[0\]"):
        FitContextWindow(10)([{"role": "wizard", "content": "x"}])


def test_a_named_format_reads_as_that_format() -> None:
    anthropic: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "a " * 300}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
        {"role": "user", "content": "and now?"},
    ]
    out = KeepLastMessages(1, pin_task=False)(anthropic, format="anthropic")
    assert out == [anthropic[-1]]
    with pytest.raises(InvalidMessage, match=r"messages\[1\]"):
        ctxtrim.validate(anthropic, format="openai")  # tool_use is no Chat part
