"""The store backends the shared suites run against, and process-level workers for them.

A *backend* is one isolated namespace of one store implementation (an SQLite file, a Redis
key prefix, a PostgreSQL schema/table prefix) that can open any number of stores on it:

* ``await backend.open(session_id=None)`` — a new store (a new connection) on session
  ``session_id`` (a fresh one when None). Calling it again with the same id opens a second,
  independent handle on the same session, as another process would.
* ``await backend.cleanup()`` — drop everything the namespace holds.
* ``backend.persistent`` — whether stores opened separately (or in another process) see the
  same data. ``MemoryContextStore`` is not: its ``open`` ignores earlier handles.
* ``backend.lists_all_sessions`` — whether ``list_sessions`` reports every session of the
  namespace (True for databases) or only the store's own (the memory store).

Backends are frozen dataclasses of plain values, so they pickle into ``spawn`` child
processes, which re-open them there (see :func:`append_worker`).

``BACKENDS`` lists every backend as ``pytest.param(factory, id=..., marks=...)`` where
``factory(tmp_path) -> Backend``; ``PERSISTENT_BACKENDS`` only those shared across
processes. The servers are the session's (``tests/conftest.py`` starts them and sets
``CTXTRIM_REDIS_URL`` / ``CTXTRIM_POSTGRES_DSN``, or the variables name existing ones);
server backends are skipped, with the reason, when their variable is unset.

The fault tests kill or freeze a server, so they run a private one of each kind
(``SERVER_KINDS``, :func:`private_server`); :func:`open_server_store` is the one way every
test and child process opens a store on a server, shared or private.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest

from ctxtrim import ContextStore, MemoryContextStore, Message, SQLiteContextStore

from servers import Server, find_postgres, find_redis, postgres_server, redis_server


async def open_server_store(
    kind: str, url: str, session_id: str | None, namespace: str, **options: Any
) -> ContextStore:
    """A store on session ``session_id`` of the ``kind`` (``"redis"`` or ``"postgres"``)
    server at ``url``, in ``namespace`` (the Redis key prefix, the PostgreSQL schema);
    ``options`` go to the store's ``open``."""
    if kind == "redis":
        from ctxtrim.stores.redis import RedisContextStore

        return await RedisContextStore.open(url, session_id, prefix=namespace, **options)
    if kind == "postgres":
        from ctxtrim.stores.postgres import PostgresContextStore

        return await PostgresContextStore.open(url, session_id, schema=namespace, **options)
    raise ValueError(f"no server store of kind {kind!r}")


def _binary_missing(find: Any) -> pytest.MarkDecorator:
    found, why = find()
    return pytest.mark.skipif(found is None, reason=why)


#: The kinds of server a fault test runs privately, skipped with the reason when the
#: server's binary is missing.
SERVER_KINDS: list[Any] = [
    pytest.param("redis", marks=_binary_missing(find_redis)),
    pytest.param("postgres", marks=_binary_missing(find_postgres)),
]
#: The module a store of each kind needs (its extra).
_DRIVER = {"redis": "redis", "postgres": "psycopg_pool"}


@contextlib.contextmanager
def private_server(kind: str) -> Iterator[Server]:
    """A started server of ``kind`` of the test's own, with its data in a temp dir, so that
    killing or freezing it disturbs nothing else; stopped and removed on exit. Skips when
    the kind's extra is not installed. Redis keeps an AOF with ``appendfsync always``, and
    ``start()`` returns once it is loaded (no ``LOADING`` replies after it)."""
    pytest.importorskip(_DRIVER[kind], reason=f"the {kind} extra is not installed")
    # Not tmp_path: the postgres user must be able to reach it.
    workdir = Path(tempfile.mkdtemp(prefix=f"ctxtrim-{kind}-"))
    workdir.chmod(0o755)
    server = redis_server(workdir) if kind == "redis" else postgres_server(workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


class Backend(Protocol):
    # Read-only members: the backends are frozen dataclasses.
    @property
    def name(self) -> str: ...
    @property
    def persistent(self) -> bool: ...
    @property
    def lists_all_sessions(self) -> bool: ...

    async def open(self, session_id: str | None = None) -> ContextStore: ...

    async def cleanup(self) -> None: ...


@dataclass(frozen=True)
class MemoryBackend:
    name: str = "memory"
    persistent: bool = False
    lists_all_sessions: bool = False

    async def open(self, session_id: str | None = None) -> ContextStore:
        return MemoryContextStore(session_id=session_id)

    async def cleanup(self) -> None:
        return None


@dataclass(frozen=True)
class SQLiteBackend:
    path: str
    synchronous: str = "FULL"
    name: str = "sqlite"
    persistent: bool = True
    lists_all_sessions: bool = True

    async def open(self, session_id: str | None = None) -> ContextStore:
        return await SQLiteContextStore.open(
            self.path,
            session_id,
            synchronous=self.synchronous,  # type: ignore[arg-type]
        )

    async def cleanup(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path + suffix)


@dataclass(frozen=True)
class RedisBackend:
    """A fresh key prefix (``namespace``) on the server at ``url``."""

    url: str
    namespace: str
    name: str = "redis"
    persistent: bool = True
    lists_all_sessions: bool = True

    async def open(self, session_id: str | None = None) -> ContextStore:
        return await open_server_store(self.name, self.url, session_id, self.namespace)

    async def cleanup(self) -> None:
        import redis.asyncio as aioredis

        client = aioredis.Redis.from_url(self.url)
        try:
            keys = [k async for k in client.scan_iter(match=f"{self.namespace}:*", count=1000)]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


@dataclass(frozen=True)
class PostgresBackend:
    """A fresh schema (``namespace``) in the database at ``url`` (a DSN)."""

    url: str
    namespace: str
    name: str = "postgres"
    persistent: bool = True
    lists_all_sessions: bool = True

    async def open(self, session_id: str | None = None) -> ContextStore:
        return await open_server_store(
            self.name, self.url, session_id, self.namespace, max_connections=2
        )

    async def cleanup(self) -> None:
        import psycopg
        from psycopg import sql

        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.namespace))
            )


