"""Every integer argument of the compiled core: an int past its Rust type's range is an
``InvalidArgument`` naming the argument and the range (it was a bare ``OverflowError``
naming nothing), and the call changes nothing. A message index past any length is the
``IndexError`` an index past the end gets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ctxtrim import InvalidArgument, Message, _core

U64 = "from 0 to 18446744073709551615"
U32 = "from 0 to 4294967295"
TOO_BIG = [2**64, 2**64 + 1, 10**100]
NEGATIVE = [-1, -(2**63) - 1]


def _log() -> _core.MessageLog:
    log = _core.MessageLog()
    log.extend([Message.user("hi"), Message.assistant("hello"), Message.user("again")])
    return log


def _state(log: _core.MessageLog) -> tuple[Any, ...]:
    return (log.generation, len(log), log.token_counts(), [m.text for m in log.to_list()])


# (call on a fresh log, the argument named, its range)
CALLS: list[tuple[str, Callable[[_core.MessageLog, int], object], str, str]] = [
    ("to_list(start)", lambda log, v: log.to_list(v), "start", U64),
    ("to_list(end)", lambda log, v: log.to_list(0, v), "end", U64),
    ("tail(limit)", lambda log, v: log.tail(v), "limit", U64),
    ("tokens(start)", lambda log, v: log.tokens(v), "start", U64),
    ("tokens(end)", lambda log, v: log.tokens(0, v), "end", U64),
    ("is_safe_cut", lambda log, v: log.is_safe_cut(v), "i", U64),
    ("safe_cut_at_or_before", lambda log, v: log.safe_cut_at_or_before(v), "i", U64),
    ("safe_cut_at_or_after", lambda log, v: log.safe_cut_at_or_after(v), "i", U64),
    ("user_cut_at_or_before", lambda log, v: log.user_cut_at_or_before(v), "i", U64),
    ("user_cut_at_or_after", lambda log, v: log.user_cut_at_or_after(v), "i", U64),
    ("kth_last_turn_start", lambda log, v: log.kth_last_turn_start(v), "k", U64),
    ("kth_last_round_start", lambda log, v: log.kth_last_round_start(v), "k", U64),
    ("fit_budget(budget)", lambda log, v: log.fit_budget(v), "budget", U64),
    ("fit_budget(floor)", lambda log, v: log.fit_budget(10, floor=v), "floor", U64),
    ("fit_budget(end)", lambda log, v: log.fit_budget(10, end=v), "end", U64),
    ("stable_cut(fixed)", lambda log, v: log.stable_cut(v, 10, 5), "fixed", U64),
    ("stable_cut(high)", lambda log, v: log.stable_cut(0, v, 5), "high", U64),
    ("stable_cut(low)", lambda log, v: log.stable_cut(0, 10, v), "low", U64),
    ("stable_cut(floor)", lambda log, v: log.stable_cut(0, 10, 5, floor=v), "floor", U64),
    ("calibrate", lambda log, v: log.calibrate(v), "reported_input_tokens", U64),
    ("append(tokens)", lambda log, v: log.append(Message.user("x"), tokens=v), "tokens", U32),
    (
        "extend(tokens)",
        lambda log, v: log.extend([Message.user("x"), Message.user("y")], tokens=[1, v]),
        "tokens[1]",
        U32,
    ),
    (
        "MessageLog(tokens)",
        lambda log, v: _core.MessageLog([Message.user("x")], tokens=[v]),
        "tokens[0]",
        U32,
    ),
    (
        "replace_prefix(upto)",
        lambda log, v: log.replace_prefix(v, [], log.generation),
        "upto",
        U64,
    ),
    (
        "replace_prefix(expected_generation)",
        lambda log, v: log.replace_prefix(0, [], v),
        "expected_generation",
        U64,
    ),
    (
        "replace_prefix(expected_length)",
        lambda log, v: log.replace_prefix(0, [], log.generation, expected_length=v),
        "expected_length",
        U64,
    ),
    (
        "replace_prefix(tokens)",
        lambda log, v: log.replace_prefix(1, [Message.user("s")], log.generation, tokens=[v]),
        "tokens[0]",
        U32,
    ),
    (
        "replace_at(index)",
        lambda log, v: log.replace_at(v, Message.user("s"), log.generation),
        "index",
        U64,
    ),
    (
        "replace_at(expected_generation)",
        lambda log, v: log.replace_at(0, Message.user("s"), v),
        "expected_generation",
        U64,
    ),
    (
        "replace_at(tokens)",
        lambda log, v: log.replace_at(0, Message.user("s"), log.generation, tokens=v),
        "tokens",
        U32,
    ),
    ("remove_turn", lambda log, v: log.remove_turn(v), "turn", U32),
    ("turn_range", lambda log, v: log.turn_range(v), "turn", U32),
    ("cut_window", lambda log, v: _core.cut_window(log, "budget", v), "value", U64),
    (
        "cut_window(list)",
        lambda log, v: _core.cut_window(log.to_list(), "turns", v),
        "value",
        U64,
    ),
    ("cut_list", lambda log, v: _core.cut_list(log.to_list(), "messages", v), "value", U64),
    ("TurnCounter", lambda log, v: _core.TurnCounter(v), "start", U32),
    ("TurnId", lambda log, v: _core.TurnId("u", v), "number", U32),
    ("grapheme_floor", lambda log, v: _core.grapheme_floor("abc", v), "max_chars", U64),
]


@pytest.mark.parametrize(
    ("call", "name", "bounds"), [c[1:] for c in CALLS], ids=[c[0] for c in CALLS]
)
@pytest.mark.parametrize("value", TOO_BIG + NEGATIVE)
def test_an_int_past_its_range_is_an_invalid_argument_naming_it(
    call: Callable[[_core.MessageLog, int], object], name: str, bounds: str, value: int
) -> None:
    log = _log()
    before = _state(log)
    with pytest.raises(InvalidArgument) as e:
        call(log, value)
    assert not isinstance(e.value, OverflowError)
    text = str(e.value)
    assert text.startswith(f"{name} must be an int {bounds}, got "), text
    shown = str(value) if len(str(value)) <= 60 else f"an int of {value.bit_length()} bits"
    assert text.endswith(shown), text
    assert _state(log) == before


def test_the_u32_arguments_take_their_largest_value_and_refuse_one_more() -> None:
    assert _core.TurnCounter(2**32 - 1).current() == 2**32 - 1
    with pytest.raises(InvalidArgument, match="start must be an int from 0 to 4294967295"):
        _core.TurnCounter(2**32)
    log = _core.MessageLog()
    log.append(Message.user("x"), tokens=2**32 - 1)
    assert log.token_counts() == [2**32 - 1]
    with pytest.raises(InvalidArgument, match="tokens must be an int"):
        log.append(Message.user("y"), tokens=2**32)
    assert len(log) == 1


@pytest.mark.parametrize("value", [2**63, 2**64, 10**100, -(2**63) - 1])
def test_a_message_index_past_any_length_is_an_index_error(value: int) -> None:
    log = _log()
    with pytest.raises(IndexError, match=r"message index .* out of range"):
        log[value]
    with pytest.raises(IndexError, match=r"message index .* out of range"):
        log.turn_of(value)


def test_a_non_int_keeps_its_type_error() -> None:
    log = _log()
    with pytest.raises(TypeError):
        log.to_list("1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        _core.cut_window(log, "budget", 1.5)  # type: ignore[arg-type]
