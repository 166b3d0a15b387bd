"""agent-air's turn model: ``TurnCounter``, caller-given turn ids, ``remove_turn`` of either
side of a turn and ``attach_compact_summary``, on every store backend."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import (
    ContextStore,
    InvalidArgument,
    InvalidTurnId,
    MemoryContextStore,
    Message,
    MessageLog,
    StaleGenerationError,
    ToolResultBlock,
    ToolUseBlock,
    TurnCounter,
)
from ctxtrim.store import HistorySnapshot

from store_backends import BACKENDS, PERSISTENT_BACKENDS, Backend


def call(text: str, tid: str, **kw: object) -> Message:
    return Message.assistant([ToolUseBlock(id=tid, name="ls", input={"d": text})], **kw)  # type: ignore[arg-type]


def result(tid: str, text: str = "out", **kw: object) -> Message:
    return Message.tool_results([ToolResultBlock(tool_use_id=tid, content=text)], **kw)


def texts(history: list[Message]) -> list[str]:
    out = []
    for m in history:
        if m.text:
            out.append(m.text)
        elif m.tool_uses:
            out.append("call:" + m.tool_uses[0].id)
        else:
            out.append("result:" + m.tool_results[0].tool_use_id)
    return out


def two_turns() -> list[Message]:
    """u1 q1 / a1 answer / u2 q2 / a2 call t2 / u2 result t2 / a2 done."""
    return [
        Message.user("q1"),
        Message.assistant("answer"),
        Message.user("q2"),
        call("x", "t2"),
        result("t2"),
        Message.assistant("done"),
    ]


# ---- TurnCounter ---------------------------------------------------------------------------


def test_turn_counter_hands_out_agent_air_ids() -> None:
    c = TurnCounter()
    assert c.current() == 0
    assert c.next_user() == "u1"
    assert c.next_assistant() == "a1"
    assert c.next_assistant() == "a1"  # still turn 1
    assert c.next_user() == "u2"
    assert c.current() == 2
    assert TurnCounter(7).next_user() == "u8"
    # An assistant speaking first opens turn 1.
    assert TurnCounter().next_assistant() == "a1"
    with pytest.raises(InvalidArgument, match="start must be an int from 0 to 4294967295, got -1"):
        TurnCounter(-1)


def test_turn_counter_never_repeats_across_threads() -> None:
    c = TurnCounter()
    seen: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [c.next_user() for _ in range(2000)]
        with lock:
            seen.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(seen)) == 8000 and c.current() == 8000


# ---- caller-given turn ids ---------------------------------------------------------------


def test_given_turn_ids_are_kept_and_continue_the_count() -> None:
    counter = TurnCounter(6)
    log = MessageLog()
    log.append(Message.user("q1", turn=counter.next_user()))
    log.append(Message.assistant("r", turn=counter.next_assistant()))
    log.append(Message.user("q2"))  # no id: the log continues after u7
    assert [str(log.turn_of(i)) for i in range(3)] == ["u7", "a7", "u8"]
    assert log.remove_turn("u7") == 2
    assert [m.text for m in log.to_list()] == ["q2"]


def test_a_turn_id_that_goes_back_is_refused_and_nothing_changes() -> None:
    log = MessageLog([Message.user("q", turn="u5")])
    with pytest.raises(InvalidTurnId, match="out of order"):
        log.append(Message.user("old", turn="u3"))
    with pytest.raises(InvalidTurnId, match="out of order"):
        log.extend([Message.user("ok", turn="u6"), Message.user("back", turn="u4")])
    assert [m.text for m in log.to_list()] == ["q"]
    # The same number again is fine (agent-air shares one id across a turn's messages).
    log.extend([Message.assistant("r", turn="a5"), Message.user("more", turn="u5")])
    assert [str(log.turn_of(i)) for i in range(3)] == ["u5", "a5", "u5"]


async def test_memory_store_keeps_given_ids_for_remove_turn() -> None:
    store = MemoryContextStore()
    await store.append(Message.user("q1", turn="u7"))
    await store.append(Message.assistant("r", turn="a7"))
    assert await store.remove_turn("u7") == 2
    assert await store.get_history() == []


# ---- remove_turn and attach_compact_summary on every backend -----------------------------


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ContextStore]:
    factory: Callable[[Path], Backend] = request.param
    backend = factory(tmp_path)
    opened = await backend.open()
    try:
        yield opened
    finally:
        await opened.close()
        await backend.cleanup()


async def test_remove_assistant_side_keeps_the_user_message(store: ContextStore) -> None:
    await store.append_many(two_turns())
    g = await store.generation()
    assert await store.remove_turn("a2") == 3
    assert texts(await store.get_history()) == ["q1", "answer", "q2"]
    assert await store.generation() > g


async def test_remove_user_turn_removes_the_whole_turn(store: ContextStore) -> None:
    await store.append_many([*two_turns(), Message.user("q3"), Message.assistant("r3")])
    assert await store.remove_turn("u2") == 4
    assert texts(await store.get_history()) == ["q1", "answer", "q3", "r3"]
    # Later turns keep their ids: turn 3 is still "u3", also when the store is read again.
    log = await store.load_log()
    assert [str(log.turn_of(i)) for i in range(4)] == ["u1", "a1", "u3", "a3"]
    assert await store.remove_turn(3) == 2
    assert texts(await store.get_history()) == ["q1", "answer"]


async def test_remove_turn_errors_change_nothing(store: ContextStore) -> None:
    await store.append_many([Message.user("q1"), Message.user("q2"), Message.assistant("r2")])
    g = await store.generation()
    # No such turn, or no assistant side to it: nothing to roll back (agent-air's
    # interrupt() removes nothing then), not an error.
    assert await store.remove_turn("u9") == 0
    assert await store.remove_turn("a1") == 0
    with pytest.raises(InvalidTurnId):
        await store.remove_turn("x1")
    assert await store.generation() == g
    assert len(await store.get_history()) == 3


async def test_remove_turn_refuses_to_split_a_tool_pair(store: ContextStore) -> None:
    # Caller-given ids put the result of turn 1's call in turn 2.
    await store.append_many(
        [
            Message.user("q1", turn="u1"),
            call("x", "t1", turn="a1"),
            Message.user("q2", turn="u2"),
            result("t1", turn="u2"),
        ]
    )
    with pytest.raises(ValueError, match="t1"):
        await store.remove_turn("u2")
    assert len(await store.get_history()) == 4


async def test_attach_compact_summary(store: ContextStore) -> None:
    await store.append_many(two_turns())
    g = await store.generation()
    assert await store.attach_compact_summary("t2", "listed x") is True
    history = await store.get_history()
    assert history[4].tool_results[0].compact_summary == "listed x"
    assert history[4].tool_results[0].content == "out"
    assert texts(history) == texts(two_turns())
    assert await store.generation() > g
    # No stored result has that id: accepted and nothing changes (agent-air's
    # store_compact_summaries takes a summary for any id).
    g = await store.generation()
    assert await store.attach_compact_summary("nope", "s") is False
    assert await store.generation() == g
    # Turn ids are unchanged by the rewrite.
    log = await store.load_log()
    assert str(log.turn_of(4)) == "u2" and log.current_turn == 2


class _RacingStore(MemoryContextStore):
    """A memory store whose first ``snapshot`` is overtaken by a clear + re-append."""

    raced = False

    async def snapshot(self) -> HistorySnapshot:
        snap = await super().snapshot()
        if not self.raced:
            self.raced = True
            history = await self.get_history()
            await self.clear()
            await self.append_many(history)
        return snap


async def test_rewrites_retry_when_another_rewrite_wins() -> None:
    # The generic (persistent-store) path, on a memory store: ContextStore's methods.
    store = _RacingStore(two_turns())
    assert await ContextStore.remove_turn(store, "a2") == 3
    assert texts(await store.get_history()) == ["q1", "answer", "q2"]
    store = _RacingStore(two_turns())
    await ContextStore.attach_compact_summary(store, "t2", "s")
    assert (await store.get_history())[4].tool_results[0].compact_summary == "s"


async def test_appends_during_remove_turn_are_kept(store: ContextStore) -> None:
    await store.append_many(two_turns())
    original = store.replace_prefix

    async def late_append(upto: int, messages: object, expected: int) -> None:
        await store.append(Message.user("late"))
        await original(upto, messages, expected)  # type: ignore[arg-type]

    store.replace_prefix = late_append  # type: ignore[assignment, method-assign]
    if isinstance(store, MemoryContextStore):
        await ContextStore.remove_turn(store, "a2")
    else:
        await store.remove_turn("a2")
    assert texts(await store.get_history()) == ["q1", "answer", "q2", "late"]


async def test_concurrent_stale_generation_gives_up_after_retries() -> None:
    class AlwaysStale(MemoryContextStore):
        async def replace_prefix(
            self,
            upto: int,
            messages: object,
            expected: int,
            *,
            expected_length: int | None = None,
        ) -> None:
            raise StaleGenerationError("stale", expected, expected + 1)

    store = AlwaysStale(two_turns())
    with pytest.raises(StaleGenerationError):
        await ContextStore.remove_turn(store, "u2")
    await asyncio.sleep(0)


# ---- one turn rule on every backend ---------------------------------------------------------


async def test_every_store_refuses_a_turn_id_that_goes_back(store: ContextStore) -> None:
    await store.append_many([Message.user("q3", turn="u3"), Message.assistant("r3", turn="a3")])
    with pytest.raises(
        InvalidTurnId, match="turn id u2 is out of order: the log is already at turn 3"
    ):
        await store.append(Message.user("late", turn="u2"))
    with pytest.raises(InvalidTurnId, match=r"turn id a4 is out of order: .* at turn 6"):
        await store.append_many([Message.user("q6", turn="u6"), Message.assistant("r", turn="a4")])
    assert texts(await store.get_history()) == ["q3", "r3"]
    await store.append(Message.user("q3 again", turn="u3"))  # the same turn: accepted
    await store.append_many([Message.user("q5", turn="u5"), Message.user("plain")])
    log = await store.load_log()
    assert [str(log.turn_of(i)) for i in range(len(log))] == ["u3", "a3", "u3", "u5", "u6"]


async def test_removing_the_newest_turn_rewinds_the_turn_on_every_store(
    store: ContextStore,
) -> None:
    await store.append_many([Message.user("q1", turn="u1"), Message.user("q4", turn="u4")])
    await store.remove_turn("u4")
    # The session is at turn 1 again, as a store reading its messages back sees it.
    assert (await store.load_log()).current_turn == 1
    await store.append(Message.user("q2", turn="u2"))
    with pytest.raises(InvalidTurnId, match="already at turn 2"):
        await store.append(Message.user("q1b", turn="u1"))
    assert texts(await store.get_history()) == ["q1", "q2"]


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_racing_appends_with_turn_ids_never_store_one_going_back(
    factory: Callable[[Path], Backend], tmp_path: Path
) -> None:
    """Two handles on one session append with caller-given ids at once: each append's check
    is confirmed inside its write, so a lower id never lands after a higher one."""
    backend = factory(tmp_path)
    try:
        a = await backend.open("race")
        b = await backend.open("race")

        async def writer(store: ContextStore, numbers: range) -> int:
            refused = 0
            for n in numbers:
                try:
                    await store.append(Message.user(f"q{n}", turn=f"u{n}"))
                except InvalidTurnId:
                    refused += 1
            return refused

        refused = await asyncio.gather(writer(a, range(1, 60, 2)), writer(b, range(2, 60, 2)))
        history = await a.get_history()
        numbers = [int(m.turn[1:]) for m in history if m.turn is not None]
        assert numbers == sorted(numbers) and len(numbers) + sum(refused) == 59
        await a.close()
        await b.close()
    finally:
        await backend.cleanup()


@pytest.mark.parametrize("factory", PERSISTENT_BACKENDS)
async def test_a_write_between_the_turn_check_and_the_append_is_caught(
    factory: Callable[[Path], Backend], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends right after this append's turn check: the write sees the
    session moved, writes nothing, and the check runs again on the new turn."""
    backend = factory(tmp_path)
    try:
        a = await backend.open("moved")
        b = await backend.open("moved")
        module = sys.modules[type(a).__module__]
        real = module.turn_guard
        calls = 0

        async def racing_guard(load: Any, *args: Any) -> Any:
            nonlocal calls
            mine = load.__self__ is a  # a's checks only (b's append checks too)
            calls += mine
            guard = await real(load, *args)
            if mine and calls == 1:  # the other writer gets in between, at a higher turn
                await b.append(Message.user("other", turn="u9"))
            return guard

        monkeypatch.setattr(module, "turn_guard", racing_guard)
        with pytest.raises(InvalidTurnId, match="already at turn 9"):
            await a.append(Message.user("mine", turn="u5"))
        assert calls == 2  # checked again after the write found the session moved
        assert texts(await a.get_history()) == ["other"]
        calls = 1  # no more racing: a later id goes in on the first check
        await a.append(Message.user("next", turn="u10"))
        assert texts(await b.get_history()) == ["other", "next"]
        await a.close()
        await b.close()
    finally:
        await backend.cleanup()
