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

import asyncio
import concurrent.futures
import contextvars
import errno
import hashlib
import os
import sqlite3
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

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
    stored_count,
    token_counts,
    tokens_overflow,
    turn_guard,
    turns_kept_moving,
    upto_past_end,
)
from ctxtrim.tokens import TokenCounter

__all__ = ["SCHEMA_VERSION", "SQLiteContextStore"]

_T = TypeVar("_T")
Synchronous = Literal["NORMAL", "FULL", "EXTRA"]
_SYNCHRONOUS = ("NORMAL", "FULL", "EXTRA")
_INT64 = (-(2**63), 2**63 - 1)  # SQLite's INTEGER; past it, arithmetic silently turns REAL

#: ``_MIGRATIONS[v]`` takes the schema from version ``v`` to ``v + 1``.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE ctxtrim_sessions (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL UNIQUE,
            generation INTEGER NOT NULL DEFAULT 0,
            next_seq INTEGER NOT NULL DEFAULT 0,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL)""",
        # The integer ``sid`` keeps rows small whatever the session id's length.
        """CREATE TABLE ctxtrim_messages (
            sid INTEGER NOT NULL REFERENCES ctxtrim_sessions(id),
            generation INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            tokens INTEGER NOT NULL,
            crc INTEGER NOT NULL,
            payload BLOB NOT NULL,
            PRIMARY KEY (sid, generation, seq))""",
    ),
    (
        # v2: client message ids for opt-in idempotent appends (``idempotent_ids=True``).
        """CREATE TABLE ctxtrim_ids (
            sid INTEGER NOT NULL REFERENCES ctxtrim_sessions(id),
            message_id TEXT NOT NULL,
            digest BLOB NOT NULL,
            PRIMARY KEY (sid, message_id)) WITHOUT ROWID""",
    ),
)
#: The schema version this ctxtrim writes.
SCHEMA_VERSION = len(_MIGRATIONS)

_Row = tuple[int, int, int, bytes]  # seq, tokens, crc, payload


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


# --------------------------------------------------------------------------------------------
# Connection-level helpers. They run on the worker thread only.


def _write(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], _T]) -> _T:
    """Run ``body`` in one ``BEGIN IMMEDIATE`` transaction; roll back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:  # the connection is broken; the next call will say so
                pass
        raise
    return result


def _read(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], _T]) -> _T:
    """Run ``body`` in one read transaction (a consistent WAL snapshot)."""
    conn.execute("BEGIN")
    try:
        return body(conn)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


def _schema_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'ctxtrim_schema'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute("SELECT version FROM ctxtrim_schema").fetchone()
    return 0 if row is None else int(row[0])


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    if _schema_version(conn) == SCHEMA_VERSION:  # the common case takes no write lock
        return

    def body(conn: sqlite3.Connection) -> None:
        # Re-read under the write lock: another process may have migrated meanwhile.
        version = _schema_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path}: schema version {version} was written by a newer ctxtrim "
                f"(this one knows up to {SCHEMA_VERSION}); refusing to open it"
            )
        if version == 0:
            conn.execute("CREATE TABLE IF NOT EXISTS ctxtrim_schema (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO ctxtrim_schema (version) VALUES (0)")
        for v in range(version, SCHEMA_VERSION):
            for statement in _MIGRATIONS[v]:
                conn.execute(statement)
        conn.execute("UPDATE ctxtrim_schema SET version = ?", (SCHEMA_VERSION,))

    _write(conn, body)


