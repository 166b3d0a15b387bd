"""`PostgresContextStore`: a conversation history in PostgreSQL ≥ 14
(``pip install 'ctxtrim[postgres]'``: psycopg 3 and its async connection pool).

Schema (created by versioned migrations, see :data:`MIGRATIONS`)::

    ctxtrim_schema(version)                     applied migrations
    ctxtrim_sessions(session_id PK, generation, first_seq, next_seq,
                     input_tokens, output_tokens, created_at, updated_at)
    ctxtrim_messages(session_id, seq, tokens, checksum, payload text, PK (session_id, seq))
    ctxtrim_ids(session_id, client_id, digest, PK (session_id, client_id))

in the PostgreSQL schema named by ``schema=`` (default ``public``; checked against
``[a-z_][a-z0-9_]{0,40}`` and composed as a quoted ``psycopg.sql.Identifier``), so several
applications or test runs can share one database without seeing each other's sessions.
``ctxtrim_ids`` records the ``id`` and payload sha256 of each message appended by a store
opened with ``idempotent_ids=True`` (a retried append is then stored once); it survives
``replace_prefix`` (a late retry of a message compacted away is still recognised) and is
emptied by ``clear``.

Invariants:

* A session's messages occupy the gapless seq range ``[first_seq, next_seq)``. An append
  takes the session row lock with ``INSERT … ON CONFLICT DO UPDATE SET next_seq = next_seq + n
  RETURNING`` and inserts its rows in the same statement, so appends of one session are
  serialised and numbered in commit order (a reader only ever sees a prefix of the final
  history); other sessions never wait. A batch is one statement: all or nothing.
* ``clear`` and ``replace_prefix`` bump ``generation`` under the same row lock;
  ``replace_prefix`` is a compare-and-swap on it and keeps every row after ``upto`` (the
  new prefix takes the seqs just below the kept rows).
* **Session identity.** A session row starts at the generation of the server's clock in
  microseconds when it is created (migration 2), not at 0, so generations are never reused
  across instances: a session deleted and created again (a retention job, a schema dropped
  and re-created) is never read as a continuation of what a long-lived handle cached, and a
  ``replace_prefix`` computed from the old instance is refused as stale. A session that does
  not exist reads as empty, at generation 0.
* Payloads are the message's JSON as ``text`` (never ``jsonb``, which cannot hold U+0000: a
  NUL travels JSON-escaped as ``\\u0000``), with a CRC-32 checked on every read and the token
  count used by ``load_log()``. Session ids and everything else are bound parameters; no
  identifier is ever built from input.
* Migrations run under a per-schema ``pg_advisory_xact_lock`` in one transaction, so any number of
  processes may open a fresh database at once; a database migrated by a newer ctxtrim is
  refused rather than written.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from ctxtrim import _core
from ctxtrim.errors import (
    InvalidMessage,
    StoreError,
    stale_generation_error,
    stale_length_error,
)
from ctxtrim.messages import Message
from ctxtrim.store import ContextStore, HistorySnapshot, SessionInfo
from ctxtrim.stores._common import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_TIMEOUT,
    INT64_MAX,
    INT64_MIN,
    TURN_ATTEMPTS,
    LogCache,
    LogRead,
    check_limit,
    check_max_message_bytes,
    check_messages,
    check_replace_args,
    check_session_id,
    check_timeout,
    check_tokens,
    decode_payload,
    encode_payload,
    history_through,
    load_cached,
    payload_checksum,
    preview,
    stored_count,
    token_counts,
    tokens_overflow,
    turn_guard,
    turns_kept_moving,
    upto_past_end,
)
from ctxtrim.tokens import TokenCounter

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql
    from psycopg_pool import AsyncConnectionPool, PoolTimeout
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "PostgresContextStore needs psycopg 3 and psycopg-pool: pip install 'ctxtrim[postgres]'"
    ) from e

from ctxtrim.stores._postgres_db import (
    _APPEND_SQL,
    _POOLS,
    _SCHEMA_RE,
    MIGRATIONS,
    _bounded,
    _checkout,
    _mapped,
    _migrated,
    _open_pool,
    _q,
    _Shared,
    _store_error,
    migrate,
)

__all__ = ["MIGRATIONS", "PostgresContextStore"]


class PostgresContextStore(ContextStore):
    """A session's history in PostgreSQL. Create with :meth:`open`; any number of processes
    may open the same session and append concurrently.

    ``pool`` is an open ``psycopg_pool.AsyncConnectionPool`` to share (the store then never
    closes it); otherwise the stores of one event loop opened with the same ``dsn`` and pool
    options share one small pool, closed when the last of them closes. ``counter`` is an
    exact token counter (called once per appended message; the count is stored with it).
    """

    _shared: _Shared
    _counter: TokenCounter | None
    _max_bytes: int
    _closed: bool
    _log_cache: LogCache
    _schema: str
    _idempotent: bool
    _key: bytes
    _timeout: float

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError(
            "PostgresContextStore is opened, not constructed: "
            "`await PostgresContextStore.open(dsn, session_id)`"
        )

    @classmethod
    async def open(
        cls,
        dsn: str,
        session_id: str | None = None,
        *,
        counter: TokenCounter | None = None,
        pool: AsyncConnectionPool | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        connect_timeout: float = 10.0,
        max_connections: int = 4,
        schema: str = "public",
        idempotent_ids: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> PostgresContextStore:
        """Connect, run any missing migrations (under the advisory lock) and return the
        store. Raises :class:`~ctxtrim.errors.StoreError` (cause: the driver's error) when
        the server cannot be reached.

        ``idempotent_ids=True`` makes a message's ``id`` an idempotency key: appending a
        message whose id is already stored with the same content stores nothing (a retry
        after a lost acknowledgement); with different content the batch is refused.

        ``timeout`` (seconds, default 10) bounds every call, the wait for a pooled
        connection included: past it the connection is cut and the call raises
        :class:`~ctxtrim.errors.OutcomeUnknownError` (a write) or ``StoreError`` (a read).
        The store's own pool also sets ``statement_timeout`` to 90 % of it, so a slow but
        live server cancels the statement first (``StoreError``: nothing changed). With a
        ``pool=`` of yours, set ``statement_timeout`` in its ``configure``."""
        if not isinstance(schema, str) or not _SCHEMA_RE.fullmatch(schema):
            raise ValueError(f"schema must match [a-z_][a-z0-9_]{{0,40}}, got {schema!r}")
        sid = uuid.uuid4().hex if session_id is None else check_session_id(session_id)
        check_max_message_bytes(max_message_bytes)
        timeout = check_timeout(timeout)
        if pool is None:
            key = (dsn, connect_timeout, max_connections, timeout)
            shared = await _POOLS.get(
                key,
                lambda: _open_pool(dsn, schema, connect_timeout, max_connections, timeout, key),
            )
            pool = shared.pool
        else:
            shared = _Shared(pool, False)
        if schema not in _migrated.get(pool, ()):
            try:
                async with _mapped(), pool.connection() as conn:
                    await conn.set_autocommit(True)
                    await migrate(conn, schema)
            except BaseException:
                await shared.release()
                raise
            _migrated.setdefault(pool, set()).add(schema)
        self = cls._make(shared, sid, counter, max_message_bytes, schema, bool(idempotent_ids))
        self._timeout = timeout
        try:
            async with self._conn("open") as conn:  # opening a session creates it (listed)
                await conn.execute(
                    self._sql(
                        "INSERT INTO ctxtrim_sessions (session_id) VALUES (%s)"
                        " ON CONFLICT DO NOTHING"
                    ),
                    (sid.encode("utf-8"),),
                )
        except BaseException:
            await self.close()
            raise
        return self

    @classmethod
    def _make(
        cls,
        shared: _Shared,
        session_id: str,
        counter: TokenCounter | None,
        max_bytes: int,
        schema: str,
        idempotent: bool,
    ) -> PostgresContextStore:
        self = cls.__new__(cls)
        self._schema = schema
        self._idempotent = idempotent
        self.__dict__["_session_id"] = session_id
        self._key = session_id.encode("utf-8")
        self._shared = shared
        self._counter = counter
        self._max_bytes = max_bytes
        self._closed = False
        self._log_cache = LogCache()
        self._timeout = DEFAULT_TIMEOUT
        return self

    def _sql(self, text: str) -> sql.Composed:
        return _q(self._schema, text)

    @asynccontextmanager
    async def _conn(self, write: str = "") -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection for one call, bounded by the store's ``timeout`` from now
        (the wait for the connection included). ``write`` names a call that changes data,
        for :class:`OutcomeUnknownError`."""
        if self._closed:
            raise StoreError("the store is closed")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout
        fired = [False]
        pool = self._shared.pool
        try:
            conn = await _checkout(pool, deadline)
            try:
                async with _bounded(conn, deadline) as fired:
                    if not conn.autocommit:  # a caller's pool may not be in autocommit mode
                        await conn.set_autocommit(True)
                    yield conn
            finally:
                await pool.putconn(conn)
        except (psycopg.Error, PoolTimeout) as e:
            raise _store_error(e, write, fired[0]) from e

    # -- writes -----------------------------------------------------------------------------

    async def append(self, message: Message) -> None:
        payload = encode_payload(message, self._max_bytes, "message")
        await self._append_many([message], [payload], "message")

    async def append_many(self, messages: Sequence[Message]) -> None:
        """Append atomically (one statement). With ``idempotent_ids``, a message whose
        ``id`` is already stored with the same content is skipped (a retried append); with
        different content the whole batch is refused with
        :class:`~ctxtrim.errors.InvalidMessage` and nothing is stored."""
        payloads = check_messages(messages, self._max_bytes)
        await self._append_many(list(messages), payloads, "messages[{}]")

    async def _append_many(self, messages: list[Message], payloads: list[bytes], path: str) -> None:
        """Store checked, encoded ``messages``; errors name ``path.format(i)`` (``"message"``
        for ``append``, ``"messages[i]"`` for a batch)."""
        counts = token_counts(messages, self._counter, path)
        texts = [p.decode("utf-8") for p in payloads]
        ids = [m.id if self._idempotent else None for m in messages]
        digests = [
            hashlib.sha256(p).hexdigest() if mid else ""
            for p, mid in zip(payloads, ids, strict=True)
        ]
        by_id: dict[str, str] = {}
        for i, (mid, digest) in enumerate(zip(ids, digests, strict=True)):
            if mid is not None and by_id.setdefault(mid, digest) != digest:
                raise InvalidMessage(
                    f"id {mid!r} appears twice in the batch with different content",
                    path.format(i) + ".id",
                )
        if not messages:
            return
        # Caller-given turn ids: checked against the session's turn, and the write stores
        # the batch only if the session row (locked) is still where the check saw it.
        for _ in range(TURN_ATTEMPTS):
            guard = await turn_guard(self.load_log, self._log_cache, messages)
            if await self._write_batch(
                messages, ids, digests, by_id, counts, payloads, texts, guard, path
            ):
                return
        raise turns_kept_moving(self.session_id)

    async def _write_batch(
        self,
        messages: list[Message],
        ids: list[str | None],
        digests: list[str],
        by_id: dict[str, str],
        counts: list[int],
        payloads: list[bytes],
        texts: list[str],
        guard: tuple[int, int] | None,
        path: str,
    ) -> bool:
        """Store the batch; ``False`` (nothing written) if ``guard`` is given and the
        session row is no longer at that ``(generation, next_seq)``: check the turns again."""
        for attempt in range(5):
            try:
                async with self._conn("append") as conn:
                    if guard is None:
                        written = await self._insert_batch(
                            conn, ids, digests, by_id, counts, payloads, texts, path
                        )
                    else:
                        async with conn.transaction():
                            locked = await self._lock_at(conn, guard)
                            if not locked:
                                raise psycopg.Rollback()  # leaves the block, nothing written
                            written = await self._insert_batch(
                                conn, ids, digests, by_id, counts, payloads, texts, path
                            )
                        if not locked:
                            return False
                if written is not None:  # committed, every message stored
                    size = sum([len(t) for t in texts])
                    self._log_cache.wrote(*written, messages, counts, size)
                return True
            except StoreError as e:
                # A concurrent append stored one of these ids after our check (the
                # statement, or the transaction, rolled back whole): check again.
                if not isinstance(e.__cause__, pg_errors.UniqueViolation) or attempt == 4:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _lock_at(self, conn: psycopg.AsyncConnection[Any], guard: tuple[int, int]) -> bool:
        """Lock the session row (creating it, as the append would); whether its generation
        and next seq are still ``guard``."""
        await conn.execute(
            self._sql(
                "INSERT INTO ctxtrim_sessions (session_id) VALUES (%s)"
                " ON CONFLICT (session_id) DO NOTHING"
            ),
            (self._key,),
        )
        cur = await conn.execute(
            self._sql(
                "SELECT generation, next_seq FROM ctxtrim_sessions WHERE session_id = %s FOR UPDATE"
            ),
            (self._key,),
        )
        row = await cur.fetchone()
        return row is not None and (int(row[0]), int(row[1])) == guard

    async def _insert_batch(
        self,
        conn: psycopg.AsyncConnection[Any],
        ids: list[str | None],
        digests: list[str],
        by_id: dict[str, str],
        counts: list[int],
        payloads: list[bytes],
        texts: list[str],
        path: str,
    ) -> tuple[int, int] | None:
        """Insert the batch; ``(generation, first seq)`` of its rows if every message was
        stored (``None`` when a retried idempotent append skipped some)."""
        keep = list(range(len(ids)))
        if by_id:
            cur = await conn.execute(
                self._sql(
                    "SELECT client_id, digest FROM ctxtrim_ids"
                    " WHERE session_id = %s AND client_id = ANY(%s)"
                ),
                (self._key, list(by_id)),
            )
            stored = dict(await cur.fetchall())
            for i, mid in enumerate(ids):
                if mid in stored and stored[mid] != digests[i]:
                    raise InvalidMessage(
                        f"id {mid!r} is already stored with different content",
                        path.format(i) + ".id",
                    )
            keep, seen = [], set()
            for i, mid in enumerate(ids):
                if mid is None:
                    keep.append(i)
                elif mid not in stored and mid not in seen:
                    seen.add(mid)
                    keep.append(i)
            if not keep:
                return None
        cur = await conn.execute(
            self._sql(_APPEND_SQL),
            {
                "sid": self._key,
                "n": len(keep),
                "new_ids": [ids[i] for i in keep if ids[i] is not None],
                "digests": [digests[i] for i in keep if ids[i] is not None],
                "toks": [counts[i] for i in keep],
                "crcs": [payload_checksum(payloads[i]) for i in keep],
                "payloads": [texts[i] for i in keep],
            },
        )
        row = await cur.fetchone()
        assert row is not None  # the session row is always returned
        return (int(row[0]), int(row[1])) if len(keep) == len(ids) else None

    async def clear(self) -> None:
        async with self._conn("clear") as conn, conn.transaction():
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_sessions AS t (session_id) VALUES (%s)"
                    " ON CONFLICT (session_id) DO UPDATE SET generation = t.generation + 1,"
                    " first_seq = t.next_seq, input_tokens = 0, output_tokens = 0,"
                    " updated_at = now()"
                ),
                (self._key,),
            )
            await conn.execute(
                self._sql("DELETE FROM ctxtrim_messages WHERE session_id = %s"), (self._key,)
            )
            await conn.execute(
                self._sql("DELETE FROM ctxtrim_ids WHERE session_id = %s"), (self._key,)
            )

    async def replace_prefix(
        self,
        upto: int,
        messages: Sequence[Message],
        expected_generation: int,
        *,
        expected_length: int | None = None,
    ) -> None:
        check_replace_args(upto, expected_generation, messages, expected_length)
        messages = list(messages)
        payloads = check_messages(messages, self._max_bytes)
        counts = token_counts(messages, self._counter)
        sid = self._key
        async with self._conn("replace_prefix") as conn, conn.transaction():
            cur = await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_sessions (session_id) VALUES (%s) ON CONFLICT DO NOTHING"
                    " RETURNING generation"
                ),
                (sid,),
            )
            created = await cur.fetchone() is not None
            cur = await conn.execute(
                self._sql(
                    "SELECT generation, first_seq, next_seq FROM ctxtrim_sessions"
                    " WHERE session_id = %s FOR UPDATE"
                ),
                (sid,),
            )
            row = await cur.fetchone()
            assert row is not None
            generation, first, nxt = row
            # A session created just now was at generation 0 for whoever read it (absent).
            if generation != expected_generation and not (created and expected_generation == 0):
                raise stale_generation_error(expected_generation, 0 if created else generation)
            if expected_length is not None and nxt - first != expected_length:
                raise stale_length_error(generation, expected_length, nxt - first)
            if upto > nxt - first:
                raise upto_past_end(upto, nxt - first)
            cut = first + upto
            new_first = cut - len(messages)
            await conn.execute(
                self._sql("DELETE FROM ctxtrim_messages WHERE session_id = %s AND seq < %s"),
                (sid, cut),
            )
            if messages:
                await conn.execute(
                    self._sql(
                        "INSERT INTO ctxtrim_messages (session_id, seq, tokens, checksum, payload)"
                        " SELECT %s, %s + m.i - 1, m.tok, m.crc, m.payload"
                        " FROM unnest(%s::int[], %s::bigint[], %s::text[])"
                        " WITH ORDINALITY AS m(tok, crc, payload, i)"
                    ),
                    (
                        sid,
                        new_first,
                        counts,
                        [payload_checksum(p) for p in payloads],
                        [p.decode("utf-8") for p in payloads],
                    ),
                )
            await conn.execute(
                self._sql(
                    "UPDATE ctxtrim_sessions SET generation = generation + 1, first_seq = %s,"
                    " updated_at = now() WHERE session_id = %s"
                ),
                (new_first, sid),
            )

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        values = check_tokens(input_tokens, output_tokens)
        async with self._conn("set_context_tokens") as conn:
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_sessions AS t (session_id, input_tokens, output_tokens)"
                    " VALUES (%s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET"
                    " input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens"
                ),
                (self._key, *values),
            )

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        values = check_tokens(input_tokens, output_tokens)
        async with self._conn("add_context_tokens") as conn, conn.transaction():
            # Checked under the row lock: bigint would refuse the sum too, but this names
            # the counter the same way every store does.
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_sessions (session_id) VALUES (%s) ON CONFLICT DO NOTHING"
                ),
                (self._key,),
            )
            cur = await conn.execute(
                self._sql(
                    "SELECT input_tokens, output_tokens FROM ctxtrim_sessions"
                    " WHERE session_id = %s FOR UPDATE"
                ),
                (self._key,),
            )
            row = await cur.fetchone()
            assert row is not None
            for name, current, added in zip(
                ("input_tokens", "output_tokens"), row, values, strict=True
            ):
                if not INT64_MIN <= int(current) + added <= INT64_MAX:
                    raise tokens_overflow(name, added)
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_sessions AS t (session_id, input_tokens, output_tokens)"
                    " VALUES (%s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET"
                    " input_tokens = t.input_tokens + EXCLUDED.input_tokens,"
                    " output_tokens = t.output_tokens + EXCLUDED.output_tokens"
                ),
                (self._key, *values),
            )

    # -- reads ------------------------------------------------------------------------------

    def _decode(self, rows: Sequence[tuple[Any, ...]]) -> tuple[list[Message], list[int]]:
        """Rows of (seq, tokens, checksum, payload) → messages and their token counts."""
        messages, counts = [], []
        for seq, tokens, checksum, payload in rows:
            data = payload.encode("utf-8")
            messages.append(
                decode_payload(data, session_id=self.session_id, seq=seq, checksum=checksum)
            )
            counts.append(stored_count(tokens, self.session_id, seq))
        return messages, counts

    async def get_history(self, limit: int | None = None) -> list[Message]:
        limit = check_limit(limit)
        if limit == 0:
            return []
        cached = await history_through(self._log_cache, limit, self.load_log)
        if cached is not None:
            return cached
        async with self._conn() as conn:
            # Newest first so that a limit keeps the newest.
            cur = await conn.execute(
                self._sql(
                    "SELECT seq, tokens, checksum, payload FROM ctxtrim_messages"
                    " WHERE session_id = %s ORDER BY seq DESC LIMIT %s"
                ),
                (self._key, limit),
            )
            rows = (await cur.fetchall())[::-1]
        return self._decode(rows)[0]

    async def snapshot(self) -> HistorySnapshot:
        generation, _, messages, _, _, _ = await self._read_since(None, None)
        return HistorySnapshot(messages, generation)

    async def generation(self) -> int:
        async with self._conn() as conn:
            cur = await conn.execute(
                self._sql("SELECT generation FROM ctxtrim_sessions WHERE session_id = %s"),
                (self._key,),
            )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def load_log(self) -> _core.MessageLog:
        """The history with the token counts stored beside each message (no recount). The
        store keeps the log it last read and reads only the rows appended since."""
        return await load_cached(self._log_cache, self._read_since)

    async def _read_since(self, generation: int | None, mark: int | None) -> LogRead:
        # One statement (one MVCC snapshot): the session's generation and seq range, and its
        # rows from `mark` on. Seqs only grow within a generation, so if the generation is
        # the cached one, the rows at and after `mark` are exactly what was appended since.
        since = mark if (generation is not None and mark is not None) else None
        async with self._conn() as conn:
            # Seqs may be negative (a compaction writes its prefix below the kept rows), so a
            # whole read has no lower bound.
            lower = "" if since is None else " AND m.seq >= %(since)s"
            cur = await conn.execute(
                self._sql(
                    "SELECT s.generation, s.next_seq, m.seq, m.tokens, m.checksum, m.payload"
                    " FROM ctxtrim_sessions s LEFT JOIN ctxtrim_messages m"
                    f" ON m.session_id = s.session_id{lower}"
                    " WHERE s.session_id = %(key)s ORDER BY m.seq"
                ),
                {"since": since, "key": self._key},
            )
            rows = await cur.fetchall()
        if not rows:
            return 0, None, [], [], 0, 0
        current, nxt = int(rows[0][0]), int(rows[0][1])
        if since is not None and current != generation:
            return await self._read_since(None, None)
        found = [r[2:] for r in rows if r[2] is not None]
        messages, counts = self._decode(found)
        return current, since, messages, counts, nxt, sum([len(r[3]) for r in found])

    async def get_context_tokens(self) -> tuple[int, int]:
        async with self._conn() as conn:
            cur = await conn.execute(
                self._sql(
                    "SELECT input_tokens, output_tokens FROM ctxtrim_sessions WHERE session_id = %s"
                ),
                (self._key,),
            )
            row = await cur.fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    async def fork(self) -> PostgresContextStore:
        """A new session (uuid4 hex id) holding a copy of this history, its generation,
        token totals and stored ids — one transaction, copied inside the server."""
        child_id = uuid.uuid4().hex
        async with self._conn("fork") as conn, conn.transaction():
            # The parent's row lock: no append or rewrite lands between the two copies.
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_sessions (session_id) VALUES (%s) ON CONFLICT DO NOTHING"
                ),
                (self._key,),
            )
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_sessions (session_id, generation, first_seq, next_seq,"
                    " input_tokens, output_tokens) SELECT %s, generation, first_seq, next_seq,"
                    " input_tokens, output_tokens FROM ctxtrim_sessions WHERE session_id = %s"
                    " FOR UPDATE"
                ),
                (child_id.encode(), self._key),
            )
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_messages (session_id, seq, tokens, checksum, payload)"
                    " SELECT %s, seq, tokens, checksum, payload"
                    " FROM ctxtrim_messages WHERE session_id = %s"
                ),
                (child_id.encode(), self._key),
            )
            await conn.execute(
                self._sql(
                    "INSERT INTO ctxtrim_ids (session_id, client_id, digest)"
                    " SELECT %s, client_id, digest FROM ctxtrim_ids WHERE session_id = %s"
                ),
                (child_id.encode(), self._key),
            )
        self._shared.users += 1
        child = self._make(
            self._shared, child_id, self._counter, self._max_bytes, self._schema, self._idempotent
        )
        child._timeout = self._timeout
        return child

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session in this store's schema, oldest first."""
        async with self._conn() as conn:
            cur = await conn.execute(
                self._sql(
                    "SELECT session_id, next_seq - first_seq, created_at, input_tokens,"
                    " output_tokens FROM ctxtrim_sessions ORDER BY created_at, session_id"
                )
            )
            sessions = await cur.fetchall()
            out = []
            for key, count, created, tin, tout in sessions:
                sid = bytes(key).decode("utf-8")
                text = await self._preview(conn, bytes(key), sid) if count else ""
                out.append(
                    SessionInfo(
                        session_id=sid,
                        message_count=int(count),
                        preview=text,
                        created_at=created.isoformat(),
                        input_tokens=int(tin),
                        output_tokens=int(tout),
                    )
                )
        return out

    async def _preview(self, conn: psycopg.AsyncConnection[Any], key: bytes, sid: str) -> str:
        """The first user text: user rows only (payloads start with their role), read a
        page at a time until one has text (usually the first page)."""
        after = None
        while True:
            cur = await conn.execute(
                self._sql(
                    "SELECT seq, checksum, payload FROM ctxtrim_messages WHERE session_id = %s"
                    " AND payload LIKE %s AND (%s::bigint IS NULL OR seq > %s)"
                    " ORDER BY seq LIMIT 32"
                ),
                (key, '{"role":"user"%', after, after),
            )
            rows = await cur.fetchall()
            if not rows:
                return ""
            found = preview(
                decode_payload(p.encode("utf-8"), session_id=sid, seq=seq, checksum=c)
                for seq, c, p in rows
            )
            if found:
                return found
            after = rows[-1][0]

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._log_cache.release()
            await self._shared.release()

    @classmethod
    async def from_history(cls, history: Sequence[Message]) -> PostgresContextStore:
        """Not available: a server store needs its address. Use
        ``await PostgresContextStore.open(dsn, session_id)`` and then ``append_many(history)``."""
        raise TypeError(
            "PostgresContextStore.from_history() has no server to connect to; use "
            "`await PostgresContextStore.open(dsn, session_id)` and `append_many(history)`"
        )

    def __repr__(self) -> str:
        return f"PostgresContextStore(session_id={self.session_id!r})"
