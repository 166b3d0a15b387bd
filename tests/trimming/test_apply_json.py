"""``strategy.apply_json(source, format)``: the trimmed history as the request's JSON bytes.

The bytes are ``formats.dump_json(strategy.apply(source), format)``'s, always. A cut
strategy on a memory store or a ``MessageLog`` writes the Chat Completions, Responses and
Anthropic requests from the one it wrote last of that log (``_core.LogJson``), copying the
messages both windows hold; everything here compares it with the plain path, a second
strategy with no history of its own, after every kind of write a log takes: appends,
rewrites (``replace_prefix``, ``remove_turn``, ``clear``), forks and snapshots, a changed
budget, another format, messages released behind the window, and errors.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxtrim import (
    FitContextWindow,
    KeepLastMessages,
    KeepLastTurns,
    MemoryContextStore,
    Message,
    MessageLog,
    ProviderBlock,
    observe,
)
from ctxtrim.bench.paths import SYSTEM, turn_dicts, turn_messages
from ctxtrim.bench.timing import drive
from ctxtrim.errors import FormatError, InvalidMessage
from ctxtrim.formats import dump_json, from_openai_chat_json
from ctxtrim.strategies import ContextStrategy

from strategies import histories

FORMATS = ["openai", "openai_chat", "chat", "responses", "openai_responses", "anthropic", "gemini"]
CUTS: list[Callable[[], ContextStrategy]] = [
    lambda: FitContextWindow(2000),
    lambda: FitContextWindow(700, pin_task=False, start_with_user=False),
    lambda: KeepLastTurns(3),
    lambda: KeepLastMessages(9),
]


def _store(turns: int = 60) -> MemoryContextStore:
    head = [Message.system(SYSTEM)]
    return drive(
        MemoryContextStore.from_history(head + [m for i in range(turns) for m in turn_messages(i)])
    )


def _same(strategy: ContextStrategy, fresh: ContextStrategy, source: Any, fmt: str) -> bytes:
    """``strategy.apply_json``'s bytes, checked against the plain path's (or its error)."""
    try:
        expected = dump_json(fresh.apply(source), fmt)
    except InvalidMessage as e:  # a message with no form in this format: the same error
        with pytest.raises(InvalidMessage) as raised:
            strategy.apply_json(source, fmt)
        assert (str(raised.value), raised.value.path) == (str(e), e.path)
        return b""
    got = strategy.apply_json(source, fmt)
    assert got == expected
    return got


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("make", CUTS)
def test_a_server_loop_sends_what_the_plain_path_sends(
    make: Callable[[], ContextStrategy], fmt: str
) -> None:
    store = _store()
    strategy, fresh = make(), make()
    for i in range(60, 140):
        drive(store.append_many(from_openai_chat_json(json.dumps(turn_dicts(i)).encode())))
        _same(strategy, fresh, store, fmt)
    json.loads(strategy.apply_json(store, fmt))  # one JSON value


def test_rewrites_forks_snapshots_and_settings_start_over() -> None:
    fit, fresh = FitContextWindow(2000), FitContextWindow(2000)
    for fmt in ("openai", "responses", "anthropic"):
        store = _store()
        _same(fit, fresh, store, fmt)
        gen = drive(store.generation())
        drive(store.replace_prefix(3, [Message.user("summary of the start")], gen))
        _same(fit, fresh, store, fmt)
        drive(store.remove_turn(store.log.current_turn - 2))  # a whole turn, mid-window
        _same(fit, fresh, store, fmt)
        branch = drive(store.fork())
        drive(branch.append_many(turn_messages(500)))
        _same(fit, fresh, branch, fmt)
        _same(fit, fresh, store, fmt)  # the parent's own last request, not the branch's
        snap = drive(store.load_log())
        drive(store.append_many(turn_messages(501)))
        _same(fit, fresh, snap, fmt)
        _same(fit, fresh, store, fmt)
        for budget in (500, 5000, 2000):  # other strategies on the same log, in turn
            _same(FitContextWindow(budget), FitContextWindow(budget), store, fmt)
            _same(fit, fresh, store, fmt)
        drive(store.clear())
        _same(fit, fresh, store, fmt)
        drive(store.append_many([Message.system(SYSTEM), *turn_messages(502)]))
        _same(fit, fresh, store, fmt)


def test_formats_in_turn_on_one_log() -> None:
    log = MessageLog([Message.system(SYSTEM)] + [m for i in range(40) for m in turn_messages(i)])
    fit, fresh = FitContextWindow(1500), FitContextWindow(1500)
    for i in range(40, 70):
        log.extend(turn_messages(i))
        for fmt in ("openai", "responses", "responses", "openai", "anthropic"):
            _same(fit, fresh, log, fmt)


def test_a_released_message_the_window_reaches_again_is_the_same() -> None:
    store = _store(300)
    fit, fresh = FitContextWindow(2000), FitContextWindow(2000)
    for fmt in ("openai", "responses", "anthropic"):
        _same(fit, fresh, store, fmt)
        everything = FitContextWindow(10**9)
        _same(everything, FitContextWindow(10**9), store, fmt)  # back over released ones
        _same(fit, fresh, store, fmt)
        _same(everything, FitContextWindow(10**9), store, fmt)


def test_bad_messages_raise_what_the_plain_path_raises_and_change_nothing() -> None:
    store = _store(10)
    fit = FitContextWindow(10**9)
    before = fit.apply_json(store, "openai")
    # A Responses item kept verbatim has no Chat Completions form.
    item = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    bad = Message("assistant", (ProviderBlock("openai_responses", item),))
    drive(store.append(bad))
    with pytest.raises(InvalidMessage) as plain:
        dump_json(fit.apply(store), "openai")
    with pytest.raises(InvalidMessage) as joined:
        fit.apply_json(store, "openai")
    assert (str(joined.value), joined.value.path) == (str(plain.value), plain.value.path)
    branch = drive(store.fork())  # the bad message's turn gone: the same request as before
    drive(store.remove_turn(store.log.turn_of(len(store.log) - 1)))
    _same(fit, FitContextWindow(10**9), store, "openai")
    assert fit.apply_json(branch, "responses") == dump_json(fit.apply(branch), "responses")
    assert before.startswith(fit.apply_json(store, "openai")[:-1])
    with pytest.raises(FormatError, match="unknown format 'xml'"):
        fit.apply_json(store, "xml")
    with pytest.raises(FormatError, match="unknown format 'xml'"):
        fit.apply_json([Message.user("hi")], "xml")


def test_any_strategy_and_source_gives_the_plain_bytes() -> None:
    from ctxtrim import ClearToolResults, Pipeline

    history = [Message.system(SYSTEM)] + [m for i in range(30) for m in turn_messages(i)]
    for make in (
        lambda: Pipeline(ClearToolResults(500, keep=1), FitContextWindow(1500)),
        lambda: FitContextWindow(1500),
    ):
        for fmt in ("openai", "responses", "anthropic", "gemini", "ctxtrim"):
            _same(make(), make(), history, fmt)
            _same(make(), make(), drive(MemoryContextStore.from_history(history)), fmt)


def test_a_watched_call_is_logged_as_apply_is() -> None:
    events: list[Any] = []
    remove = observe.add_listener(events.append)
    try:
        store = _store()
        FitContextWindow(1000).apply_json(store, "openai")
    finally:
        remove()
    assert len(events) == 1 and events[0].report.strategy.startswith("FitContextWindow")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=histories(max_rounds=6),
    batches=st.lists(histories(max_rounds=3), min_size=1, max_size=6),
    budget=st.integers(50, 3000),
    fmt=st.sampled_from(["openai", "responses", "anthropic"]),
)
def test_any_history_grown_by_any_batches(
    first: list[Message], batches: list[list[Message]], budget: int, fmt: str
) -> None:
    log = MessageLog(first)
    fit, fresh = FitContextWindow(budget), FitContextWindow(budget)
    for batch in batches:
        log.extend(batch)
        _same(fit, fresh, log, fmt)
