"""Session identity against a second process, on real servers: a long-lived handle has read
(and cached) a session; the session vanishes — its Redis ``ttl`` expires, Redis restarts
without persistence, its keys are deleted, the PostgreSQL schema is dropped and created
again, a retention job deletes its rows — and **another process**, through a store of its
own, creates the session anew. The handle must then read the new session as itself (never
the new tail pasted onto its cached old head, which it used to do), read a vanished session
as empty, and have a compaction computed from the old view refused with
``StaleGenerationError`` rather than applied over the other process's messages.

Each scenario reports its counts; the in-process versions live in ``test_store_redis.py``
and ``test_store_postgres.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ctxtrim import ContextStore, Message, StaleGenerationError, StoreError

from servers import Server, find_redis, redis_server, report
from store_backends import open_server_store

REDIS_URL = os.environ.get("CTXTRIM_REDIS_URL", "")
POSTGRES_DSN = os.environ.get("CTXTRIM_POSTGRES_DSN", "")
OLD = ["old-0", "old-1", "old-2"]
NEW = [f"new-{i}" for i in range(5)]

#: The other process: opens its own store on the session, appends NEW one by one, prints
#: the history it reads back as JSON.
_OTHER = r"""
import asyncio, json, sys
sys.path.insert(0, sys.argv[1])
from ctxtrim import Message
from store_backends import open_server_store

async def main(kind, url, namespace, session):
    store = await open_server_store(kind, url, session, namespace)
    try:
        for text in json.loads(sys.argv[6]):
            await store.append(Message.user(text))
        print(json.dumps([m.text for m in await store.get_history()]))
    finally:
        await store.close()

