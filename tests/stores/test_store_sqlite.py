"""`SQLiteContextStore` specifics: options, schema, corruption, token counts, lifecycle.

The behaviour every backend shares is in ``test_store_conformance.py`` and
``test_store_reliability.py``; this file covers what only the SQLite store has.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import (
    CorruptRecordError,
    HeuristicTokenCounter,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    Message,
    MessageTooLarge,
    SQLiteContextStore,
    StaleGenerationError,
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


async def test_a_stored_count_edited_by_hand_is_a_corrupt_record(tmp_path: Path) -> None:
    """A token count altered in the file is a CorruptRecordError naming the row, not an
    OverflowError on every later read."""
    path = tmp_path / "c.db"
    async with await SQLiteContextStore.open(path, "victim") as store:
        await store.append_many([Message.user("1"), Message.assistant("2")])
    for bad in (-5, 2**40):
        raw = _raw(path)
        try:
            raw.execute("UPDATE ctxtrim_messages SET tokens = ? WHERE seq = 1", (bad,))
        finally:
            raw.close()
        async with await SQLiteContextStore.open(path, "victim") as store:
            with pytest.raises(CorruptRecordError, match="stored token count") as err:
                await store.load_log()
            assert (err.value.session_id, err.value.seq) == ("victim", 1)


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
    with pytest.raises(StoreError, match="unable to open") as e:
        await SQLiteContextStore.open(tmp_path / "no" / "such" / "dir.db")
    assert "file descriptors" not in str(e.value)  # a missing directory is not that


_FD_EXHAUSTION = r"""
import asyncio, os, resource, sys
from ctxtrim import Message, SQLiteContextStore, StoreError

resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))

