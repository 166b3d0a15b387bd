"""Many stores in one process: Redis clients and PostgreSQL pools opened from the same
address on the same event loop are shared, and closed with the last store using them.

(The SQLite store's shared connection and group commit are in ``test_store_sqlite.py``.)
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid

import pytest

from ctxtrim import Message, StoreError

REDIS_URL = os.environ.get("CTXTRIM_REDIS_URL", "")
POSTGRES_DSN = os.environ.get("CTXTRIM_POSTGRES_DSN", "")


@pytest.mark.skipif(not REDIS_URL, reason="CTXTRIM_REDIS_URL is not set")
async def test_redis_stores_from_one_url_share_one_client() -> None:
    pytest.importorskip("redis.asyncio")
    from ctxtrim.stores.redis import _CLIENTS, RedisContextStore

    prefix = f"share{uuid.uuid4().hex[:8]}"
    base = _CLIENTS.count()  # clients other tests left open on this loop, if any
    stores = [await RedisContextStore.open(REDIS_URL, f"s{i}", prefix=prefix) for i in range(200)]
    # Opens racing on a fresh key also end up on one client.
    racing = await asyncio.gather(
        *(RedisContextStore.open(REDIS_URL, f"r{i}", prefix=prefix, timeout=7) for i in range(20))
    )
    try:
        assert len({id(s._shared) for s in stores}) == 1
        assert len({id(s._shared) for s in racing}) == 1
        assert racing[0]._shared is not stores[0]._shared  # another timeout, another client
        assert _CLIENTS.count() == base + 2
        await asyncio.gather(*(s.append(Message.user(s.session_id)) for s in stores))
        assert [m.text for m in await stores[77].get_history()] == ["s77"]
        # Connections in the shared pool stay few: nowhere near one per store.
        client = stores[0]._shared.client
        info = await client.info("clients")
        assert info["connected_clients"] < 100
        fork = await stores[0].fork()
        for s in stores:
            await s.close()
        assert _CLIENTS.count() == base + 2  # the fork still uses the client
        assert [m.text for m in await fork.get_history()] == ["s0"]
        await fork.close()
        assert _CLIENTS.count() == base + 1
        with pytest.raises(StoreError, match="closed"):
            await stores[0].get_history()
    finally:
        for s in racing:
            await s.close()
    assert _CLIENTS.count() == base
    # A store opened after the last close gets a fresh client, and works.
    async with await RedisContextStore.open(REDIS_URL, "s1", prefix=prefix) as again:
        assert [m.text for m in await again.get_history()] == ["s1"]


@pytest.mark.skipif(not REDIS_URL, reason="CTXTRIM_REDIS_URL is not set")
def test_redis_clients_are_per_event_loop() -> None:
    pytest.importorskip("redis.asyncio")
    from ctxtrim.stores.redis import RedisContextStore

    prefix = f"loops{uuid.uuid4().hex[:8]}"
    shared: list[object] = []

    def in_a_thread(name: str) -> None:
        async def go() -> None:
            async with await RedisContextStore.open(REDIS_URL, name, prefix=prefix) as store:
                shared.append(store._shared)
                await store.append(Message.user(name))
                assert [m.text for m in await store.get_history()] == [name]

        asyncio.run(go())

    threads = [threading.Thread(target=in_a_thread, args=(f"t{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(shared) == 2 and shared[0] is not shared[1]


@pytest.mark.skipif(not POSTGRES_DSN, reason="CTXTRIM_POSTGRES_DSN is not set")
async def test_postgres_stores_from_one_dsn_share_one_pool() -> None:
    pytest.importorskip("psycopg_pool")
    from ctxtrim.stores._postgres_db import _POOLS
    from ctxtrim.stores.postgres import PostgresContextStore

    pools = _POOLS.count()  # pools other tests left open on this loop, if any
    base = f"share{uuid.uuid4().hex[:8]}"
    stores = await asyncio.gather(
        *(PostgresContextStore.open(POSTGRES_DSN, f"{base}-{i}") for i in range(100))
    )
    other_schema = await PostgresContextStore.open(
        POSTGRES_DSN, f"{base}-x", schema=f"s_{uuid.uuid4().hex[:8]}"
    )
    try:
        assert len({id(s._shared) for s in stores}) == 1
        assert other_schema._shared is stores[0]._shared  # one pool, another schema
        pool = stores[0]._shared.pool
        assert pool.get_stats()["pool_size"] <= 4  # the pool's max_connections, not 100
        await asyncio.gather(*(s.append(Message.user(s.session_id)) for s in stores))
        assert [m.text for m in await stores[42].get_history()] == [f"{base}-42"]
        await other_schema.append(Message.user("elsewhere"))
        assert [m.text for m in await other_schema.get_history()] == ["elsewhere"]
        for s in stores:
            await s.close()
        assert _POOLS.count() == pools + 1 and not pool.closed
    finally:
        await other_schema.close()
    assert _POOLS.count() == pools and pool.closed