asyncio.run(main(*sys.argv[2:6]))
"""


def _other_process(kind: str, url: str, namespace: str, session: str) -> list[str]:
    """Run the other process to completion; the history it read back."""
    tests = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", _OTHER, tests, kind, url, namespace, session, json.dumps(NEW)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    history: list[str] = json.loads(proc.stdout)
    return history


def _texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


async def _eventually(call: Callable[[], Awaitable[Any]]) -> Any:
    """``call()`` once the server answers again (a restart costs the handle's client a
    reconnect): StoreErrors for up to 10 s are retried."""
    for _ in range(100):
        try:
            return await call()
        except StoreError:
            await asyncio.sleep(0.1)
    return await call()


async def _scenario(
    kind: str,
    url: str,
    namespace: str,
    vanish: Callable[[], Awaitable[None]],
    **options: Any,
) -> dict[str, int]:
    """The long-lived handle reads the old session; ``vanish()`` makes it vanish; the other
    process creates it anew. Returns the counts."""
    session = f"chat-{uuid.uuid4().hex[:8]}"
    a: ContextStore = await open_server_store(kind, url, session, namespace, **options)
    try:
        await a.append_many([Message.user(t) for t in OLD])
        assert _texts(await a.get_history()) == OLD  # read and cached
        _, old_generation = await a.snapshot()
        await vanish()
        # A vanished session reads as empty, at generation 0.
        assert await _eventually(a.get_history) == []
        assert await a.generation() == 0
        assert _texts(await a.get_history()) == []
        theirs = _other_process(kind, url, namespace, session)
        assert theirs == NEW
        mine = _texts(await a.get_history())
        spliced = int(mine != NEW)
        assert mine == NEW, mine  # was OLD + NEW[3:]: the new tail on the cached old head
        assert _texts((await a.snapshot())[0]) == NEW
        assert _texts((await a.load_log()).to_list()) == NEW
        with pytest.raises(StaleGenerationError):
            await a.replace_prefix(2, [Message.user("summary of old")], old_generation)
        after = _texts(await a.get_history())
        assert after == NEW  # the other process's messages are untouched
        # And the handle goes on writing into the new session.
        await a.append(Message.assistant("reply"))
        assert _texts(await a.get_history()) == [*NEW, "reply"]
        return {
            "acknowledged": len(OLD) + len(NEW) + 1,
            "lost": 0,
            "duplicated": 0,
            "unknown": 0,
            "spliced_reads": spliced,
            "stale_swaps_applied": 0,
        }
    finally:
        await a.close()


# --------------------------------------------------------------------------------------------
# Redis


def _redis_client(url: str) -> Any:
    redis_asyncio = pytest.importorskip("redis.asyncio", reason="the redis extra is not installed")
    return redis_asyncio.Redis.from_url(url)


@pytest.fixture
def redis_url() -> str:
    if not REDIS_URL:
        pytest.skip("CTXTRIM_REDIS_URL is not set")
    pytest.importorskip("redis.asyncio", reason="the redis extra is not installed")
    return REDIS_URL


def test_redis_ttl_expiry_then_another_process(
    redis_url: str, request: pytest.FixtureRequest
) -> None:
    namespace = f"ident-{uuid.uuid4().hex[:8]}"

    async def expire() -> None:
        await asyncio.sleep(1.5)  # ttl=1: the session's keys expire

    counts = asyncio.run(_scenario("redis", redis_url, namespace, expire, ttl=1))
    report(request, "ttl expiry, then another process", "redis", **counts)


def test_redis_keys_deleted_then_another_process(
    redis_url: str, request: pytest.FixtureRequest
) -> None:
    namespace = f"ident-{uuid.uuid4().hex[:8]}"

    async def delete_keys() -> None:
        client = _redis_client(redis_url)
        try:
            async for key in client.scan_iter(match=f"{namespace}:*"):
                await client.delete(key)
        finally:
            await client.aclose()

    counts = asyncio.run(_scenario("redis", redis_url, namespace, delete_keys))
    report(request, "keys deleted, then another process", "redis", **counts)


@contextmanager
def _redis_without_persistence() -> Iterator[Server]:
    found, why = find_redis()
    if found is None:
        pytest.skip(why)
    pytest.importorskip("redis.asyncio", reason="the redis extra is not installed")
    workdir = Path(tempfile.mkdtemp(prefix="ctxtrim-redis-"))
    server = redis_server(workdir, "--appendonly", "no")  # and --save "": nothing survives
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def test_redis_restart_without_persistence_then_another_process(
    request: pytest.FixtureRequest,
) -> None:
    with _redis_without_persistence() as server:

        async def restart() -> None:
            server.stop()
            server.start()

        counts = asyncio.run(_scenario("redis", server.url, "ident", restart))
    report(request, "restart without persistence, then another process", "redis", **counts)


# --------------------------------------------------------------------------------------------
# PostgreSQL


@pytest.fixture
def postgres_dsn() -> str:
    if not POSTGRES_DSN:
        pytest.skip("CTXTRIM_POSTGRES_DSN is not set")
    pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
    return POSTGRES_DSN


async def _sql(dsn: str, query: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        await conn.execute(sql.SQL(query).format(s=sql.Identifier(schema)))


def test_postgres_schema_dropped_and_created_again_by_another_process(
    postgres_dsn: str, request: pytest.FixtureRequest
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"

    async def drop_schema() -> None:
        await _sql(postgres_dsn, "DROP SCHEMA {s} CASCADE", schema)

    async def run() -> dict[str, int]:
        # With the schema gone, the handle's reads fail (no table) until the other process
        # creates it again: the scenario's "vanished" read is taken after that.
        session = f"chat-{uuid.uuid4().hex[:8]}"
        a = await open_server_store("postgres", postgres_dsn, session, schema)
        try:
            await a.append_many([Message.user(t) for t in OLD])
            assert _texts(await a.get_history()) == OLD
            _, old_generation = await a.snapshot()
            await drop_schema()
            with pytest.raises(StoreError):
                await a.get_history()  # the relation is gone: an error, not old data
            theirs = _other_process("postgres", postgres_dsn, schema, session)
            assert theirs == NEW
            mine = _texts(await a.get_history())
            assert mine == NEW, mine
            with pytest.raises(StaleGenerationError):
                await a.replace_prefix(2, [Message.user("summary of old")], old_generation)
            assert _texts(await a.get_history()) == NEW
            await a.append(Message.assistant("reply"))
            assert _texts(await a.get_history()) == [*NEW, "reply"]
            return {
                "acknowledged": len(OLD) + len(NEW) + 1,
                "lost": 0,
                "duplicated": 0,
                "unknown": 0,
                "spliced_reads": int(mine != NEW),
                "stale_swaps_applied": 0,
            }
        finally:
            await a.close()
            await _sql(postgres_dsn, "DROP SCHEMA IF EXISTS {s} CASCADE", schema)

    counts = asyncio.run(run())
    report(request, "schema dropped and re-created by another process", "postgres", **counts)


def test_postgres_rows_deleted_by_a_retention_job_then_another_process(
    postgres_dsn: str, request: pytest.FixtureRequest
) -> None:
    schema = f"t_{uuid.uuid4().hex[:12]}"

    async def retention_job() -> None:  # what a cron job deleting old sessions does
        await _sql(postgres_dsn, "DELETE FROM {s}.ctxtrim_sessions", schema)

    async def run() -> dict[str, int]:
        try:
            return await _scenario("postgres", postgres_dsn, schema, retention_job)
        finally:
            await _sql(postgres_dsn, "DROP SCHEMA IF EXISTS {s} CASCADE", schema)

    counts = asyncio.run(run())
    report(request, "rows deleted by a retention job, then another process", "postgres", **counts)
