"""`SQLiteContextStore` specifics: options, schema, corruption, token counts, lifecycle.

The behaviour every backend shares is in ``test_store_conformance.py`` and
``test_store_reliability.py``; this file covers what only the SQLite store has.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from ctxtrim import (
    CorruptRecordError,
    HeuristicTokenCounter,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    Message,
    SQLiteContextStore,
    StoreError,
)
from ctxtrim.stores.sqlite import SCHEMA_VERSION

from helpers import agent_session


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


async def test_history_survives_reopen_and_the_file_is_wal(tmp_path: Path) -> None:
    path = tmp_path / "h.db"
    async with await SQLiteContextStore.open(path, "s") as store:
        await store.append_many(agent_session(3))
        await store.add_context_tokens(120, 30)
        assert store.path == str(path)
    async with await SQLiteContextStore.open(str(path), "s") as again:
        assert await again.get_history() == agent_session(3)
        assert await again.get_context_tokens() == (120, 30)
    raw = _raw(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert raw.execute("SELECT version FROM ctxtrim_schema").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        raw.close()


async def test_synchronous_is_configurable_and_checked(tmp_path: Path) -> None:
    for mode, level in [("FULL", 2), ("NORMAL", 1), ("extra", 3)]:
        async with await SQLiteContextStore.open(tmp_path / "s.db", synchronous=mode) as store:  # type: ignore[arg-type]
            conn = store._db.conn
            assert conn is not None
            got = await store._db.run(lambda c: c.execute("PRAGMA synchronous").fetchone()[0])
            assert got == level
    for bad in ["OFF", "fast", 2]:
        with pytest.raises(ValueError, match="synchronous"):
            await SQLiteContextStore.open(tmp_path / "s.db", synchronous=bad)  # type: ignore[arg-type]


async def test_stored_token_counts_are_handed_to_load_log(tmp_path: Path) -> None:
    calls: list[Message] = []

    class Exact(HeuristicTokenCounter):
        def count_message(self, message: Message) -> int:
            calls.append(message)
            return 11

    path = tmp_path / "t.db"
    history = agent_session(2)
    async with await SQLiteContextStore.open(path, "s", counter=Exact()) as store:
        await store.append(history[0])
        await store.append_many(history[1:])
        assert len(calls) == len(history)
    async with await SQLiteContextStore.open(path, "s") as reopened:  # no counter now
        log = await reopened.load_log()
        assert log.read_only and log.to_list() == history
        assert log.token_counts() == [11] * len(history)  # stored counts, not re-estimated
    assert len(calls) == len(history)


async def test_corrupt_rows_raise_naming_the_row(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    async with await SQLiteContextStore.open(path, "victim") as store:
        await store.append_many([Message.user("one"), Message.user("two"), Message.user("3")])
    raw = _raw(path)
    try:  # flip a byte of message 1 (the checksum no longer matches)
        (payload,) = raw.execute("SELECT payload FROM ctxtrim_messages WHERE seq = 1").fetchone()
        raw.execute(
            "UPDATE ctxtrim_messages SET payload = ? WHERE seq = 1",
            (payload.replace(b"two", b"tw0"),),
        )
    finally:
        raw.close()
    async with await SQLiteContextStore.open(path, "victim") as store:
        with pytest.raises(CorruptRecordError, match="checksum") as err:
            await store.get_history()
        assert (err.value.session_id, err.value.seq) == ("victim", 1)
        assert [m.text for m in await store.get_history(limit=1)] == ["3"]  # others readable
    raw = _raw(path)
    try:  # valid checksum over bytes that are not a message
        raw.execute("UPDATE ctxtrim_messages SET payload = X'7B7D', crc = 2745614147 WHERE seq = 2")
    finally:
        raw.close()
    async with await SQLiteContextStore.open(path, "victim") as store:
        with pytest.raises(CorruptRecordError, match="does not decode") as err:
            await store.get_history(limit=1)
        assert err.value.seq == 2


async def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "n.db"
    await (await SQLiteContextStore.open(path)).close()
    raw = _raw(path)
    try:
        raw.execute("UPDATE ctxtrim_schema SET version = ?", (SCHEMA_VERSION + 1,))
    finally:
        raw.close()
    with pytest.raises(StoreError, match="newer ctxtrim"):
        await SQLiteContextStore.open(path)


async def test_bad_session_ids_and_arguments(tmp_path: Path) -> None:
    path = tmp_path / "ids.db"
    for bad in ["", "lone \ud800", "x" * 4097, 42, b"bytes"]:
        with pytest.raises(InvalidSessionId):
            await SQLiteContextStore.open(path, bad)  # type: ignore[arg-type]
    async with await SQLiteContextStore.open(path, "é" * 2048) as store:  # 4096 bytes: fits
        await store.append(Message.user("x"))
        with pytest.raises(ValueError):
            await store.get_history(limit=-1)
        with pytest.raises(InvalidArgument, match="history length 1, got 5"):
            await store.replace_prefix(5, [], await store.generation())
        with pytest.raises(InvalidArgument):
            await store.replace_prefix(-1, [], await store.generation())
        with pytest.raises(InvalidArgument):
            await store.set_context_tokens("7", 1)  # type: ignore[arg-type]
        with pytest.raises(InvalidMessage, match="sequence"):
            await store.append_many(Message.user("not a list"))  # type: ignore[arg-type]
        assert [m.text for m in await store.get_history(limit=50)] == ["x"]
    with pytest.raises(ValueError, match="max_message_bytes"):
        await SQLiteContextStore.open(path, max_message_bytes=0)


async def test_lifecycle_close_fork_and_memory(tmp_path: Path) -> None:
    store = await SQLiteContextStore.open(tmp_path / "l.db", "parent")
    await store.append(Message.user("shared start"))
    child = await store.fork()
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        await store.get_history()
    await child.append(Message.user("child goes on"))  # the fork keeps the connection
    assert [m.text for m in await child.get_history()] == ["shared start", "child goes on"]
    await child.close()
    with pytest.raises(TypeError, match="open"):
        SQLiteContextStore(None, 1, "s", counter=None, max_message_bytes=1)  # type: ignore[arg-type]

    async with await SQLiteContextStore.open(tmp_path / "l.db", "parent") as again:
        other = await again.session("another")  # same connection, another session
        await again.close()
        await other.append(Message.user("other session"))
        assert [m.text for m in await other.get_history()] == ["other session"]
        ids = {i.session_id for i in await other.list_sessions()}
        assert ids == {"parent", "another", child.session_id}
        with pytest.raises(InvalidSessionId):
            await other.session("")
        await other.close()

    memory = await SQLiteContextStore.from_history(agent_session(1))  # ":memory:"
    fork = await memory.fork()
    await memory.clear()
    assert await fork.get_history() == agent_session(1) and await memory.get_history() == []
    await fork.close()
    await memory.close()


async def test_a_waiting_write_does_not_block_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "loop.db"
    async with await SQLiteContextStore.open(path, "s") as store:
        blocker = _raw(path)
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        tick_task = asyncio.create_task(ticker())
        append = asyncio.create_task(store.append(Message.user("waits for the lock")))
        await asyncio.sleep(0.3)
        assert not append.done() and ticks >= 10  # the loop kept running meanwhile
        blocker.execute("ROLLBACK")
        blocker.close()
        await append
        tick_task.cancel()
        assert [m.text for m in await store.get_history()] == ["waits for the lock"]


async def test_list_sessions_reports_every_session_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ls.db"
    async with (
        await SQLiteContextStore.open(path, "first") as a,
        await SQLiteContextStore.open(path, "second") as b,
    ):
        await a.append_many([Message.system("sys"), Message.user("y" * 100)])
        await b.set_context_tokens(5, 6)
        infos = await b.list_sessions()
        assert [(i.session_id, i.message_count, i.preview) for i in infos] == [
            ("first", 2, "y" * 80),
            ("second", 0, ""),
        ]
        assert (infos[1].input_tokens, infos[1].output_tokens) == (5, 6)


async def test_a_cancelled_append_is_whole_or_absent_never_torn(tmp_path: Path) -> None:
    path = tmp_path / "cancel.db"
    async with await SQLiteContextStore.open(path, "s") as store:
        blocker = _raw(path)
        blocker.execute("BEGIN IMMEDIATE")
        batch = [Message.user(f"b{i}") for i in range(3)]
        task = asyncio.create_task(store.append_many(batch))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        blocker.execute("ROLLBACK")
        blocker.close()
        # The worker thread finished the transaction after the caller gave up on it: the
        # batch is there whole (the same as an append whose acknowledgement was lost).
        assert [m.text for m in await store.get_history()] == ["b0", "b1", "b2"]


async def test_an_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="unable to open"):
        await SQLiteContextStore.open(tmp_path / "no" / "such" / "dir.db")


async def test_idempotent_ids_make_a_retried_append_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "idem.db"
    batch = [Message.user("a", id="m1"), Message.assistant("b", id="m2"), Message.user("c")]
    async with await SQLiteContextStore.open(path, "s", idempotent_ids=True) as store:
        await store.append_many(batch)
        # The acknowledgement was lost (kill -9 after COMMIT): the client retries the batch.
        await store.append_many(batch)
        assert [m.text for m in await store.get_history()] == ["a", "b", "c", "c"]  # no id: no key
        await store.append(Message.user("a", id="m1"))
        with pytest.raises(InvalidMessage) as err:  # same id, other content: whole batch refused
            await store.append_many([Message.user("new", id="m3"), Message.user("x", id="m2")])
        assert err.value.path == "messages[1].id"
        with pytest.raises(InvalidMessage) as err:
            await store.append(Message.user("x", id="m1"))
        assert err.value.path == "message.id"
        with pytest.raises(InvalidMessage) as err:  # conflicting twins in one batch, before I/O
            await store.append_many([Message.user("p", id="t"), Message.user("q", id="t")])
        assert err.value.path == "messages[1].id"
        await store.append_many([Message.user("p", id="t"), Message.user("p", id="t")])
        assert [m.id for m in await store.get_history()] == ["m1", "m2", None, None, "t"]
        fork = await store.fork()  # a fork knows the ids of its history
        await fork.append(Message.user("a", id="m1"))
        assert len(await fork.get_history()) == 5
        await fork.close()
        await store.clear()  # a clear forgets them
        await store.append(Message.user("other content", id="m1"))
        assert [m.text for m in await store.get_history()] == ["other content"]
    async with await SQLiteContextStore.open(path, "s") as plain:  # off (the default)
        await plain.append(Message.user("other content", id="m1"))
        assert len(await plain.get_history()) == 2  # like every other store: two messages


async def test_a_version_1_file_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    async with await SQLiteContextStore.open(path, "old") as store:
        await store.append_many(agent_session(2))
    raw = _raw(path)
    try:  # what a file written by schema version 1 looks like
        raw.execute("DROP TABLE ctxtrim_ids")
        raw.execute("UPDATE ctxtrim_schema SET version = 1")
    finally:
        raw.close()
    async with await SQLiteContextStore.open(path, "old", idempotent_ids=True) as store:
        assert await store.get_history() == agent_session(2)
        await store.append(Message.user("after the upgrade", id="u"))
        await store.append(Message.user("after the upgrade", id="u"))
        assert len(await store.get_history()) == len(agent_session(2)) + 1
    raw = _raw(path)
    try:
        assert raw.execute("SELECT version FROM ctxtrim_schema").fetchall() == [(SCHEMA_VERSION,)]
    finally:
        raw.close()
