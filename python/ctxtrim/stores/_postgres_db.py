"""The PostgreSQL side of :class:`~ctxtrim.stores.PostgresContextStore`: the schema and its
migrations, statements composed for a schema, what a driver error is reported as, and the
shared connection pools with their checkout.

Invariants: a pool is shared by the stores of one event loop on one DSN (``_POOLS``) and
closed when the last releases it; a connection is checked out only after a check without I/O
(libpq's status and a zero-wait poll of its socket) finds it open and idle, dead ones are
closed and replaced within the call's deadline, so no statement is sent down a connection
known to be dead; a schema is migrated once per pool; a driver error becomes a typed
:class:`~ctxtrim.errors.StoreError` (or ``OutcomeUnknownError`` for a write whose outcome is
unknown). The store's own invariants are in ``ctxtrim.stores.postgres``.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import select
import socket
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ctxtrim.errors import (
    OutcomeUnknownError,
    StoreError,
)
from ctxtrim.stores._sharing import LoopShared

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql
    from psycopg.pq import ConnStatus, TransactionStatus
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "PostgresContextStore needs psycopg 3 and psycopg-pool: pip install 'ctxtrim[postgres]'"
    ) from e

_poll = getattr(select, "poll", None)  # not on Windows; select() there (no fd limit)

#: Schema migrations; entry ``i`` takes the database to version ``i + 1``. Append only.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE ctxtrim_sessions (
        session_id    bytea PRIMARY KEY,  -- UTF-8; bytea because text cannot hold NUL
        generation    bigint NOT NULL DEFAULT 0,
        first_seq     bigint NOT NULL DEFAULT 0,
        next_seq      bigint NOT NULL DEFAULT 0,
        input_tokens  bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        created_at    timestamptz NOT NULL DEFAULT now(),
        updated_at    timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE ctxtrim_messages (
        session_id bytea NOT NULL REFERENCES ctxtrim_sessions ON DELETE CASCADE,
        seq        bigint NOT NULL,
        tokens     integer NOT NULL,
        checksum   bigint NOT NULL,
        payload    text NOT NULL,
        PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE ctxtrim_ids (
        session_id bytea NOT NULL REFERENCES ctxtrim_sessions ON DELETE CASCADE,
        client_id  text NOT NULL,
        digest     text NOT NULL,
        PRIMARY KEY (session_id, client_id)
    );
    """,
    # Session identity: a session row starts at the generation of the server's clock in
    # microseconds when it is created, so a session deleted and created again (a retention
    # job, a schema dropped and re-created) never takes up an old instance's generations.
    """
    ALTER TABLE ctxtrim_sessions ALTER COLUMN generation
        SET DEFAULT floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    """,
)

_SCHEMA_RE = re.compile(r"[a-z_][a-z0-9_]{0,40}")

# Record the batch's ids (a raced duplicate violates the key and aborts the whole
# statement), take (or create) the session row lock and reserve n seqs, then insert the
# batch at them. One statement: one implicit transaction, one round trip.
_APPEND_SQL = """
WITH ids AS (
    INSERT INTO ctxtrim_ids (session_id, client_id, digest)
    SELECT %(sid)s, i.mid, i.digest FROM unnest(%(new_ids)s::text[], %(digests)s::text[])
        AS i(mid, digest)
), s AS (
    INSERT INTO ctxtrim_sessions AS t (session_id, next_seq) VALUES (%(sid)s, %(n)s)
    ON CONFLICT (session_id) DO UPDATE
        SET next_seq = t.next_seq + %(n)s, updated_at = now()
    RETURNING t.next_seq - %(n)s AS base, t.generation AS generation
), rows AS (
    INSERT INTO ctxtrim_messages (session_id, seq, tokens, checksum, payload)
    SELECT %(sid)s, s.base + m.i - 1, m.tok, m.crc, m.payload
    FROM s, unnest(%(toks)s::int[], %(crcs)s::bigint[], %(payloads)s::text[])
        WITH ORDINALITY AS m(tok, crc, payload, i)
)
SELECT generation, base FROM s
"""

