"""Append latency at 100 vs 10 000 messages, and read times at 10 000, for the server
stores (and SQLite for reference). A script, not a test:

    eval "$(scripts/services.sh start)"
    python benches/store_servers.py [--n 10000] [--appends 200] [--size 1000]

Each backend gets a fresh namespace (Redis key prefix / PostgreSQL schema / SQLite file),
appends ``--appends`` single messages of ``--size`` bytes at a history of 100, fills the
history to ``--n`` with batches, appends ``--appends`` more, then times ``get_history()``,
``load_log()`` and ``get_history(limit=50)``. Backends whose URL is unset are skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable

from ctxtrim import ContextStore, Message


def message(i: int, size: int) -> Message:
    return Message.user(f"{i} " + "x" * size)


async def append_ms(store: ContextStore, start: int, count: int, size: int) -> list[float]:
    times = []
    for i in range(count):
        m = message(start + i, size)
        t = time.perf_counter()
        await store.append(m)
        times.append((time.perf_counter() - t) * 1000)
    return times


async def timed_ms(call: Callable[[], Awaitable[object]], repeat: int = 5) -> float:
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        await call()
        best.append((time.perf_counter() - t) * 1000)
    return statistics.median(best)


async def bench(name: str, store: ContextStore, n: int, appends: int, size: int) -> None:
    await store.append_many([message(i, size) for i in range(100)])
    small = await append_ms(store, 100, appends, size)
    have = 100 + appends
    while have < n - appends:
        k = min(500, n - appends - have)
        await store.append_many([message(have + i, size) for i in range(k)])
        have += k
    large = await append_ms(store, have, appends, size)
    total = have + appends
    full = await timed_ms(store.get_history)
    log = await timed_ms(store.load_log)
    tail = await timed_ms(lambda: store.get_history(limit=50), repeat=20)
    assert len(await store.get_history()) == total
    print(
        f"{name:9} append@100 mean {statistics.mean(small):6.3f} ms (p50 "
        f"{statistics.median(small):6.3f}) | append@{total} mean {statistics.mean(large):6.3f} ms"
        f" (p50 {statistics.median(large):6.3f}) | get_history()@{total} {full:7.1f} ms"
        f" | load_log() {log:7.1f} ms | get_history(limit=50) {tail:6.3f} ms"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--size", type=int, default=1000)
    args = parser.parse_args()
    tag = uuid.uuid4().hex[:8]

    from ctxtrim.stores import SQLiteContextStore

    with tempfile.TemporaryDirectory() as tmp:
        store: ContextStore = await SQLiteContextStore.open(os.path.join(tmp, "b.db"), "bench")
        await bench("sqlite", store, args.n, args.appends, args.size)
        await store.close()

    if url := os.environ.get("CTXTRIM_REDIS_URL"):
        from ctxtrim.stores.redis import RedisContextStore

        prefix = f"bench:{tag}"
        store = await RedisContextStore.open(url, "bench", prefix=prefix)
        await bench("redis", store, args.n, args.appends, args.size)
        await store.clear()
        await store.close()
    else:
        print("redis     skipped: CTXTRIM_REDIS_URL is not set")

    if dsn := os.environ.get("CTXTRIM_POSTGRES_DSN"):
        import psycopg
        from psycopg import sql

        from ctxtrim.stores.postgres import PostgresContextStore

        schema = f"bench_{tag}"
        store = await PostgresContextStore.open(dsn, "bench", schema=schema)
        await bench("postgres", store, args.n, args.appends, args.size)
        await store.close()
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            await conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
    else:
        print("postgres  skipped: CTXTRIM_POSTGRES_DSN is not set")


if __name__ == "__main__":
    asyncio.run(main())