def _connect(path: str, synchronous: str, busy_timeout: float) -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions; every transaction here is explicit.
    conn = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    try:
        # Switching a fresh file to WAL needs an exclusive lock for a moment and can report
        # "database is locked" without consulting the busy handler when several processes
        # open the file at once; retry until the busy timeout.
        deadline = time.monotonic() + busy_timeout
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL").fetchone()
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.005)
        conn.execute(f"PRAGMA synchronous={synchronous}")  # one of _SYNCHRONOUS, checked
        _migrate(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def _attach(conn: sqlite3.Connection, session_id: str) -> int:
    """The integer id of ``session_id``'s row, creating the row if needed."""
    row = conn.execute(
        "SELECT id FROM ctxtrim_sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is not None:
        return int(row[0])

    def body(conn: sqlite3.Connection) -> int:
        conn.execute(
            "INSERT OR IGNORE INTO ctxtrim_sessions (session_id, created_at) VALUES (?, ?)",
            (session_id, _now()),
        )
        row = conn.execute(
            "SELECT id FROM ctxtrim_sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return int(row[0])

    return _write(conn, body)


def _head(conn: sqlite3.Connection, sid: int) -> tuple[int, int]:
    """``(generation, next_seq)`` of a session."""
    row = conn.execute(
        "SELECT generation, next_seq FROM ctxtrim_sessions WHERE id = ?", (sid,)
    ).fetchone()
    if row is None:  # sessions are never deleted; this means the file was tampered with
        raise StoreError(f"session row {sid} is missing from the database")
    return int(row[0]), int(row[1])


def _read_rows(
    conn: sqlite3.Connection, sid: int, session_id: str, generation: int, start: int, nxt: int
) -> tuple[list[Message], list[int], int]:
    """Messages ``[start, nxt)`` of ``generation``, their stored token counts and the bytes
    of their payloads; every row must be there (seq is unique and below next_seq, so the
    count proves contiguity)."""
    rows = _rows(conn, sid, generation, start)
    if len(rows) != nxt - start:
        raise StoreError(
            f"session {session_id!r}: rows {start}..{nxt} of generation {generation}"
            f" are not contiguous ({len(rows)} found)"
        )
    messages = [
        decode_payload(p, session_id=session_id, seq=seq, checksum=crc) for seq, _, crc, p in rows
    ]
    counts = [stored_count(r[1], session_id, r[0]) for r in rows]
    return messages, counts, sum([len(r[3]) for r in rows])


def _rows(conn: sqlite3.Connection, sid: int, generation: int, start: int) -> list[_Row]:
    return conn.execute(
        "SELECT seq, tokens, crc, payload FROM ctxtrim_messages"
        " WHERE sid = ? AND generation = ? AND seq >= ? ORDER BY seq",
        (sid, generation, start),
    ).fetchall()


class _Database:
    """One connection and the single thread that owns it, shared by every store of this
    process on the same file (and ``synchronous``/``busy_timeout``), however each was opened.

    A single worker thread (rather than ``asyncio.to_thread``'s shared pool) means the
    connection is only ever touched by the thread that made it, calls on it are serialised
    without a lock, and an awaited call cannot starve the default executor. The thread is
    not tied to an event loop: stores on several loops or threads may share it.

    **Group commit.** Writes do not go to the worker one by one: they join a pending group,
    and the worker runs a whole group in one ``BEGIN IMMEDIATE`` transaction, each write
    inside its own savepoint. Writes that arrive while a group is committing form the next
    group, so under load one commit (one fsync with ``synchronous=FULL``) acknowledges many
    writes. A write's own error (a stale generation, a conflicting id) rolls back its
    savepoint only and fails that write alone; a failure of the transaction itself (the
    lock not granted, ``COMMIT`` failing) fails exactly the writes of that group. Every
    write is acknowledged only after its group's ``COMMIT`` returned.
    """

    def __init__(self, path: str, key: tuple[str, str, float] | None = None) -> None:
        self.path = path
        self.key = key
        self.conn: sqlite3.Connection | None = None
        self.refs = 1
        self.ready: concurrent.futures.Future[None] | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ctxtrim-sqlite")
        self._lock = threading.Lock()
        self._reads: list[_Job] = []
        self._pending: list[_Job] = []
        self._scheduled = False
        #: Transactions and writes committed through groups (read by tests and benchmarks).
        self.groups = 0
        self.grouped_writes = 0

    def _call(self, fn: Callable[..., _T], args: tuple[Any, ...]) -> _T:
        if self.conn is None:
            raise StoreError(f"{self.path}: the store is closed")
        try:
            return fn(self.conn, *args)
        except sqlite3.Error as e:
            raise StoreError(_sqlite_message(self.path, e)) from e

    # Calls reach the worker as jobs ``(fn, args, loop, future)`` in two queues, reads and
    # writes, drained by one worker task that is scheduled only when a queue was empty. A
    # call costs one asyncio future, not the executor's future, its condition variable and
    # the asyncio future chained to it: at 10,000 sessions in flight, what a call allocates
    # is what the cyclic GC walks. Results go back to each loop in one thread-safe callback
    # per drain. A cancelled caller cancels only its wait: the job still runs (a write
    # commits or rolls back with its group).

    def run(self, fn: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """Run ``fn(conn, *args)`` on the worker (a read, or a write outside any group); the
        future to await (a plain function, not a coroutine: one object less in flight)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        self._queue(False, (fn, args, loop, future))
        return future

    def write(self, body: Callable[[sqlite3.Connection], _T]) -> asyncio.Future[_T]:
        """Run ``body`` in the next group transaction; the future is settled once that group
        committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        self._queue(True, (body, (), loop, future))
        return future

    def _queue(self, write: bool, job: _Job) -> None:
        with self._lock:
            # The queue is looked up under the lock: the worker swaps the read queue for a
            # new list when it drains it, so a list fetched before locking may be one the
            # worker already took, and a job appended to it would never run.
            (self._pending if write else self._reads).append(job)
            if not self._scheduled:
                self._scheduled = True
                self._executor.submit(self._drain)

    def _drain(self) -> None:
        """Worker thread: the pending reads, then the pending writes (up to a cap) as one
        transaction; the results are handed to their loops."""
        with self._lock:
            reads, self._reads = self._reads, []
            group = self._pending[:_GROUP_MAX]
            del self._pending[:_GROUP_MAX]
            if self._pending:
                self._executor.submit(self._drain)
            else:
                self._scheduled = False
        results: list[_Result] = []
        try:
            for fn, args, loop, future in reads:
                try:
                    results.append((loop, future, True, self._call(fn, args)))
                except Exception as e:
                    results.append((loop, future, False, e))
            if group:
                self._commit_group(group, results)
        finally:
            _hand_back(results)

    def _commit_group(self, group: list[_Job], results: list[_Result]) -> None:
        """Run ``group`` as one transaction; its results are appended to ``results``."""
        conn = self.conn
        if conn is None:
            _fail_all(group, StoreError(f"{self.path}: the store is closed"), results)
            return
        done: list[_Result] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            if len(group) == 1:
                body, _, loop, future = group[0]
                done.append((loop, future, True, body(conn)))
            else:
                for body, _, loop, future in group:
                    conn.execute("SAVEPOINT ctxtrim_write")
                    try:
                        value = body(conn)
                    except Exception as e:
                        if not conn.in_transaction:  # SQLite rolled the whole group back
                            raise
                        conn.execute("ROLLBACK TO ctxtrim_write")
                        conn.execute("RELEASE ctxtrim_write")
                        done.append((loop, future, False, _store_error(self.path, e)))
                        continue
                    conn.execute("RELEASE ctxtrim_write")
                    done.append((loop, future, True, value))
            conn.execute("COMMIT")
        except BaseException as e:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:  # the connection is broken; the next call will say so
                    pass
            _fail_all(group, _store_error(self.path, e), results)
            if not isinstance(e, Exception):
                raise
            return
        self.groups += 1
        self.grouped_writes += len(group)
        results += done

    def start(self, synchronous: str, busy_timeout: float) -> concurrent.futures.Future[None]:
        """Queue the connect on the worker (the first job it runs); return its future."""

        def go() -> None:
            try:
                self.conn = _connect(self.path, synchronous, busy_timeout)
            except sqlite3.Error as e:
                raise StoreError(_sqlite_message(self.path, e)) from e

        self.ready = self._executor.submit(go)
        return self.ready

    def acquire(self) -> None:
        with _REGISTRY_LOCK:
            self.refs += 1

    def _last_ref(self) -> bool:
        """Drop one reference; True when it was the last (the caller closes)."""
        with _REGISTRY_LOCK:
            self.refs -= 1
            if self.refs > 0:
                return False
            if self.key is not None and _REGISTRY.get(self.key) is self:
                del _REGISTRY[self.key]
            return True

    def _close_conn(self) -> None:  # on the worker, after every queued job
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    async def release(self) -> None:
        if self._last_ref():
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._executor, self._close_conn)
            self._executor.shutdown(wait=False)


#: A queued call: ``(fn, args, loop, future)``; and its outcome ``(loop, future, ok, value)``.
_Job = tuple[Callable[..., Any], tuple[Any, ...], asyncio.AbstractEventLoop, "asyncio.Future[Any]"]
_Result = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", bool, Any]
#: Most writes committed in one group transaction (bounds one group's latency).
_GROUP_MAX = 1024

#: The shared connections of this process, by (real path, synchronous, busy_timeout).
_REGISTRY: dict[tuple[str, str, float], _Database] = {}
_REGISTRY_LOCK = threading.Lock()


def _forget_registry() -> None:
    # A forked child must not use its parent's connections or worker threads (neither
    # survives a fork): stores it opens get fresh ones.
    global _REGISTRY_LOCK
    _REGISTRY.clear()
    _REGISTRY_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_registry)


#: SQLite's result code for a file it could not open (``SQLITE_CANTOPEN``).
_SQLITE_CANTOPEN = 14
#: How close to the file-descriptor limit counts as having run out (a failed open may
#: have closed the descriptors it had taken by the time we look).
_FD_MARGIN = 8


def _open_fds() -> int | None:
    """How many file descriptors this process has open (None where it cannot tell);
    ``-1`` when even listing them fails for want of one."""
    for where in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(where))
        except FileNotFoundError:
            continue
        except OSError as e:
            if e.errno in (errno.EMFILE, errno.ENFILE):
                return -1
            return None
    return None


def _out_of_fds() -> str:
    """Why SQLite could not open a file, when the reason is that the process ran out of file
    descriptors (SQLite itself only says "unable to open database file"), else ``""``."""
    try:
        import resource
    except ImportError:  # not on Windows
        return ""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return ""
    count = _open_fds()
    if count is None or (count != -1 and count + _FD_MARGIN < soft):
        try:  # the direct test: can this process open one more file?
            os.close(os.open(os.devnull, os.O_RDONLY))
            return ""
        except OSError as e:
            if e.errno not in (errno.EMFILE, errno.ENFILE):
                return ""
    held = "all" if count in (None, -1) else str(count)
    return (
        f"; the process has run out of file descriptors ({held} of its limit of {soft} are"
        " open, RLIMIT_NOFILE): every SQLite file a store holds open takes three (the"
        " database, its -wal and -shm) and a worker thread. Close stores no longer in use,"
        " keep many sessions in one file (store.session(id)) rather than one file each, or"
        " raise the limit (ulimit -n)"
    )


def _sqlite_message(path: str, e: sqlite3.Error) -> str:
    """The text of the :class:`StoreError` for a SQLite error on ``path``; a file SQLite could
    not open says so when the process ran out of file descriptors."""
    hint = ""
    if getattr(e, "sqlite_errorcode", None) == _SQLITE_CANTOPEN or "unable to open" in str(e):
        hint = _out_of_fds()
    return f"{path}: sqlite: {e}{hint}"


def _store_error(path: str, e: BaseException) -> BaseException:
    if isinstance(e, sqlite3.Error):
        error = StoreError(_sqlite_message(path, e))
        error.__cause__ = e
        return error
    return e


def _fail_all(group: list[_Job], e: BaseException, results: list[_Result]) -> None:
    """Fail every write of a group that did not commit, each with its own exception."""
    if len(group) == 1:
        _, _, loop, future = group[0]
        results.append((loop, future, False, e))
        return
    for _, _, loop, future in group:
        error = StoreError(f"{e}" if isinstance(e, StoreError) else f"{type(e).__name__}: {e}")
        error.__cause__ = e
        results.append((loop, future, False, error))


#: The context the results are handed back in (they only settle futures).
_HAND_BACK_CONTEXT = contextvars.Context()


def _hand_back(results: list[_Result]) -> None:
    """Worker thread: settle each result's future on its loop, one callback per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Result]] = {}
    for result in results:
        by_loop.setdefault(result[0], []).append(result)
    for loop, settled in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle_all, settled, context=_HAND_BACK_CONTEXT)
        except RuntimeError:  # the loop was closed: nobody is waiting any more
            pass


def _settle_all(results: list[_Result]) -> None:
    """On the caller's loop: settle the futures whose callers still wait."""
    for _, future, ok, value in results:
        if future.done():  # its caller was cancelled
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


async def _shared_database(
    path: str, synchronous: str, busy_timeout: float, shared: bool
) -> _Database:
    """A connection to ``path`` with a reference taken: the process's shared one (made on
    first use) unless ``shared`` is false or the database is private (``":memory:"``)."""
    if not shared or path in (":memory:", ""):
        db = _Database(path)
        ready = db.start(synchronous, busy_timeout)
    else:
        key = (os.path.realpath(path), synchronous, busy_timeout)
        with _REGISTRY_LOCK:
            found = _REGISTRY.get(key)
            if found is not None:
                found.refs += 1
                db = found
            else:
                db = _REGISTRY[key] = _Database(path, key)
                db.start(synchronous, busy_timeout)
        assert db.ready is not None
        ready = db.ready
    try:
        await asyncio.wrap_future(ready)
    except BaseException:
        await db.release()
        raise
    return db


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
        sid: int,
        session_id: str,
        *,
        counter: TokenCounter | None,
        max_message_bytes: int,
        idempotent_ids: bool = False,
    ) -> None:
        """Internal: use :meth:`open`."""
        if not isinstance(db, _Database):
            raise TypeError("use `await SQLiteContextStore.open(path, session_id)`")
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