# Schemas already migrated through a pool (opening another store on it runs no migration).
_migrated: weakref.WeakKeyDictionary[AsyncConnectionPool, set[str]] = weakref.WeakKeyDictionary()


@functools.lru_cache(maxsize=512)
def _q(schema: str, text: str) -> sql.Composed:
    """``text`` (always a constant of this module) with its tables qualified by ``schema``,
    composed as a quoted identifier: the only non-literal identifier in any query."""
    return sql.SQL(text.replace("ctxtrim_", "{schema}.ctxtrim_")).format(
        schema=sql.Identifier(schema)
    )


def _store_error(e: BaseException, write: str = "", severed: bool = False) -> Exception:
    """The typed error for a driver error. An error the server reported (it has a SQLSTATE:
    statement timeout, constraint, ...) rolled the statement or transaction back, and a
    pool timeout sent nothing: :class:`StoreError`. A connection lost (or cut by the
    store's timeout) with no server verdict during a write: :class:`OutcomeUnknownError`."""
    if isinstance(e, PoolTimeout):
        return StoreError(f"PostgreSQL is unreachable (no connection in time): {e}")
    reason = "no reply within the store's timeout" if severed else str(e)
    if write and isinstance(e, psycopg.Error) and e.sqlstate is None:
        return OutcomeUnknownError(
            f"{write}: connection to PostgreSQL lost ({reason}); the write may or may not"
            " have been applied",
            write,
        )
    if isinstance(e, pg_errors.QueryCanceled):  # the server's statement_timeout
        return StoreError(f"PostgreSQL cancelled the statement: {e}")
    if isinstance(e, psycopg.OperationalError) and e.sqlstate is None:
        return StoreError(f"PostgreSQL is unreachable: {reason}")
    return StoreError(f"PostgreSQL error: {e}")


@asynccontextmanager
async def _mapped(write: str = "") -> AsyncIterator[None]:
    """Turn driver errors into typed ones (the driver's error is the cause)."""
    try:
        yield
    except (psycopg.Error, PoolTimeout) as e:
        raise _store_error(e, write) from e


def _sever(conn: psycopg.AsyncConnection[Any]) -> None:
    """Cut a connection whose server does not answer: ``shutdown`` wakes the pending read
    with end-of-file, so the call fails at once with a connection error (and the pool
    discards the connection). psycopg's own cancellation would first wait for the server
    to acknowledge a cancel request, which a stopped server never does."""
    try:
        fd = conn.pgconn.socket
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except (OSError, psycopg.Error):
        pass  # already closed


@asynccontextmanager
async def _bounded(
    conn: psycopg.AsyncConnection[Any], deadline: float
) -> AsyncIterator[list[bool]]:
    """Sever ``conn`` if the block is still running at ``deadline`` (loop time); yields a
    flag list that says whether it did."""
    fired = [False]

    def fire() -> None:
        fired[0] = True
        _sever(conn)

    handle = asyncio.get_running_loop().call_at(deadline, fire)
    try:
        yield fired
    finally:
        handle.cancel()


def _idle_and_open(conn: psycopg.AsyncConnection[Any]) -> bool:
    """Whether a pooled connection can take a statement, judged without any I/O: libpq says
    it is open and idle, and its socket holds nothing to read. An idle session's server
    writes unprompted only to end it (``pg_terminate_backend``, a shutdown or restart, an
    ``idle_session_timeout``: an error message, then end-of-file) or for a ``LISTEN``
    notification, which ctxtrim never subscribes to. No round trip, so nothing to bound: a
    stopped server cannot make this wait."""
    pgconn = conn.pgconn
    if pgconn.status != ConnStatus.OK or pgconn.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        fd = pgconn.socket
    except psycopg.OperationalError:
        return False
    if _poll is not None:
        poller = _poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        return not poller.poll(0)
    readable, _, failed = select.select([fd], [], [fd], 0)
    return not readable and not failed