_counter = itertools.count()


def memory_backend(tmp_path: Path) -> Backend:
    return MemoryBackend()


def sqlite_backend(tmp_path: Path) -> Backend:
    # A new file per call: hypothesis runs many examples inside one test (one tmp_path).
    return SQLiteBackend(str(tmp_path / f"store-{os.getpid()}-{next(_counter)}.db"))


def _unique() -> str:
    return f"{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:8]}"


def redis_backend(tmp_path: Path) -> Backend:
    return RedisBackend(os.environ["CTXTRIM_REDIS_URL"], f"test:{_unique()}")


def postgres_backend(tmp_path: Path) -> Backend:
    return PostgresBackend(os.environ["CTXTRIM_POSTGRES_DSN"], f"test_{_unique()}")


def _needs(var: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not os.environ.get(var),
        reason=f"{var} is not set and no server could be started (see the end of the run)",
    )


#: Every backend, for the conformance suite.
BACKENDS: list[Any] = [
    pytest.param(memory_backend, id="memory"),
    pytest.param(sqlite_backend, id="sqlite"),
    pytest.param(redis_backend, id="redis", marks=_needs("CTXTRIM_REDIS_URL")),
    pytest.param(postgres_backend, id="postgres", marks=_needs("CTXTRIM_POSTGRES_DSN")),
]
#: Backends whose stores share data across connections and processes (reliability suite).
PERSISTENT_BACKENDS: list[Any] = [
    pytest.param(sqlite_backend, id="sqlite"),
    pytest.param(redis_backend, id="redis", marks=_needs("CTXTRIM_REDIS_URL")),
    pytest.param(postgres_backend, id="postgres", marks=_needs("CTXTRIM_POSTGRES_DSN")),
]


@contextlib.asynccontextmanager
async def opened(backend: Backend, session_id: str | None = None) -> AsyncIterator[ContextStore]:
    """A store on ``backend``, closed on exit."""
    store = await backend.open(session_id)
    try:
        yield store
    finally:
        await store.close()


# --------------------------------------------------------------------------------------------
# Workers run in spawn child processes (module-level so they pickle by reference).


def tagged(writer: int, i: int, size: int = 0) -> Message:
    """Message ``i`` of ``writer``: its id is ``"w<writer>-<i>"``; ``size`` pads the text."""
    return Message.user(f"w{writer}-{i} " + "x" * size, id=f"w{writer}-{i}")


def append_worker(backend: Backend, session_id: str, writer: int, count: int, batch: int) -> int:
    """Append ``count`` tagged messages, in batches of up to ``batch`` (1 = ``append``)."""

    async def go() -> int:
        async with opened(backend, session_id) as store:
            i = 0
            while i < count:
                n = min(batch, count - i)
                if n == 1:
                    await store.append(tagged(writer, i))
                else:
                    await store.append_many([tagged(writer, i + k) for k in range(n)])
                i += n
        return count

    return asyncio.run(go())


def read_worker(backend: Backend, session_id: str, seconds: float, stop_at: int) -> list[list[str]]:
    """Poll ``get_history()`` (and ``get_history(limit=5)``) until it holds ``stop_at``
    messages or ``seconds`` passed; return the id lists seen (tails are marked with a
    leading ``"tail"``)."""

    async def go() -> list[list[str]]:
        seen: list[list[str]] = []
        async with opened(backend, session_id) as store:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                seen.append([m.id or "" for m in await store.get_history()])
                seen.append(["tail"] + [m.id or "" for m in await store.get_history(limit=5)])
                if len(seen[-2]) >= stop_at:
                    break
        return seen

    return asyncio.run(go())


def open_worker(backend: Backend, session_id: str, start_at: float) -> str:
    """Open the store at wall-clock ``start_at`` (so several processes race), append one
    message, return its id."""

    async def go() -> str:
        delay = start_at - time.time()
        if delay > 0:
            await asyncio.sleep(delay)
        async with opened(backend, session_id) as store:
            msg = Message.user(f"hello from {os.getpid()}", id=f"p{os.getpid()}")
            await store.append(msg)
            return msg.id or ""

    return asyncio.run(go())
