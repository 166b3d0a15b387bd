"""The SQLite file under :class:`~ctxtrim.stores.SQLiteContextStore`: its schema and
migrations, the one connection per file and process with its worker thread
(:class:`_Database`), row reads, and what a failure is reported as.

Invariants: every statement on a connection runs on that connection's worker thread, which
owns it; a write is acknowledged only after its transaction commits (writes queued together
are group-committed, each in its own savepoint); stores opened on the same file in one
process share one :class:`_Database` (``_REGISTRY``), released when the last closes; a
failure to open a file says whether the process ran out of file descriptors. The store's own
invariants (transactions, order, generations) are in ``ctxtrim.stores.sqlite``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import errno
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

from ctxtrim.errors import (
    StoreError,
)
from ctxtrim.messages import Message
from ctxtrim.stores._common import (
    decode_payload,
    stored_count,
)

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