async def _checkout(pool: AsyncConnectionPool, deadline: float) -> psycopg.AsyncConnection[Any]:
    """A pooled connection that can take a statement, by ``deadline`` (loop time). One the
    server closed while it sat in the pool is closed here and handed back (the pool
    replaces it), and the next one is tried at once, so a restart or a
    ``pg_terminate_backend`` costs no failed call once the server answers, and no statement
    is ever sent down a connection known to be dead (it would be reported as an outcome
    unknown). Bounded: at most one try per pooled connection plus one, each wait within the
    deadline; psycopg_pool's own ``check`` is not used, since its round trip has no
    deadline (a stopped server hung the checkout past the store's timeout) and it backs off
    a second or more between failed checks."""
    loop = asyncio.get_running_loop()
    for _ in range(pool.max_size + 1):
        conn = await pool.getconn(timeout=max(deadline - loop.time(), 0.001))
        if _idle_and_open(conn):
            return conn
        await conn.close()
        await pool.putconn(conn)  # closed: the pool discards it and connects a new one
    raise PoolTimeout("every pooled connection was found closed by the server")


async def migrate(conn: psycopg.AsyncConnection[Any], schema: str = "public") -> int:
    """Bring ``schema`` to the latest version under the schema's migration advisory lock
    (concurrent openers queue instead of racing); returns the version. Raises
    :class:`StoreError` if the schema was migrated by a newer ctxtrim."""
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('ctxtrim:' || %s, 0))", (schema,)
        )
        cur = await conn.execute("SELECT to_regnamespace(%s) IS NULL", (schema,))
        row = await cur.fetchone()
        if row and row[0]:
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        await conn.execute(
            _q(schema, "CREATE TABLE IF NOT EXISTS ctxtrim_schema (version integer PRIMARY KEY)")
        )
        cur = await conn.execute(_q(schema, "SELECT coalesce(max(version), 0) FROM ctxtrim_schema"))
        row = await cur.fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):
            raise StoreError(
                f"schema {schema!r} is at version {version}; this ctxtrim knows up to "
                f"{len(MIGRATIONS)} — upgrade ctxtrim"
            )
        for v in range(version, len(MIGRATIONS)):
            await conn.execute(_q(schema, MIGRATIONS[v]))
            await conn.execute(
                _q(schema, "INSERT INTO ctxtrim_schema (version) VALUES (%s)"), (v + 1,)
            )
    return len(MIGRATIONS)


class _Shared:
    """The pool shared by the stores of an event loop opened from the same DSN and options
    (and by their forks and sessions); closed with the last of them if owned."""

    def __init__(self, pool: AsyncConnectionPool, owned: bool, key: Any = None) -> None:
        self.pool = pool
        self.owned = owned
        self.key = key
        self.users = 1

    async def release(self) -> None:
        self.users -= 1
        if self.users == 0 and self.owned:
            if self.key is not None:
                _POOLS.forget(self.key, self)
            await self.pool.close()


#: The pools the stores of each event loop share, by DSN and pool options.
_POOLS: LoopShared[_Shared] = LoopShared()


async def _open_pool(
    dsn: str,
    schema: str,
    connect_timeout: float,
    max_connections: int,
    timeout: float,
    key: Any,
) -> _Shared:
    """A new pool on ``dsn``, after one direct connection has migrated ``schema``."""
    # One direct connection first: it fails fast with the real reason (refused,
    # auth, unknown database), where a pool would only time out.
    async with _mapped():
        conn = await psycopg.AsyncConnection.connect(
            dsn, autocommit=True, connect_timeout=max(1, int(connect_timeout))
        )
        try:
            deadline = asyncio.get_running_loop().time() + max(timeout, connect_timeout)
            async with _bounded(conn, deadline):
                await migrate(conn, schema)
        finally:
            await conn.close()
    statement_ms = max(1, int(timeout * 900))

    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        # A slow but live server cancels the statement itself (SQLSTATE 57014:
        # rolled back, a StoreError) a little before the client gives up.
        await conn.execute(f"SET statement_timeout = {statement_ms}")

    pool = AsyncConnectionPool(
        dsn,
        min_size=1,
        max_size=max_connections,
        kwargs={"autocommit": True, "connect_timeout": max(1, int(connect_timeout))},
        configure=configure,
        timeout=connect_timeout,
        open=False,
    )
    async with _mapped():
        await pool.open(wait=True, timeout=connect_timeout)
    _migrated.setdefault(pool, set()).add(schema)
    return _Shared(pool, True, key)
