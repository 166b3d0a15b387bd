"""A store's trimming releases the caches of the messages its windows left behind.

A server keeps each message's request JSON (and facts) while a window can reach it, not for
the session's life: ``FitContextWindow(...).apply(store)`` empties the releasable slots
(``ctxtrim.messages.RELEASABLE_SLOTS``) of the messages more than a slack behind the
window's start, outside its pinned head. They are caches, so nothing a user sees changes:
a window that reaches back renders and prices them again, the same.
"""

from __future__ import annotations

import json

import pytest
from msgspec.structs import force_setattr

from ctxtrim import FitContextWindow, KeepLastTurns, MemoryContextStore, Message
from ctxtrim.bench.paths import SYSTEM, turn_dicts
from ctxtrim.bench.timing import drive
from ctxtrim.formats import from_openai_chat_json, to_openai_chat, to_openai_chat_json
from ctxtrim.messages import COUNTS_SLOT, RELEASABLE_SLOTS

CHAT_JSON = "_ctxtrim_openai_chat_json"
FACTS = "_ctxtrim_facts"


def _kept(m: Message, slot: str) -> bool:
    return getattr(m, slot, None) is not None


def _serve(turns: int, budget: int = 2000) -> tuple[MemoryContextStore, list[bytes]]:
    """A server's turns: 4 messages arrive as JSON, are stored, trimmed and sent."""
    store = drive(MemoryContextStore.from_history([Message.system(SYSTEM)]))
    fit = FitContextWindow(budget)
    sent = []
    for i in range(turns):
        drive(store.append_many(from_openai_chat_json(json.dumps(turn_dicts(i)).encode())))
        sent.append(to_openai_chat_json(fit.apply(store)))
    return store, sent


def test_only_what_windows_can_reach_keeps_its_caches() -> None:
    store, _ = _serve(300)
    history = drive(store.get_history())
    window = FitContextWindow(2000).apply(store)
    start = history.index(window[2])  # after the pinned system prompt and task
    assert window[:2] == history[:2]
    for i, m in enumerate(history):
        if i < 2 or i >= start - 64:  # the pinned head, the window and its slack
            assert _kept(m, CHAT_JSON), i
        elif i < start - 64 - 8:  # well behind: released, facts too
            assert not any(_kept(m, slot) for slot in RELEASABLE_SLOTS), i
    assert sum(_kept(m, CHAT_JSON) for m in history) < 2 + (len(history) - start) + 64 + 8


def test_a_window_reaching_back_sends_the_same_bytes() -> None:
    store, _ = _serve(300)
    history = drive(store.get_history())
    assert not _kept(history[100], CHAT_JSON)
    # Everything, with half the messages released: rendered and priced again, the same.
    everything = FitContextWindow(10**9).apply(store)
    assert everything == history
    fresh = [Message.decode(m.encode()) for m in history]
    assert to_openai_chat_json(everything) == to_openai_chat_json(fresh)
    assert to_openai_chat(everything) == to_openai_chat(fresh)
    assert KeepLastTurns(10**6).apply(store) == history


def test_what_was_sent_does_not_depend_on_releasing() -> None:
    # The same turns on plain lists (nothing released) send the same requests.
    _, sent = _serve(120)
    history = [Message.system(SYSTEM)]
    fit = FitContextWindow(2000)
    plain = []
    for i in range(120):
        history.extend(from_openai_chat_json(json.dumps(turn_dicts(i)).encode()))
        plain.append(to_openai_chat_json(fit(history)))
    assert sent == plain


def test_provider_counts_stay() -> None:
    store, _ = _serve(1)
    old = drive(store.get_history())[3]
    force_setattr(old, COUNTS_SLOT, {"counter": 7})  # as a provider counter keeps its count
    fit = FitContextWindow(2000)
    for i in range(1, 200):
        drive(store.append_many(from_openai_chat_json(json.dumps(turn_dicts(i)).encode())))
        fit.apply(store)
    assert not _kept(old, FACTS)
    assert getattr(old, COUNTS_SLOT) == {"counter": 7}


def test_a_snapshot_trimmed_every_turn_releases_too() -> None:
    # `strategy.apply(await store.load_log())`: each turn trims a new snapshot, which shares
    # what was released with its store (so a turn releases only what is new).
    store, _ = _serve(1)
    fit = FitContextWindow(2000)
    for i in range(1, 200):
        drive(store.append_many(from_openai_chat_json(json.dumps(turn_dicts(i)).encode())))
        to_openai_chat_json(fit.apply(drive(store.load_log())))
    history = drive(store.get_history())
    start = history.index(fit.apply(store)[2])
    assert not any(_kept(m, CHAT_JSON) for m in history[2 : start - 64 - 8])
    assert all(_kept(m, CHAT_JSON) for m in history[start:])


@pytest.mark.parametrize("rewrite", ["fork", "compaction"])
def test_forks_and_rewrites_release_what_their_windows_left_behind(rewrite: str) -> None:
    store, _ = _serve(200)
    fit = FitContextWindow(2000)
    if rewrite == "fork":
        store = drive(store.fork())
    else:
        # Compaction replaces the oldest messages: a new generation, released again from 0.
        log = store.log
        summary = Message.user("summary of the first 400 messages")
        log.replace_prefix(401, [log[0], summary], log.generation)
    for i in range(200, 260):
        drive(store.append_many(from_openai_chat_json(json.dumps(turn_dicts(i)).encode())))
        fit.apply(store)
    history = drive(store.get_history())
    window = fit.apply(store)
    start = history.index(window[2])
    assert all(_kept(m, CHAT_JSON) for m in window[2:])
    assert not any(_kept(m, CHAT_JSON) for m in history[2 : start - 64 - 8])
