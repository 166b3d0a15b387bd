"""Reliability of the persistent stores under processes, crashes and hostile input
(concurrent writers and prefix-consistent readers, kill -9 of a writer mid-append or
mid-batch, disk full, the compaction CAS, concurrent first open, session-id separation,
bad input). Real files and real processes; no mocks.

The generic tests run on every backend of ``PERSISTENT_BACKENDS``; the crash and disk-full
tests are SQLite's (a server backend's crash tests kill the server instead).
"""

from __future__ import annotations

import asyncio
import hashlib
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from ctxtrim import (
    InvalidMessage,
    Message,
    MessageTooLarge,
    SQLiteContextStore,
    StaleGenerationError,
    StoreError,
)
from ctxtrim.stores.sqlite import SCHEMA_VERSION

from servers import report
from store_backends import (
    PERSISTENT_BACKENDS,
    Backend,
    append_worker,
    open_worker,
    opened,
    read_worker,
    sqlite_backend,
)

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture(params=PERSISTENT_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    factory: Callable[[Path], Backend] = request.param
    made = factory(tmp_path)
    yield made
    asyncio.run(made.cleanup())


def _is_contiguous_slice(part: list[str], whole: list[str]) -> bool:
    if not part:
        return True
    try:
        start = whole.index(part[0])
    except ValueError:
        return False
    return whole[start : start + len(part)] == part


# --------------------------------------------------------------------------------------------
# T1/T2: several processes append to one session while another one reads


async def test_concurrent_writers_lose_nothing_and_readers_see_prefixes(
    backend: Backend, request: pytest.FixtureRequest
) -> None:
    session, writers, per_writer = "shared", 4, 120
    batches = [1, 3, 1, 5]  # writers 1 and 3 use atomic append_many
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(writers + 1, mp_context=SPAWN) as pool:
        reader = loop.run_in_executor(
            pool, read_worker, backend, session, 30.0, writers * per_writer
        )
        jobs = [
            loop.run_in_executor(pool, append_worker, backend, session, w, per_writer, batches[w])
            for w in range(writers)
        ]
        assert await asyncio.gather(*jobs) == [per_writer] * writers
        seen = await reader

    async with opened(backend, session) as store:
        final = [m.id or "" for m in await store.get_history()]
    assert len(final) == writers * per_writer == len(set(final))  # none lost, none doubled
    for w in range(writers):  # each writer's messages in the order it wrote them
        assert [i for i in final if i.startswith(f"w{w}-")] == [
            f"w{w}-{i}" for i in range(per_writer)
        ]
    for w in (1, 3):  # a batch is contiguous: nobody's append lands inside it
        for start in range(0, per_writer, batches[w]):
            ids = [f"w{w}-{i}" for i in range(start, min(start + batches[w], per_writer))]
            assert _is_contiguous_slice(ids, final)
    full = [s for s in seen if s[:1] != ["tail"]]
    tails = [s[1:] for s in seen if s[:1] == ["tail"]]
    assert len(full) > 5, "the reader should have polled while the writers ran"
    assert [s for s in full if final[: len(s)] != s] == []  # every read is a prefix
    assert [t for t in tails if not _is_contiguous_slice(t, final)] == []
    report(
        request,
        "4 concurrent writer processes",
        backend.name,
        acknowledged=writers * per_writer,
        lost=writers * per_writer - len(set(final)),
        duplicated=len(final) - len(set(final)),
        unknown=0,
        reads=len(seen),
        non_prefix_reads=len([s for s in full if final[: len(s)] != s]),
    )


# --------------------------------------------------------------------------------------------
# T9 / stale CAS across connections


async def test_compaction_keeps_appends_from_another_connection(backend: Backend) -> None:
    async with opened(backend, "s") as compactor, opened(backend, "s") as writer:
        await compactor.append_many([Message.user(f"old {i}") for i in range(6)])
        messages, generation = await compactor.snapshot()
        await writer.append(Message.user("appended by another connection meanwhile"))
        await compactor.replace_prefix(len(messages), [Message.user("summary")], generation)
        want = ["summary", "appended by another connection meanwhile"]
        assert [m.text for m in await writer.get_history()] == want


async def test_stale_replace_prefix_is_refused_across_connections(backend: Backend) -> None:
    async with opened(backend, "s") as compactor, opened(backend, "s") as other:
        await compactor.append_many([Message.user(f"m{i}") for i in range(4)])
        _, generation = await compactor.snapshot()
        await other.clear()
        await other.append(Message.user("after the clear"))
        with pytest.raises(StaleGenerationError) as err:
            await compactor.replace_prefix(2, [Message.user("summary")], generation)
        assert err.value.expected == generation
        assert [m.text for m in await compactor.get_history()] == ["after the clear"]
        # A rewrite by another connection also makes the snapshot stale.
        _, generation = await compactor.snapshot()
        await other.replace_prefix(1, [Message.user("their summary")], generation)
        with pytest.raises(StaleGenerationError):
            await compactor.replace_prefix(1, [Message.user("mine")], generation)
        assert [m.text for m in await compactor.get_history()] == ["their summary"]


# --------------------------------------------------------------------------------------------
# T13: session ids that collide in naive key schemes


async def test_list_sessions_is_per_namespace(
    backend: Backend, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The documented way to keep tenants apart: one namespace (prefix, schema, file) each."""
    factory = request.node.callspec.params["backend"]
    other = factory(tmp_path)
    try:
        async with opened(backend, "tenant-a chat") as a, opened(other, "tenant-b chat") as b:
            await a.append(Message.user("secret of tenant a"))
            await b.append(Message.user("secret of tenant b"))
            assert [(i.session_id, i.preview) for i in await a.list_sessions()] == [
                ("tenant-a chat", "secret of tenant a")
            ]
            assert [i.session_id for i in await b.list_sessions()] == ["tenant-b chat"]
    finally:
        await other.cleanup()


TRICKY_IDS = ["a", "a:messages", "a:meta", "*", "a}", "{a}", "a\x00", "a\x00b", "é", "k" * 1024]


async def test_session_ids_never_touch_each_other(backend: Backend) -> None:
    stores = [await backend.open(sid) for sid in TRICKY_IDS]
    try:
        for n, store in enumerate(stores):
            await store.append_many([Message.user(f"{n}:{k}") for k in range(n + 1)])
            await store.set_context_tokens(n, 2 * n)
        await stores[0].clear()  # "a"
        await stores[1].replace_prefix(1, [Message.user("1:summary")], await stores[1].generation())
        fork = await stores[4].fork()  # "a}"
        await fork.append(Message.user("fork only"))
        for n, store in enumerate(stores):
            if n == 0:
                want = []
            elif n == 1:
                want = ["1:summary", "1:1"]
            else:
                want = [f"{n}:{k}" for k in range(n + 1)]
            assert [m.text for m in await store.get_history()] == want, TRICKY_IDS[n]
            assert await store.get_context_tokens() == ((0, 0) if n == 0 else (n, 2 * n))
        infos = {info.session_id: info for info in await stores[2].list_sessions()}
        assert set(infos) == {*TRICKY_IDS, fork.session_id}  # exact ids, nothing foreign
        assert infos["a\x00b"].message_count == 8 and infos["k" * 1024].message_count == 10
        await fork.close()
    finally:
        for store in stores:
            await store.close()


# --------------------------------------------------------------------------------------------
# T14: bad input gets a typed error and changes nothing


def _mutated(meta_value: object) -> Message:
    """A message that was valid when built and broken afterwards through its meta dict, by
    code that forces its way past the read-only dict (its mutators raise)."""
    message = Message.user("ok", meta={"k": 1})
    assert message.meta is not None
    with pytest.raises(TypeError):
        message.meta["k"] = meta_value
    dict.__setitem__(message.meta, "k", meta_value)
    return message


async def test_bad_input_gets_a_typed_error_and_changes_nothing(backend: Backend) -> None:
    async with opened(backend, "victim") as store:
        await store.append_many([Message.user("keep me"), Message.assistant("and me")])
        before = (await store.snapshot(), await store.get_context_tokens())
        # Refused at construction, before any store sees them:
        with pytest.raises(InvalidMessage, match="role"):
            Message("banana", [])  # type: ignore[arg-type]
        with pytest.raises(InvalidMessage, match="surrogate"):
            Message.user("lone \ud800 surrogate")
        with pytest.raises(InvalidMessage):
            Message.assistant(tool_uses=[("t1", "f", {"x": {1, 2}})])
        # Refused by the store:
        bad: list[tuple[object, type[Exception]]] = [
            ({"role": "user", "content": [{"type": "text", "text": "dict"}]}, InvalidMessage),
            ({"role": "banana", "content": []}, InvalidMessage),
            ("plain text", InvalidMessage),
            (None, InvalidMessage),
            (_mutated("lone \udfff surrogate"), InvalidMessage),
            (_mutated({1, 2, 3}), InvalidMessage),
            (_mutated(object()), InvalidMessage),
            (Message.user("x" * (16 * 1024 * 1024 + 1)), MessageTooLarge),
        ]
        for item, error in bad:
            with pytest.raises(error) as err:
                await store.append(item)  # type: ignore[arg-type]
            assert err.value.path == "message"  # type: ignore[attr-defined]  # every error here is a StoreError, which has a path
            with pytest.raises(error) as err:
                await store.append_many([Message.user("fine"), item])  # type: ignore[list-item]
            assert err.value.path == "messages[1]"  # type: ignore[attr-defined]  # every error here is a StoreError, which has a path
            with pytest.raises(error):
                await store.replace_prefix(0, [item], before[0].generation)  # type: ignore[list-item]
        assert (await store.snapshot(), await store.get_context_tokens()) == before
        async with opened(backend, "victim") as other:  # nothing reached the database either
            assert await other.snapshot() == before[0]


# --------------------------------------------------------------------------------------------
# T12: several processes open a fresh namespace at once


def test_concurrent_first_open_migrates_cleanly(tmp_path: Path) -> None:
    trials, procs = 4, 4
    with ProcessPoolExecutor(procs, mp_context=SPAWN) as pool:
        list(pool.map(abs, range(procs)))  # warm the workers: the race starts together
        for trial in range(trials):
            backend = sqlite_backend(tmp_path)
            start_at = time.time() + 0.3
            ids = list(pool.map(open_worker, [backend] * procs, ["s"] * procs, [start_at] * procs))
            assert len(set(ids)) == procs

            async def check(backend: Backend = backend) -> list[str]:
                async with opened(backend, "s") as store:
                    return sorted(m.id or "" for m in await store.get_history())

            assert asyncio.run(check()) == sorted(ids), trial
            db = sqlite3.connect(backend.path)  # type: ignore[attr-defined]
            try:
                assert db.execute("SELECT version FROM ctxtrim_schema").fetchall() == [
                    (SCHEMA_VERSION,)
                ]
            finally:
                db.close()


# --------------------------------------------------------------------------------------------
# T3/T6: kill -9 of a writer mid-append (SQLite)

_WRITER = textwrap.dedent(
    """
    import asyncio, hashlib, random, sys
    from ctxtrim import Message, SQLiteContextStore

    SIZES = [1, 100, 2_000, 20_000, 200_000]

    def body(mid, size):
        seed = hashlib.sha256(mid.encode()).hexdigest()
        return (seed * (size // 64 + 1))[:size]

    async def main(path, sync, first):
        store = await SQLiteContextStore.open(path, "crash", synchronous=sync)
        rng = random.Random(first)
        print("ready", flush=True)
        n = first
        while True:
            batch = []
            for _ in range(rng.choice([1, 1, 2, 4])):
                mid = f"m{n}"
                size = rng.choices(SIZES, weights=[30, 30, 20, 15, 5])[0]
                batch.append(Message.user(body(mid, size), id=mid, meta={"batch": first + n}))
                n += 1
            if len(batch) == 1:
                await store.append(batch[0])
            else:
                await store.append_many(batch)
            # Acknowledge only after the append returned.
            print(" ".join(m.id for m in batch), flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)


def _expected_body(mid: str, size: int) -> str:
    seed = hashlib.sha256(mid.encode()).hexdigest()
    return (seed * (size // 64 + 1))[:size]


def test_kill_9_of_a_writer_loses_no_acknowledged_append(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    path = str(tmp_path / "crash.db")
    rng = random.Random(1234)
    acked: set[str] = set()
    rounds = 24
    for r in range(rounds):
        sync = "FULL" if r % 2 == 0 else "NORMAL"  # both survive a process crash
        proc = subprocess.Popen(
            [sys.executable, "-c", _WRITER, path, sync, str(r * 1_000_000)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.02, 0.3))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        # Only complete lines are acknowledgements (a kill can cut a line short).
        lines = out.split("\n")[:-1]
        acked |= {mid for line in lines for mid in line.split()}

        raw = sqlite3.connect(path)
        try:
            assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            seqs = [s for (s,) in raw.execute("SELECT seq FROM ctxtrim_messages ORDER BY seq")]
            assert seqs == list(range(len(seqs)))  # gapless
        finally:
            raw.close()

        async def history() -> list[Message]:
            async with await SQLiteContextStore.open(path, "crash") as store:
                return await store.get_history()  # every row's checksum and decode checked

        stored = asyncio.run(history())
        ids = [m.id or "" for m in stored]
        assert acked <= set(ids), f"round {r}: lost {sorted(acked - set(ids))[:5]}"
        assert len(ids) == len(set(ids))
        batches: dict[int, list[str]] = {}
        for m in stored:  # no torn message: each body is exactly what was written
            mid = m.id or ""
            assert m.text == _expected_body(mid, len(m.text))
            assert m.meta is not None
            batches.setdefault(m.meta["batch"], []).append(mid)
        for members in batches.values():  # a batch is there whole or not at all
            first = int(members[0][1:])
            assert members == [f"m{first + k}" for k in range(len(members))]
    assert len(acked) > rounds  # the writer did get work done between kills
    report(
        request,
        f"writer kill -9 x{rounds} (messages)",
        "sqlite",
        acknowledged=len(acked),
        lost=len(acked - set(ids)),
        duplicated=len(ids) - len(set(ids)),
        unknown=len(set(ids) - acked),
    )


# T5: with idempotent ids, a client that retries everything unacknowledged after a crash
# stores each message exactly once (a commit whose ack the kill swallowed is skipped).

_RETRYING_WRITER = textwrap.dedent(
    """
    import asyncio, hashlib, sys
    from ctxtrim import Message, SQLiteContextStore

    def h(text):
        return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)

    def body(mid):
        size = [1, 100, 2_000, 20_000][h(mid) % 4]
        seed = hashlib.sha256(mid.encode()).hexdigest()
        return (seed * (size // 64 + 1))[:size]

    async def main(path, n):
        store = await SQLiteContextStore.open(path, "retry", idempotent_ids=True)
        print("ready", flush=True)
        while True:  # batch boundaries depend only on the first id: a retry resends the same
            ids = [f"m{n + k}" for k in range([1, 2, 3, 4][h(str(n)) % 4])]
            await store.append_many(
                [Message.user(body(i), id=i, meta={"batch": n}) for i in ids]
            )
            print(" ".join(ids), flush=True)
            n += len(ids)

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


def test_kill_9_then_retry_with_idempotent_ids_stores_each_message_once(tmp_path: Path) -> None:
    path = str(tmp_path / "retry.db")
    rng = random.Random(99)
    acked: list[int] = []
    rounds = 12
    for r in range(rounds):
        first = max(acked, default=-1) + 1  # resend everything not acknowledged
        proc = subprocess.Popen(
            [sys.executable, "-c", _RETRYING_WRITER, path, str(first)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.02, 0.2))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        acked += [int(mid[1:]) for line in out.split("\n")[:-1] for mid in line.split()]

        async def history() -> list[Message]:
            async with await SQLiteContextStore.open(path, "retry") as store:
                return await store.get_history()

        stored = asyncio.run(history())
        ids = [m.id for m in stored]
        # Exactly once each, in order, nothing missing: m0, m1, ... (some maybe unacked).
        assert ids == [f"m{i}" for i in range(len(ids))], f"round {r}"
        assert set(acked) <= set(range(len(ids)))
        groups: dict[int, int] = {}
        for m in stored:
            assert m.meta is not None
            groups[m.meta["batch"]] = groups.get(m.meta["batch"], 0) + 1
        starts = sorted(groups)
        for a, b in zip(starts, [*starts[1:], len(ids)], strict=True):
            assert groups[a] == b - a  # every batch whole
    assert len(acked) > rounds


# --------------------------------------------------------------------------------------------
# T7: disk full (RLIMIT_FSIZE in the writer) surfaces as StoreError; the file stays intact

_DISK_FULL = textwrap.dedent(
    """
    import asyncio, os, resource, sys
    from ctxtrim import Message, SQLiteContextStore, StoreError

    async def main(path):
        store = await SQLiteContextStore.open(path, "full")
        for i in range(3):
            await store.append(Message.user(f"before {i}", id=f"b{i}"))
            print("ack", f"b{i}", flush=True)
        size = max(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 200_000, hard))
        try:
            for i in range(1000):
                await store.append_many(
                    [Message.user("z" * 30_000, id=f"f{i}-{k}") for k in range(2)]
                )
                print("ack", f"f{i}-0", f"f{i}-1", flush=True)
        except StoreError as e:
            print("error", type(e).__name__, str(e).replace("\\n", " "), flush=True)
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
        await store.append(Message.user("after", id="after"))  # still usable
        print("ack", "after", flush=True)
        await store.close()

    asyncio.run(main(sys.argv[1]))
    """
)


def test_disk_full_is_a_typed_error_and_leaves_the_file_intact(tmp_path: Path) -> None:
    path = str(tmp_path / "full.db")
    out = subprocess.run(
        [sys.executable, "-c", _DISK_FULL, path], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    lines = [line.split() for line in out.stdout.splitlines()]
    errors = [line for line in lines if line[0] == "error"]
    assert len(errors) == 1 and errors[0][1] == "StoreError", out.stdout
    acked = [mid for line in lines if line[0] == "ack" for mid in line[1:]]
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        raw.close()

    async def history() -> list[str]:
        async with await SQLiteContextStore.open(path, "full") as store:
            return [m.id or "" for m in await store.get_history()]

    assert asyncio.run(history()) == acked  # all acknowledged, nothing half-written


# --------------------------------------------------------------------------------------------
# Closed stores and busy databases fail loudly


async def test_a_held_write_lock_times_out_as_store_error(tmp_path: Path) -> None:
    path = str(tmp_path / "busy.db")
    async with await SQLiteContextStore.open(path, "s", busy_timeout=0.2) as store:
        blocker = sqlite3.connect(path, isolation_level=None)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreError, match="locked"):
                await store.append(Message.user("waits 0.2 s, then gives up"))
            blocker.execute("ROLLBACK")
        finally:
            blocker.close()
        await store.append(Message.user("now it goes through"))
        assert [m.text for m in await store.get_history()] == ["now it goes through"]
