"""PostgresContextStore specifics, against a real PostgreSQL (``CTXTRIM_POSTGRES_DSN``).

The shared conformance and reliability suites cover the ``ContextStore`` contract; this file
covers what only PostgreSQL has: migrations taken under the advisory lock by concurrent
openers (LangGraph's ``PostgresSaver.setup()`` fails there), NUL in text columns (``jsonb``
rejects it), hostile ids as bound parameters, schema namespaces, idempotent
retries racing each other, gapless seqs across compactions, shared pools, and typed errors.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from ctxtrim import InvalidMessage, Message, StaleGenerationError
from ctxtrim.errors import StoreError

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
psycopg_pool = pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
from psycopg import sql  # noqa: E402

from ctxtrim.stores.postgres import MIGRATIONS, PostgresContextStore  # noqa: E402

from store_backends import PostgresBackend, open_worker  # noqa: E402

DSN = os.environ.get("CTXTRIM_POSTGRES_DSN", "")
pytestmark = pytest.mark.skipif(
    not DSN, reason="CTXTRIM_POSTGRES_DSN is not set (start one with scripts/services.sh)"
)


async def sql_rows(query: str, *params: object, schema: str | None = None) -> list[tuple[Any, ...]]:
    """Run one query on a fresh connection (tests inspect the tables directly)."""
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        q = sql.SQL(query).format(s=sql.Identifier(schema)) if schema else query
        cur = await conn.execute(q, params or None)
        return await cur.fetchall() if cur.description else []


async def drop(schema: str) -> None:
    await sql_rows("DROP SCHEMA IF EXISTS {s} CASCADE", schema=schema)


@pytest.fixture
async def schema() -> AsyncIterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    yield name
    await drop(name)


async def test_four_processes_opening_a_fresh_schema_at_once_all_succeed() -> None:
    """Migrations run under a per-schema advisory lock: every racer succeeds, the schema is
    created and migrated exactly once (2 trials, 4 spawned processes each)."""
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, mp_context=ctx) as pool:
        for _ in range(2):
            name = f"t_{uuid.uuid4().hex[:12]}"
            backend = PostgresBackend(DSN, name)
            start_at = time.time() + 1.0  # after every worker has imported ctxtrim
            futures = [pool.submit(open_worker, backend, "race", start_at) for _ in range(4)]
            ids = [f.result(timeout=60) for f in futures]
            try:
                versions = await sql_rows("SELECT version FROM {s}.ctxtrim_schema", schema=name)
                assert versions == [(v + 1,) for v in range(len(MIGRATIONS))]
                store = await backend.open("race")
                assert sorted(m.id or "" for m in await store.get_history()) == sorted(ids)
                await store.close()
            finally:
                await drop(name)


async def test_a_schema_migrated_by_a_newer_ctxtrim_is_refused(schema: str) -> None:
    store = await PostgresContextStore.open(DSN, "s", schema=schema)
    await store.append(Message.user("keep"))
    await store.close()
    await sql_rows("INSERT INTO {s}.ctxtrim_schema VALUES (999)", schema=schema)
    with pytest.raises(StoreError, match="version 999"):
        await PostgresContextStore.open(DSN, "s", schema=schema)
    rows = await sql_rows("SELECT count(*) FROM {s}.ctxtrim_messages", schema=schema)
    assert rows == [(1,)]


async def test_nul_survives_in_a_text_column(schema: str) -> None:
    message = Message.assistant(
        "a\x00b",
        tool_uses=[("t\x001", "f", {"k\x00": "v\x00"})],
        name="n\x00",
        meta={"x": "\x00"},
    )
    store = await PostgresContextStore.open(DSN, "nul\x00id", schema=schema)
    await store.append(message)
    await store.close()
    types = await sql_rows(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = 'ctxtrim_messages'"
        " AND column_name IN ('payload', 'session_id') ORDER BY column_name",
        schema,
    )
    assert types == [("payload", "text"), ("session_id", "bytea")]
    [(payload,)] = await sql_rows("SELECT payload FROM {s}.ctxtrim_messages", schema=schema)
    assert "\\u0000" in payload and "\x00" not in payload  # JSON-escaped, never raw
    reopened = await PostgresContextStore.open(DSN, "nul\x00id", schema=schema)
    assert await reopened.get_history() == [message]
    assert [i.session_id for i in await reopened.list_sessions()] == ["nul\x00id"]
    await reopened.close()


async def test_hostile_ids_are_data_and_bad_schema_names_are_refused(schema: str) -> None:
    evil = "x'); DROP TABLE ctxtrim_messages; --"
    store = await PostgresContextStore.open(DSN, evil, schema=schema)
    await store.append(Message.user(evil, id=evil))
    assert [m.text for m in await store.get_history()] == [evil]
    assert [i.session_id for i in await store.list_sessions()] == [evil]
    await store.close()
    for bad in ["public; DROP TABLE x", "Public", "a-b", "", "x" * 42, '"q"']:
        with pytest.raises(ValueError, match="schema"):
            await PostgresContextStore.open(DSN, "s", schema=bad)


async def test_schemas_are_separate_namespaces(schema: str) -> None:
    other = schema + "_b"
    a = await PostgresContextStore.open(DSN, "same", schema=schema)
    b = await PostgresContextStore.open(DSN, "same", schema=other)
    try:
        await a.append(Message.user("in a"))
        assert await b.get_history() == []
        assert [(i.session_id, i.message_count) for i in await b.list_sessions()] == [("same", 0)]
    finally:
        await a.close()
        await b.close()
        await drop(other)


async def test_retried_appends_are_stored_once_even_when_they_race(schema: str) -> None:
    stores = [
        await PostgresContextStore.open(DSN, "s", schema=schema, idempotent_ids=True)
        for _ in range(4)
    ]
    batch = [Message.user(f"m{i}", id=f"id{i}") for i in range(20)]
    # four handles send the same batch at once: the unique index catches the losers, who
    # re-check and store nothing
    await asyncio.gather(*(s.append_many(batch) for s in stores))
    await stores[1].append(batch[3])
    await stores[2].append_many([*batch[15:], Message.user("new", id="id20")])
    history = await stores[0].get_history()
    assert history == [*batch, Message.user("new", id="id20")]
    with pytest.raises(InvalidMessage) as err:
        await stores[0].append_many([Message.user("x", id="id99"), Message.user("y", id="id0")])
    assert err.value.path == "messages[1].id"
    assert await stores[3].get_history() == history
    # a retry of a message that compaction already replaced is still recognised
    snap = await stores[0].snapshot()
    await stores[0].replace_prefix(10, [Message.user("summary of 0-9")], snap.generation)
    await stores[1].append_many(batch[:3])
    assert len(await stores[0].get_history()) == len(history) - 9
    # a fork carries the ids; clear forgets them
    child = await stores[0].fork()
    await child.append(batch[0])
    assert len(await child.get_history()) == len(history) - 9
    await stores[0].clear()
    await stores[0].append(batch[0])
    assert await stores[0].get_history() == [batch[0]]
    for s in [*stores, child]:
        await s.close()


async def test_seqs_stay_gapless_across_compactions_and_clears(schema: str) -> None:
    store = await PostgresContextStore.open(DSN, "s", schema=schema)
    await store.append_many([Message.user(f"m{i}") for i in range(10)])
    for upto, summary in [(4, 1), (3, 0), (2, 3)]:
        snap = await store.snapshot()
        await store.append(Message.user("meanwhile"))
        await store.replace_prefix(upto, [Message.user("sum")] * summary, snap.generation)
    await store.clear()
    await store.append_many([Message.user("after clear")] * 3)
    snap = await store.snapshot()
    await store.replace_prefix(1, [], snap.generation)
    [(first, nxt)] = await sql_rows(
        "SELECT first_seq, next_seq FROM {s}.ctxtrim_sessions", schema=schema
    )
    seqs = [r[0] for r in await sql_rows("SELECT seq FROM {s}.ctxtrim_messages", schema=schema)]
    assert sorted(seqs) == list(range(first, nxt)) and len(seqs) == 2
    with pytest.raises(StaleGenerationError):
        await store.replace_prefix(0, [], snap.generation)
    await store.close()


async def test_a_caller_pool_is_shared_and_left_open(schema: str) -> None:
    pool = psycopg_pool.AsyncConnectionPool(DSN, min_size=1, max_size=2, open=False)
    await pool.open(wait=True)
    try:
        a = await PostgresContextStore.open(DSN, "a", schema=schema, pool=pool)
        child = await a.fork()
        await a.append(Message.user("x"))
        await a.close()
        await child.append(Message.user("y"))  # the fork still works: the pool is open
        assert [m.text for m in await child.get_history()] == ["y"]
        await child.close()
        async with pool.connection() as conn:
            assert (await (await conn.execute("SELECT 1")).fetchone()) == (1,)
    finally:
        await pool.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_down_server_is_a_store_error_with_the_cause() -> None:
    dsn = f"postgresql://postgres@127.0.0.1:{_closed_port()}/postgres"
    with pytest.raises(StoreError, match="unreachable") as err:
        await PostgresContextStore.open(dsn, "s", connect_timeout=2)
    assert isinstance(err.value.__cause__, psycopg.OperationalError)


async def test_a_closed_store_refuses_calls(schema: str) -> None:
    store = await PostgresContextStore.open(DSN, "s", schema=schema)
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.append(Message.user("late"))


async def test_a_handle_never_splices_a_session_deleted_and_created_again(schema: str) -> None:
    """Session rows deleted by a retention job, then the session created again by another
    process: a long-lived handle reads the new session as itself (never its tail pasted onto
    the cached old head), and a compaction computed from the old view is refused."""
    a = await PostgresContextStore.open(DSN, "chat-1", schema=schema)
    b = await PostgresContextStore.open(DSN, "chat-1", schema=schema)
    try:
        await a.append_many(
            [Message.user("old-0"), Message.assistant("old-1"), Message.user("old-2")]
        )
        assert [m.text for m in await a.get_history()] == ["old-0", "old-1", "old-2"]
        _, old_generation = await a.snapshot()
        await sql_rows("DELETE FROM {s}.ctxtrim_sessions", schema=schema)  # cascades
        assert await a.get_history() == [] and await a.generation() == 0
        new = [Message.user(f"new-{i}") for i in range(5)]
        for m in new:
            await b.append(m)
        assert await a.get_history() == new
        assert (await a.snapshot())[0] == new
        with pytest.raises(StaleGenerationError):
            await a.replace_prefix(2, [Message.user("summary of old")], old_generation)
        assert await b.get_history() == new
    finally:
        await a.close()
        await b.close()


async def test_a_schema_created_before_session_identity_migrates(schema: str) -> None:
    """A schema at version 1 (sessions starting at generation 0) takes migration 2: its
    sessions keep their generations, and a session created afterwards starts elsewhere."""
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        await conn.execute("CREATE TABLE ctxtrim_schema (version integer PRIMARY KEY)")
        await conn.execute(MIGRATIONS[0])
        await conn.execute("INSERT INTO ctxtrim_schema (version) VALUES (1)")
        await conn.execute("INSERT INTO ctxtrim_sessions (session_id) VALUES ('old'::bytea)")
    old = await PostgresContextStore.open(DSN, "old", schema=schema)
    try:
        assert await old.generation() == 0
        versions = await sql_rows("SELECT version FROM {s}.ctxtrim_schema", schema=schema)
        assert sorted(versions) == [(v + 1,) for v in range(len(MIGRATIONS))]
        await old.append(Message.user("x"))
        assert await old.generation() == 0  # an existing session keeps its numbers
        fresh = await old.fork()
        other = await PostgresContextStore.open(DSN, "new", schema=schema)
        await other.append(Message.user("y"))
        assert await other.generation() > 10**15  # microseconds since 1970
        for store in (fresh, other):
            await store.close()
    finally:
        await old.close()


async def test_a_statement_timeout_is_reported_as_a_timeout_not_as_unreachable(
    schema: str,
) -> None:
    store = await PostgresContextStore.open(DSN, "slow", schema=schema, timeout=0.5)
    try:
        async with store._conn() as conn:  # the store's own connection, as a slow call has it
            with pytest.raises(psycopg.errors.QueryCanceled) as raw:
                await conn.execute("SELECT pg_sleep(5)")
        from ctxtrim.stores._postgres_db import _store_error

        error = _store_error(raw.value)
        assert isinstance(error, StoreError) and "cancelled the statement" in str(error)
        assert "unreachable" not in str(error)
    finally:
        await store.close()