async def main():
    stores = []
    try:
        for i in range(10 * FD_LIMIT):  # one file each, as a server with a file per user would
            store = await SQLiteContextStore.open(os.path.join(sys.argv[1], f"{i}.db"), "s")
            await store.append(Message.user("x"))
            stores.append(store)
        print("never ran out")
        return
    except StoreError as e:
        print(len(stores))
        print(e)
    for store in stores[: len(stores) // 2]:
        await store.close()
    again = await SQLiteContextStore.open(os.path.join(sys.argv[1], "again.db"), "s")
    await again.append(Message.user("after closing some"))
    print("reopened")

asyncio.run(main())
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="RLIMIT_NOFILE is POSIX")
def test_running_out_of_file_descriptors_says_so(tmp_path: Path) -> None:
    """Stores on many files exhaust the process's descriptors: the error says that is what
    ran out (SQLite says only "unable to open database file"), and closing stores lets the
    next open succeed."""
    import subprocess
    import sys

    limit = 64
    proc = subprocess.run(
        [sys.executable, "-c", _FD_EXHAUSTION.replace("FD_LIMIT", str(limit)), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    opened, message, reopened = proc.stdout.splitlines()
    assert 0 < int(opened) < limit  # three descriptors per file: it ran out early
    assert "unable to open database file" in message
    assert "run out of file descriptors" in message
    assert f"limit of {limit}" in message and "RLIMIT_NOFILE" in message
    assert "store.session(id)" in message
    assert reopened == "reopened"


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


# -- many sessions in one process: one shared connection, group commit ----------------------


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _sqlite_threads() -> set[threading.Thread]:
    """The SQLite worker threads alive now. A worker left by an earlier test may end at any
    moment, when the GC closes its connection, so tests compare sets, not counts; and sets of
    thread objects, not idents, because a new thread may reuse a dead one's ident."""
    return {t for t in threading.enumerate() if t.name.startswith("ctxtrim-sqlite")}


async def _wait_for(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.01)
    assert condition()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds through /proc")
async def test_300_stores_on_one_file_share_one_connection_and_thread(tmp_path: Path) -> None:
    path = tmp_path / "many.db"
    base_threads, base_fds, base_workers = threading.active_count(), _fds(), _sqlite_threads()
    few = [await SQLiteContextStore.open(path, f"s{i}") for i in range(3)]
    threads, fds = threading.active_count(), _fds()
    assert len(_sqlite_threads() - base_workers) == 1
    many = [await SQLiteContextStore.open(path, f"s{i}") for i in range(3, 300)]
    # Not one per store (a leftover worker of an earlier test may end meanwhile: at most).
    assert threading.active_count() <= threads and _fds() <= fds
    stores = few + many
    assert len({id(s._db) for s in stores}) == 1
    await asyncio.gather(*(s.append(Message.user(s.session_id)) for s in stores))
    assert [m.text for m in await stores[123].get_history()] == ["s123"]
    # Another file, a private connection and ":memory:" get connections of their own.
    other = await SQLiteContextStore.open(tmp_path / "other.db", "x")
    private = await SQLiteContextStore.open(path, "s0", shared=False)
    memory = await SQLiteContextStore.open(":memory:", "m")
    assert len({id(stores[0]._db), id(other._db), id(private._db), id(memory._db)}) == 4
    assert len(_sqlite_threads() - base_workers) == 4
    assert [m.text for m in await private.get_history()] == ["s0"]
    for s in (other, private, memory):
        await s.close()
    # Closing all but one keeps the connection; closing the last releases it.
    for s in stores[1:]:
        await s.close()
    assert [m.text for m in await stores[0].get_history()] == ["s0"]
    await stores[0].close()
    with pytest.raises(StoreError, match="closed"):
        await stores[0].get_history()
    await _wait_for(lambda: threading.active_count() <= base_threads)
    assert _fds() <= base_fds
    # Opening again after the last close makes a fresh connection.
    async with await SQLiteContextStore.open(path, "s299") as again:
        assert [m.text for m in await again.get_history()] == ["s299"]


async def test_forks_and_sessions_share_the_connection_and_outlive_the_opener(
    tmp_path: Path,
) -> None:
    path = tmp_path / "forks.db"
    a = await SQLiteContextStore.open(path, "a")
    b = await SQLiteContextStore.open(path, "b")
    await a.append(Message.user("a0"))
    fork = await a.fork()
    other = await b.session("c")
    assert fork._db is a._db is b._db is other._db
    await a.close()
    await b.close()
    await fork.append(Message.user("fork1"))
    await other.append(Message.user("c0"))
    assert [m.text for m in await fork.get_history()] == ["a0", "fork1"]
    await fork.close()
    await other.close()
    async with await SQLiteContextStore.open(path, "a") as again:
        assert [m.text for m in await again.get_history()] == ["a0"]


def _child_appends(path: str) -> None:
    async def go() -> None:
        async with await SQLiteContextStore.open(path, "child") as store:
            await store.append(Message.user("from the child"))

    asyncio.run(go())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
async def test_a_forked_process_opens_its_own_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "osfork.db")
    async with await SQLiteContextStore.open(path, "parent") as parent:
        await parent.append(Message.user("before the fork"))
        ctx = multiprocessing.get_context("fork")
        proc = ctx.Process(target=_child_appends, args=(path,))
        proc.start()
        await asyncio.get_running_loop().run_in_executor(None, proc.join, 30)
        assert proc.exitcode == 0
        child = await parent.session("child")
        assert [m.text for m in await child.get_history()] == ["from the child"]
        await child.close()
        await parent.append(Message.user("parent goes on"))
        assert len(await parent.get_history()) == 2


class _Gate:
    """A connection wrapper that can hold the worker at ``COMMIT`` and fail chosen commits."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.at_commit = threading.Event()
        self.go = threading.Event()
        self.go.set()
        self.fail_next_commit = False
        self.commits = 0

    @property
    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        return self.conn.executemany(sql, rows)

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT":
            self.at_commit.set()
            self.go.wait(10)
            if self.fail_next_commit:
                self.fail_next_commit = False
                raise sqlite3.OperationalError("disk I/O error (injected)")
            self.commits += 1
        return self.conn.execute(sql, *args)

    def close(self) -> None:
        self.conn.close()


async def _hold_worker(store: SQLiteContextStore) -> threading.Event:
    """Occupy the shared worker until the returned event is set."""
    release, busy = threading.Event(), threading.Event()

    def block(conn: Any) -> None:
        busy.set()
        release.wait(10)

    asyncio.get_running_loop().create_task(store._run(block))
    await asyncio.get_running_loop().run_in_executor(None, busy.wait, 10)
    return release


async def test_appends_waiting_for_a_commit_go_into_the_next_single_transaction(
    tmp_path: Path,
) -> None:
    path = tmp_path / "group.db"
    stores = [await SQLiteContextStore.open(path, f"s{i}") for i in range(50)]
    db = stores[0]._db
    gate = _Gate(db.conn)  # type: ignore[arg-type]
    db.conn = gate  # type: ignore[assignment]
    try:
        release = await _hold_worker(stores[0])
        groups = db.groups
        first = [asyncio.create_task(s.append(Message.user("one"))) for s in stores]
        await asyncio.sleep(0.05)
        gate.go.clear()
        release.set()
        await asyncio.get_running_loop().run_in_executor(None, gate.at_commit.wait, 10)
        # The group is at COMMIT: nobody is acknowledged yet. Appends arriving now wait.
        assert not any(t.done() for t in first)
        second = [asyncio.create_task(s.append_many(agent_session(1))) for s in stores[:20]]
        await asyncio.sleep(0.05)
        assert not any(t.done() for t in first + second)
        gate.go.set()
        await asyncio.gather(*first, *second)
        assert db.groups - groups == 2  # 50 appends in one transaction, 20 in the next
        assert gate.commits == 2
        assert [m.text for m in await stores[7].get_history()] == [
            "one",
            *(m.text for m in agent_session(1)),
        ]
    finally:
        gate.go.set()
        for s in stores:
            await s.close()


async def test_a_failed_group_fails_exactly_its_own_writes(tmp_path: Path) -> None:
    path = tmp_path / "fail.db"
    stores = [
        await SQLiteContextStore.open(path, f"s{i}", max_message_bytes=1000) for i in range(6)
    ]
    db = stores[0]._db
    gate = _Gate(db.conn)  # type: ignore[arg-type]
    db.conn = gate  # type: ignore[assignment]
    try:
        await stores[5].append(Message.user("kept"))
        generation = await stores[5].generation()
        await stores[5].clear()  # the generation moved: a CAS on the old one is stale
        # Group 1: four appends, an over-size batch (refused in its caller, before I/O) and
        # a stale compaction (fails in its own savepoint). All but those two commit.
        release = await _hold_worker(stores[0])
        ok = [
            asyncio.create_task(s.append(Message.user(f"ok {i}"))) for i, s in enumerate(stores[:4])
        ]
        too_big = asyncio.create_task(
            stores[4].append_many([Message.user("fine"), Message.user("x" * 2000)])
        )
        stale = asyncio.create_task(stores[5].replace_prefix(0, [], generation))
        await asyncio.sleep(0.05)
        release.set()
        results = await asyncio.gather(*ok, too_big, stale, return_exceptions=True)
        assert results[:4] == [None] * 4
        assert isinstance(results[4], MessageTooLarge) and results[4].path == "messages[1]"
        assert isinstance(results[5], StaleGenerationError)
        assert await stores[4].get_history() == []

        # Group 2 fails at COMMIT: each of its writes gets its own StoreError, nothing of it
        # is stored; group 3, queued while group 2 was committing, commits.
        release = await _hold_worker(stores[0])
        doomed = [asyncio.create_task(s.append(Message.user("lost"))) for s in stores[:3]]
        await asyncio.sleep(0.05)
        gate.fail_next_commit = True
        gate.at_commit.clear()
        gate.go.clear()
        release.set()
        await asyncio.get_running_loop().run_in_executor(None, gate.at_commit.wait, 10)
        later = [asyncio.create_task(s.append(Message.user("later"))) for s in stores[3:5]]
        await asyncio.sleep(0.05)
        gate.go.set()
        failed = await asyncio.gather(*doomed, return_exceptions=True)
        assert all(isinstance(e, StoreError) and "injected" in str(e) for e in failed)
        assert len({id(e) for e in failed}) == 3  # each caller its own exception
        await asyncio.gather(*later)
        texts = [[m.text for m in await s.get_history()] for s in stores[:5]]
        assert texts == [["ok 0"], ["ok 1"], ["ok 2"], ["ok 3", "later"], ["later"]]
    finally:
        gate.go.set()
        for s in stores:
            await s.close()


async def test_a_call_queued_while_the_worker_takes_the_queue_still_runs(tmp_path: Path) -> None:
    # The worker takes the queued reads by swapping the list for a new one. A call that
    # picked its queue before locking it could append to the list just taken and never be
    # run (a load_log that waited forever, seen once in about ten runs of the many-sessions
    # benchmark). The interleaving is forced here: the worker drains right before the
    # caller's lock is taken.
    store = await SQLiteContextStore.open(tmp_path / "a.db", "s")
    try:
        await store.append(Message.user("hi"))
        db = store._db
        real = db._lock
        raced: list[bool] = []

        class DrainFirst:
            def __enter__(self) -> bool:
                if not raced and threading.current_thread() is threading.main_thread():
                    raced.append(True)
                    db._executor.submit(db._drain).result()  # the worker takes the queue now
                return real.__enter__()

            def __exit__(self, *exc: Any) -> None:
                real.__exit__(*exc)

        db._lock = DrainFirst()  # type: ignore[assignment]
        try:
            log = await asyncio.wait_for(store.load_log(), 10)
        finally:
            db._lock = real
        assert raced and log.to_list() == [Message.user("hi")]
    finally:
        await store.close()
