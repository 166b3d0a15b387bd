"""`SQLiteContextStore`: the embedded default store, one SQLite file (stdlib ``sqlite3``).

Invariants (each checked by ``tests/stores/test_store_reliability.py`` or the conformance suite):

* **One transaction per write call.** Every write (``append``, ``append_many``, ``clear``,
  ``replace_prefix``, ``fork``, token updates) runs in one ``BEGIN IMMEDIATE`` transaction:
  it takes SQLite's write lock *before* reading ``next_seq``, so concurrent writers from any
  number of processes queue on ``busy_timeout`` instead of failing with "database is locked"
  the way a deferred read-then-write transaction does. A batch is all-or-nothing, even
  across ``kill -9``.
* **Gapless order.** Messages of a session are rows ``(sid, generation, seq)`` with
  ``seq = 0, 1, 2, ...`` assigned under that lock; history order is ``seq`` order, never a
  timestamp. Readers read in one transaction, so every history they see is a prefix of
  every later one within a generation.
* **Generations.** ``clear`` and ``replace_prefix`` move the session to generation + 1 in the
  same transaction that rewrites its rows. ``replace_prefix`` is a compare-and-swap on the
  generation: a stale one raises :class:`~ctxtrim.errors.StaleGenerationError` and changes
  nothing; rows appended after the snapshot are carried over (copied inside SQLite).
* **Validated before I/O.** Messages are encoded (and size-capped) in the caller before the
  transaction starts; a bad one raises :class:`~ctxtrim.errors.InvalidMessage` and nothing is
  written. Each row stores its payload's CRC-32 and token count; a row that fails its check
  raises :class:`~ctxtrim.errors.CorruptRecordError` on read, never skipped.
* **Off the event loop.** Every call runs on the connection's single worker thread, which
  owns the connection (see the design notes for why not ``asyncio.to_thread``). A cancelled
  caller does not interrupt a transaction: the worker finishes (commits or rolls back) it.
* **One connection per file per process.** Stores opened on the same file share one
  connection and worker (see :class:`_Database`); concurrent writes are group-committed,
  each in its own savepoint, and acknowledged only after their transaction commits.
* **Durability.** WAL with ``synchronous=FULL`` by default: a returned write survives a
  process crash *and* power loss. ``synchronous="NORMAL"`` is faster and still survives a
  process crash, but the last commits may roll back after power loss or an OS crash.
* **Schema.** Versioned migrations recorded in ``ctxtrim_schema``, applied inside
  ``BEGIN IMMEDIATE`` so several processes opening a fresh file at once migrate it exactly
  once; a file written by a newer ctxtrim is refused.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

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
    TURN_ATTEMPTS,
    LogCache,
    LogRead,
    check_limit,
    check_max_message_bytes,
    check_messages,
    check_replace_args,
    check_session_id,
    check_tokens,
    decode_payload,
    encode_payload,
    history_through,
    load_cached,
    preview,
    token_counts,
    tokens_overflow,
    turn_guard,
    turns_kept_moving,
    upto_past_end,
)
from ctxtrim.stores._sqlite_db import (
    _INT64,
    _SYNCHRONOUS,
    SCHEMA_VERSION,
    Synchronous,
    _attach,
    _Database,
    _head,
    _now,
    _read,
    _read_rows,
    _shared_database,
)
from ctxtrim.tokens import TokenCounter

__all__ = ["SCHEMA_VERSION", "SQLiteContextStore"]

_T = TypeVar("_T")


class SQLiteContextStore(ContextStore):
    """One session's history in an SQLite file; open it with :meth:`open`.

    Several stores (in one process or many) may use the same file and even the same
    session at once. All stores of one process on one file share a connection and worker
    thread (``open`` per conversation is the scalable way); close every store you open
    (or use ``async with``).
    See the module docstring for the guarantees.
    """

    def __init__(
        self,
        db: _Database,
        sid: int = 0,
        session_id: str = "",
        *,
        counter: TokenCounter | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        idempotent_ids: bool = False,
    ) -> None:
        """Internal: use :meth:`open`."""
        if not isinstance(db, _Database):  # SQLiteContextStore("chat.db") and the like
            raise TypeError(
                "SQLiteContextStore is opened, not constructed: "
                "`await SQLiteContextStore.open(path, session_id)`"
            )
        self.__dict__["_session_id"] = session_id
        self._db = db
        self._sid = sid
        self._counter = counter
        self._max_bytes = max_message_bytes
        self._idempotent = idempotent_ids
        self._closed = False
        self._log_cache = LogCache()

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        session_id: str | None = None,
        *,
        synchronous: Synchronous = "FULL",
        counter: TokenCounter | None = None,
        busy_timeout: float = 30.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        idempotent_ids: bool = False,
        shared: bool = True,
    ) -> SQLiteContextStore:
        """Open (creating if needed) the file at ``path`` and the session ``session_id``
        (a new uuid4 hex when None). ``":memory:"`` gives a private in-memory database.

        ``synchronous``: ``"FULL"`` (default) fsyncs every commit — durable across power
        loss; ``"NORMAL"`` survives process crashes but may lose the last commits on power
        loss or an OS crash. ``busy_timeout`` (seconds) is how long a write waits for
        another writer before raising :class:`~ctxtrim.errors.StoreError`.
        ``counter`` gives exact token counts (stored with each message, never recounted).

        ``idempotent_ids=True`` makes a message's ``id`` an idempotency key: appending a
        message whose id is already stored with the same content stores nothing (a retry
        after a lost acknowledgement); with different content the whole batch is refused
        with :class:`~ctxtrim.errors.InvalidMessage` naming ``messages[i].id``. ``clear``
        forgets the ids, ``fork`` copies them, ``replace_prefix`` keeps them.

        Every store of this process opened on the same file (same ``synchronous`` and
        ``busy_timeout``) shares one connection and one worker thread, and concurrent writes
        from all of them are group-committed: opening one store per conversation costs no
        thread and no file descriptor. The connection closes when the last store using it
        closes. ``shared=False`` gives this store a connection of its own (``":memory:"`` is
        always private).
        """
        session_id = check_session_id(uuid.uuid4().hex if session_id is None else session_id)
        sync = synchronous.upper() if isinstance(synchronous, str) else synchronous
        if sync not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {_SYNCHRONOUS}, got {synchronous!r}")
        if not isinstance(busy_timeout, (int, float)) or not busy_timeout >= 0:
            raise ValueError(f"busy_timeout must be a number of seconds >= 0, got {busy_timeout}")
        max_bytes = check_max_message_bytes(max_message_bytes)
        fspath = os.fspath(path)
        if not isinstance(fspath, str):
            raise TypeError(f"path must be str or os.PathLike[str], got {type(path).__name__}")
        db = await _shared_database(fspath, sync, float(busy_timeout), bool(shared))
        try:
            sid = await db.run(_attach, session_id)
        except BaseException:
            await db.release()
            raise
        return cls(
            db,
            sid,
            session_id,
            counter=counter,
            max_message_bytes=max_bytes,
            idempotent_ids=bool(idempotent_ids),
        )

    def _sibling(self, sid: int, session_id: str) -> SQLiteContextStore:
        """Another store on this one's connection (for ``fork`` and ``session``)."""
        self._db.acquire()
        return SQLiteContextStore(
            self._db,
            sid,
            session_id,
            counter=self._counter,
            max_message_bytes=self._max_bytes,
            idempotent_ids=self._idempotent,
        )

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise StoreError(f"{self._db.path}: the store is closed")
        return await self._db.run(fn, *args)

    async def _commit(self, body: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run a write ``body`` in the connection's next group transaction."""
        if self._closed:
            raise StoreError(f"{self._db.path}: the store is closed")
        return await self._db.write(body)

    @property
    def path(self) -> str:
        """The database file."""
        return self._db.path

    # -- writes -----------------------------------------------------------------------------

    async def append(self, message: Message) -> None:
        payload = encode_payload(message, self._max_bytes)
        await self._append([message], [payload], "message")

    async def append_many(self, messages: Sequence[Message]) -> None:
        payloads = check_messages(messages, self._max_bytes)
        if payloads:
            await self._append(list(messages), payloads, "messages[{}]")

    async def _append(self, messages: list[Message], payloads: list[bytes], path: str) -> None:
        # Caller-given turn ids are checked against the session's turn; the write then
        # stores the batch only if the session is still where the check saw it.
        for _ in range(TURN_ATTEMPTS):
            guard = await turn_guard(self.load_log, self._log_cache, messages)
            if await self._write_batch(messages, payloads, path, guard):
                return
        raise turns_kept_moving(self.session_id)

    def _keys(self, messages: list[Message], payloads: list[bytes], path: str) -> list[Any]:
        """``(message_id, sha256)`` per message when ids are idempotency keys (else Nones);
        a batch naming one id twice with different content is refused before any I/O."""
        if not self._idempotent:
            return [None] * len(messages)
        keys: list[Any] = []
        seen: dict[str, bytes] = {}
        for i, (m, payload) in enumerate(zip(messages, payloads, strict=True)):
            if m.id is None:
                keys.append(None)
                continue
            digest = hashlib.sha256(payload).digest()
            if seen.setdefault(m.id, digest) != digest:
                raise InvalidMessage(
                    f"id {m.id!r} appears twice in the batch with different content",
                    path.format(i) + ".id",
                )
            keys.append((m.id, digest))
        return keys

    async def _write_batch(
        self,
        messages: list[Message],
        payloads: list[bytes],
        path: str,
        guard: tuple[int, int] | None,
    ) -> bool:
        """Store the batch; ``False`` (nothing written) if ``guard`` is given and the
        session is no longer at that ``(generation, next_seq)``: check the turns again."""
        counts = token_counts(messages, self._counter, path)
        keys = self._keys(messages, payloads, path)
        sid = self._sid

        def body(conn: sqlite3.Connection) -> tuple[int, int, int] | None:
            generation, nxt = _head(conn, sid)
            if guard is not None and (generation, nxt) != guard:
                return None  # under the write lock: nothing written
            rows: list[tuple[int, int, int, int, int, bytes]] = []
            fresh: set[str] = set()
            for i, (p, n, key) in enumerate(zip(payloads, counts, keys, strict=True)):
                if key is not None:
                    if key[0] in fresh:
                        continue  # the same message twice in one batch: once
                    row = conn.execute(
                        "SELECT digest FROM ctxtrim_ids WHERE sid = ? AND message_id = ?",
                        (sid, key[0]),
                    ).fetchone()
                    if row is not None:
                        if row[0] != key[1]:
                            raise InvalidMessage(
                                f"id {key[0]!r} is already stored with different content",
                                path.format(i) + ".id",
                            )
                        continue  # a retried append: stored already
                    fresh.add(key[0])
                    conn.execute(
                        "INSERT INTO ctxtrim_ids (sid, message_id, digest) VALUES (?, ?, ?)",
                        (sid, *key),
                    )
                rows.append((sid, generation, nxt + len(rows), n, zlib.crc32(p), p))
            conn.executemany(
                "INSERT INTO ctxtrim_messages (sid, generation, seq, tokens, crc, payload)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            conn.execute(
                "UPDATE ctxtrim_sessions SET next_seq = ? WHERE id = ?", (nxt + len(rows), sid)
            )
            return generation, nxt, len(rows)

        written = await self._commit(body)
        if written is None:
            return False
        generation, start, stored = written
        if stored == len(messages):  # (a retried idempotent append stores fewer)
            self._log_cache.wrote(
                generation, start, messages, counts, sum([len(p) for p in payloads])
            )
        return True

    async def clear(self) -> None:
        sid = self._sid

        def body(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM ctxtrim_messages WHERE sid = ?", (sid,))
            conn.execute("DELETE FROM ctxtrim_ids WHERE sid = ?", (sid,))
            conn.execute(
                "UPDATE ctxtrim_sessions SET generation = generation + 1, next_seq = 0,"
                " input_tokens = 0, output_tokens = 0 WHERE id = ?",
                (sid,),
            )

        await self._commit(body)

    async def replace_prefix(
        self,
        upto: int,
        messages: Sequence[Message],
        expected_generation: int,
        *,
        expected_length: int | None = None,
    ) -> None:
        check_replace_args(upto, expected_generation, messages, expected_length)
        payloads = check_messages(messages, self._max_bytes)
        counts = token_counts(messages, self._counter)
        sid, k = self._sid, len(payloads)

        def body(conn: sqlite3.Connection) -> None:
            generation, nxt = _head(conn, sid)
            if generation != expected_generation:
                raise stale_generation_error(expected_generation, generation)
            if expected_length is not None and nxt != expected_length:
                raise stale_length_error(generation, expected_length, nxt)
            if upto > nxt:
                raise upto_past_end(upto, nxt)
            new = generation + 1
            conn.executemany(
                "INSERT INTO ctxtrim_messages (sid, generation, seq, tokens, crc, payload)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (sid, new, i, n, zlib.crc32(p), p)
                    for i, (p, n) in enumerate(zip(payloads, counts, strict=True))
                ],
            )
            # The kept tail (including appends made after the caller's snapshot) moves to
            # the new generation inside SQLite: no payload crosses into Python.
            conn.execute(
                "INSERT INTO ctxtrim_messages (sid, generation, seq, tokens, crc, payload)"
                " SELECT sid, ?, seq - ? + ?, tokens, crc, payload FROM ctxtrim_messages"
                " WHERE sid = ? AND generation = ? AND seq >= ?",
                (new, upto, k, sid, generation, upto),
            )
            conn.execute(
                "DELETE FROM ctxtrim_messages WHERE sid = ? AND generation = ?", (sid, generation)
            )
            conn.execute(
                "UPDATE ctxtrim_sessions SET generation = ?, next_seq = ? WHERE id = ?",
                (new, nxt - upto + k, sid),
            )

        await self._commit(body)

    async def fork(self) -> SQLiteContextStore:
        """A new session (uuid4 hex id) in the same file with a copy of this history and
        its token totals, made in one transaction. Rows are copied inside SQLite (no
        payload passes through Python), so the fork is independent of its parent: clearing
        or compacting either never touches the other."""
        sid, child_id = self._sid, uuid.uuid4().hex

        def body(conn: sqlite3.Connection) -> int:
            generation = _head(conn, sid)[0]
            cur = conn.execute(
                "INSERT INTO ctxtrim_sessions (session_id, generation, next_seq, input_tokens,"
                " output_tokens, created_at) SELECT ?, generation, next_seq, input_tokens,"
                " output_tokens, ? FROM ctxtrim_sessions WHERE id = ?",
                (child_id, _now(), sid),
            )
            child = cur.lastrowid
            assert child is not None
            conn.execute(
                "INSERT INTO ctxtrim_messages (sid, generation, seq, tokens, crc, payload)"
                " SELECT ?, generation, seq, tokens, crc, payload FROM ctxtrim_messages"
                " WHERE sid = ? AND generation = ?",
                (child, sid, generation),
            )
            conn.execute(
                "INSERT INTO ctxtrim_ids (sid, message_id, digest)"
                " SELECT ?, message_id, digest FROM ctxtrim_ids WHERE sid = ?",
                (child, sid),
            )
            return child

        return self._sibling(await self._commit(body), child_id)

    async def session(self, session_id: str) -> SQLiteContextStore:
        """A store on another session (created if needed) of the same file, sharing this
        store's connection and worker thread: a server holding many sessions of one file
        needs one connection, not one per session. Close it like any store."""
        session_id = check_session_id(session_id)
        return self._sibling(await self._run(_attach, session_id), session_id)

    async def set_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        values = check_tokens(input_tokens, output_tokens)
        sid = self._sid

        def body(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE ctxtrim_sessions SET input_tokens = ?, output_tokens = ? WHERE id = ?",
                (*values, sid),
            )

        await self._commit(body)

    async def add_context_tokens(self, input_tokens: int, output_tokens: int) -> None:
        values = check_tokens(input_tokens, output_tokens)
        sid = self._sid

        def body(conn: sqlite3.Connection) -> None:
            # Under the write lock (BEGIN IMMEDIATE): past the 64-bit range SQLite would turn
            # the column REAL and lose later increments, so the sum is checked first.
            row = conn.execute(
                "SELECT input_tokens, output_tokens FROM ctxtrim_sessions WHERE id = ?", (sid,)
            ).fetchone()
            names = ("input_tokens", "output_tokens")
            for name, current, added in zip(names, row, values, strict=True):
                if not _INT64[0] <= current + added <= _INT64[1]:
                    raise tokens_overflow(name, added)
            conn.execute(
                "UPDATE ctxtrim_sessions SET input_tokens = input_tokens + ?,"
                " output_tokens = output_tokens + ? WHERE id = ?",
                (*values, sid),
            )

        await self._commit(body)

    # -- reads ------------------------------------------------------------------------------

    async def get_context_tokens(self) -> tuple[int, int]:
        sid = self._sid

        def body(conn: sqlite3.Connection) -> tuple[int, int]:
            row = conn.execute(
                "SELECT input_tokens, output_tokens FROM ctxtrim_sessions WHERE id = ?", (sid,)
            ).fetchone()
            if row is None:
                raise StoreError(f"session row {sid} is missing from the database")
            return int(row[0]), int(row[1])

        return await self._run(body)

    async def generation(self) -> int:
        sid = self._sid
        return await self._run(lambda conn: _head(conn, sid)[0])

    async def _load(self, limit: int | None) -> tuple[int, list[Message], list[int]]:
        sid, session_id = self._sid, self.session_id

        def body(conn: sqlite3.Connection) -> tuple[int, list[Message], list[int]]:
            generation, nxt = _head(conn, sid)
            start = 0 if limit is None else max(0, nxt - limit)
            messages, counts, _ = _read_rows(conn, sid, session_id, generation, start, nxt)
            return generation, messages, counts

        return await self._run(_read, body)

    async def get_history(self, limit: int | None = None) -> list[Message]:
        limit = check_limit(limit)
        if limit == 0:
            return []
        cached = await history_through(self._log_cache, limit, self.load_log)
        return cached if cached is not None else (await self._load(limit))[1]

    async def snapshot(self) -> HistorySnapshot:
        generation, messages, _ = await self._load(None)
        return HistorySnapshot(messages, generation)

    async def load_log(self) -> _core.MessageLog:
        """The history as a read-only MessageLog, with the token counts stored at append
        (nothing is recounted). The store keeps the log it last read and reads only the rows
        appended since (see :class:`~ctxtrim.stores._common.LogCache`)."""
        return await load_cached(self._log_cache, self._read_since)

    async def _read_since(self, generation: int | None, mark: int | None) -> LogRead:
        sid, session_id = self._sid, self.session_id

        def rows(conn: sqlite3.Connection) -> LogRead:
            current, nxt = _head(conn, sid)
            since = mark if (generation == current and mark is not None and mark <= nxt) else None
            read = _read_rows(conn, sid, session_id, current, since or 0, nxt)
            return current, since, read[0], read[1], nxt, read[2]

        def body(conn: sqlite3.Connection) -> LogRead:
            # Most loads find nothing new (the store's own appends are in its cached log):
            # the session row alone, one statement, is a consistent read of that.
            current, nxt = _head(conn, sid)
            if generation == current and mark == nxt:
                return current, mark, [], [], nxt, 0
            return _read(conn, rows)

        return await self._run(body)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every session in this file, oldest first."""

        def body(conn: sqlite3.Connection) -> list[SessionInfo]:
            out = []
            for sid, name, generation, count, created, tin, tout in conn.execute(
                "SELECT id, session_id, generation, next_seq, created_at, input_tokens,"
                " output_tokens FROM ctxtrim_sessions ORDER BY id"
            ).fetchall():

                def decoded(
                    sid: int = sid, name: str = name, g: int = generation
                ) -> Iterator[Message]:
                    cursor = conn.execute(
                        "SELECT seq, crc, payload FROM ctxtrim_messages"
                        " WHERE sid = ? AND generation = ? ORDER BY seq",
                        (sid, g),
                    )
                    for seq, crc, payload in cursor:
                        yield decode_payload(payload, session_id=name, seq=seq, checksum=crc)

                out.append(SessionInfo(name, count, preview(decoded()), created, tin, tout))
            return out

        return await self._run(_read, body)

    # -- lifecycle --------------------------------------------------------------------------

    async def close(self) -> None:
        """Release this store's share of the connection and its cached log; idempotent."""
        if not self._closed:
            self._closed = True
            self._log_cache.release()
            await self._db.release()

    @classmethod
    async def from_history(cls, history: Sequence[Message]) -> SQLiteContextStore:
        """A store on a private in-memory database holding ``history`` (axio's
        constructor shape; use :meth:`open` for a file)."""
        store = await cls.open(":memory:")
        try:
            await store.append_many(history)
        except BaseException:
            await store.close()
            raise
        return store

    def __repr__(self) -> str:
        return f"SQLiteContextStore({self._db.path!r}, session_id={self.session_id!r})"
