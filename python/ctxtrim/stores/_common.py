"""Helpers every persistent backend shares: input checks, payload codec, token counts.

Invariants the backends rely on:

* :func:`check_messages` runs before any I/O and either returns the encoded payloads of
  *all* messages or raises (nothing is stored on error). It accepts only exact
  :class:`~ctxtrim.Message` instances (already validated at construction), re-checks that
  each still round-trips through JSON unchanged (a caller could have mutated a
  ``meta``/``input`` dict after construction) and enforces the size cap.
* A payload is the message's msgspec JSON (``Message.encode()``): plain text, no class
  reconstruction on read, NUL and every non-surrogate code point escaped or kept as UTF-8.
  :func:`payload_checksum` (CRC-32) is stored beside it so a reader can prove a row is whole;
  :func:`decode_payload` raises :class:`~ctxtrim.errors.CorruptRecordError` instead of
  skipping a bad row.
* Session ids are any non-empty ``str`` of valid UTF-8 up to :data:`MAX_SESSION_ID_BYTES`
  bytes; NUL, ``*``, ``:``, ``}`` are ordinary characters (ids are bound parameters or hashed,
  never spliced into a query or key pattern).
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence

import msgspec

from ctxtrim import _core
from ctxtrim.errors import (
    CorruptRecordError,
    InvalidArgument,
    InvalidMessage,
    InvalidSessionId,
    InvalidTurnId,
    MessageTooLarge,
    StoreError,
)
from ctxtrim.messages import Message
from ctxtrim.store import (
    _INT64_MAX,
    _INT64_MIN,
    MAX_MESSAGE_TOKENS,
    _check_batch,
    _check_expected_length,
    _check_int64,
    _check_limit,
    _check_upto,
    _preview,
    _token_counts,
    _tokens_overflow,
    _upto_past_end,
)

__all__ = [
    "DEFAULT_LOG_CACHE_BYTES",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "DEFAULT_TIMEOUT",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_SESSION_ID_BYTES",
    "TURN_ATTEMPTS",
    "LogCache",
    "LogCaches",
    "check_batch",
    "check_int64",
    "check_limit",
    "check_max_message_bytes",
    "check_messages",
    "check_replace_args",
    "check_session_id",
    "check_timeout",
    "check_tokens",
    "decode_payload",
    "encode_payload",
    "load_cached",
    "log_caches",
    "payload_checksum",
    "preview",
    "stored_count",
    "token_counts",
    "tokens_overflow",
    "turn_guard",
    "turns_kept_moving",
    "upto_past_end",
]

#: Default cap on one message's encoded size (JSON bytes): 16 MiB.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Cap on a session id's UTF-8 length.
MAX_SESSION_ID_BYTES = 4096
#: Default bound (seconds) on one call to a server store, waits for a connection included.
DEFAULT_TIMEOUT = 10.0

INT64_MIN, INT64_MAX = _INT64_MIN, _INT64_MAX
check_int64 = _check_int64
check_batch = _check_batch
tokens_overflow = _tokens_overflow
upto_past_end = _upto_past_end
token_counts = _token_counts

_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder(Message).decode


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a usable id, else raise :class:`InvalidSessionId`."""
    if not isinstance(session_id, str):
        raise InvalidSessionId(f"session_id must be a str, got {type(session_id).__name__}")
    if not session_id:
        raise InvalidSessionId("session_id must not be empty")
    try:
        size = len(session_id.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise InvalidSessionId(
            f"session_id has a lone surrogate at index {e.start}; it cannot be UTF-8"
        ) from None
    if size > MAX_SESSION_ID_BYTES:
        raise InvalidSessionId(
            f"session_id is {size} bytes of UTF-8, over the cap of {MAX_SESSION_ID_BYTES}"
        )
    return session_id


def check_max_message_bytes(value: object) -> int:
    """Validate a ``max_message_bytes`` option (a positive int)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"max_message_bytes must be a positive int, got {value!r}")
    return value


def check_limit(limit: object) -> int | None:
    """Validate ``get_history``'s ``limit`` (None or an int >= 0)."""
    return _check_limit(limit)


def check_timeout(timeout: object) -> float:
    """Validate a store's ``timeout`` option (seconds, a finite number > 0)."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout < float("inf")
    ):
        raise InvalidArgument(f"timeout must be a number of seconds > 0, got {timeout!r}")
    return float(timeout)


def check_tokens(input_tokens: object, output_tokens: object) -> tuple[int, int]:
    """Both token counts as signed 64-bit ints, or :class:`InvalidArgument` (before I/O)."""
    return _check_int64("input_tokens", input_tokens), _check_int64("output_tokens", output_tokens)


def check_replace_args(
    upto: object, expected_generation: object, messages: object, expected_length: object = None
) -> None:
    """``replace_prefix``'s argument checks, in the order every store makes them."""
    start = _check_upto(upto)
    _check_int64("expected_generation", expected_generation)
    _check_batch(messages)
    _check_expected_length(start, expected_length)


def encode_payload(message: object, max_bytes: int, path: str = "message") -> bytes:
    """The stored form of one message: its JSON bytes. Raises :class:`InvalidMessage` for a
    non-``Message`` (exact type; subclasses would not decode back as themselves) or a message
    that no longer encodes, and :class:`MessageTooLarge` over ``max_bytes``."""
    if type(message) is not Message:
        raise InvalidMessage(f"expected a ctxtrim.Message, got {type(message).__name__}", path)
    try:
        data = _ENCODE(message)
    except Exception as e:  # mutated dict holding a set, a lone surrogate, ...
        raise InvalidMessage(f"message does not encode as JSON: {e}", path) from None
    if len(data) > max_bytes:
        raise MessageTooLarge(
            f"encoded message is {len(data)} bytes, over the cap of {max_bytes}", path
        )
    # What is stored must be what comes back. A message is checked at construction, but its
    # dicts are the caller's objects: a set or NaN put in later would encode as a list or
    # null and come back changed. One decode (C speed, ~the cost of the encode) proves it.
    try:
        same = _DECODE(data) == message
    except Exception:
        same = False
    if not same:
        raise InvalidMessage(
            "message does not survive a JSON round trip (a dict in it was changed after "
            "construction to hold a non-JSON value)",
            path,
        )
    return data


def check_messages(messages: Iterable[object], max_bytes: int) -> list[bytes]:
    """Encode every message of a batch, or raise naming ``messages[i]`` (nothing stored)."""
    _check_batch(messages)
    return [encode_payload(m, max_bytes, f"messages[{i}]") for i, m in enumerate(messages)]


def payload_checksum(data: bytes) -> int:
    """CRC-32 of a payload (stored beside it; checked on every read)."""
    return zlib.crc32(data)


def decode_payload(
    data: bytes, *, session_id: str, seq: int, checksum: int | None = None
) -> Message:
    """Decode one stored row; raise :class:`CorruptRecordError` naming the row if its
    checksum does not match or it does not decode as a valid message."""
    if checksum is not None and zlib.crc32(data) != checksum:
        raise CorruptRecordError(
            f"session {session_id!r} message {seq}: checksum mismatch (torn or altered row)",
            session_id,
            seq,
        )
    try:
        return Message.decode(data)
    except Exception as e:
        raise CorruptRecordError(
            f"session {session_id!r} message {seq} does not decode: {e}", session_id, seq
        ) from e


def stored_count(value: object, session_id: str, seq: int) -> int:
    """A token count read from a row: an ``int`` from 0 to ``MAX_MESSAGE_TOKENS``, else the
    row was altered (every count was checked when stored): :class:`CorruptRecordError`
    naming the row, never an ``OverflowError`` on every later read."""
    if type(value) is not int or not 0 <= value <= MAX_MESSAGE_TOKENS:
        raise CorruptRecordError(
            f"session {session_id!r} message {seq}: stored token count {value!r} is not a "
            f"count (0 to {MAX_MESSAGE_TOKENS})",
            session_id,
            seq,
        )
    return value


def preview(history: Iterable[Message]) -> str:
    """What ``list_sessions`` shows: the first user text, cut to 80 characters. Consumes
    ``history`` lazily, so a backend can feed it decoded rows one at a time."""
    return _preview(history)


#: Default bound on what the cached logs of all persistent stores of a process hold: the
#: stored size (JSON bytes) of their messages. See :class:`LogCaches`.
DEFAULT_LOG_CACHE_BYTES = 512 * 1024 * 1024


class LogCaches:
    """The bound on the logs persistent stores keep cached (one per open store, see
    :class:`LogCache`), shared by every store of the process: a server holding thousands of
    sessions keeps the logs of those in use and releases the least recently used ones first.

    ``limit_bytes`` bounds the stored size (the JSON bytes read from the database) of the
    messages all cached logs hold; in memory, a decoded message takes about that size again
    for its text plus a fixed cost per message (measured in ``docs/performance.md``). When
    a read takes the total past the limit, the least recently read logs are released, never
    the one just read (so a single history larger than the limit is still cached alone). A
    released log is read again whole, from the database, the next time its store is used:
    nothing changes but that read's cost. Closing a store releases its log at once (a store
    dropped unclosed keeps its log in the bound until it is the least recently used).
    """

    def __init__(self, limit_bytes: int = DEFAULT_LOG_CACHE_BYTES) -> None:
        self._lru: OrderedDict[LogCache, int] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        self._limit = self._check(limit_bytes)

    @staticmethod
    def _check(value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgument(f"limit_bytes must be an int >= 0, got {value!r}")
        return value

    @property
    def limit_bytes(self) -> int:
        """The bound (bytes of stored JSON); setting it releases logs down to it at once."""
        return self._limit

    @limit_bytes.setter
    def limit_bytes(self, value: int) -> None:
        self._limit = self._check(value)
        self._evict(None)

    @property
    def held_bytes(self) -> int:
        """The stored size of the messages the cached logs hold now."""
        return self._held

    @property
    def sessions(self) -> int:
        """How many stores have a cached log now."""
        return len(self._lru)

    def _use(self, cache: LogCache, size: int) -> None:
        """``cache`` now holds ``size`` bytes and is the most recently used."""
        with self._lock:
            self._held += size - self._lru.pop(cache, 0)
            self._lru[cache] = size
        self._evict(cache)

    def _touch(self, cache: LogCache) -> None:
        """``cache`` is the most recently used (its size unchanged)."""
        with self._lock:
            if cache in self._lru:
                self._lru.move_to_end(cache)

    def _forget(self, cache: LogCache) -> None:
        with self._lock:
            self._held -= self._lru.pop(cache, 0)

    def _evict(self, keep: LogCache | None) -> None:
        victims = []
        with self._lock:
            while self._held > self._limit and self._lru:
                oldest, size = next(iter(self._lru.items()))
                if oldest is keep:
                    break  # only the log just read is left over the limit
                del self._lru[oldest]
                self._held -= size
                victims.append(oldest)
        for victim in victims:
            victim._drop()


#: The process's bound on cached logs (``ctxtrim.stores.log_caches``).
log_caches = LogCaches()


class LogCache:
    """The log a store last read, so that trimming a session every turn reads only the rows
    appended since (O(new), not O(history)). Bounded with every other store's by
    :data:`log_caches` (the least recently used are released).

    A backend reads ``(generation, since, messages, counts, mark, size)``: the rows from
    position ``since`` (``None``: the whole history) of ``generation``, ``mark``, where the
    next read starts, and ``size``, the stored bytes of the rows read. Rows only ever get
    appended within a generation, and everything else (clear, compaction, a removed turn)
    moves the generation, so a read that continues the cached log from its own mark in its
    own generation extends it; any other read replaces it. Two loads that raced leave the
    second's read not continuing the cache: it is read again whole (rare, always correct); so
    is a log released meanwhile. The store's own appends extend it too (:meth:`wrote`), when
    they were stored exactly where it ends: a turn that appends and then trims reads only
    the session row.
    """

    __slots__ = ("_bytes", "_generation", "_log", "_mark", "_owner", "_read_at")

    def __init__(self, owner: LogCaches | None = None) -> None:
        self._generation: int | None = None
        self._log: _core.MessageLog | None = None
        self._mark: int | None = None
        self._bytes = 0
        self._owner = log_caches if owner is None else owner
        #: ``(generation, mark)`` of the last log returned (kept when the log is released).
        self._read_at: tuple[int, int] | None = None

    @property
    def warm(self) -> bool:
        """Whether a log is cached (a load reads only what was appended since)."""
        return self._log is not None

    def start(self) -> tuple[int | None, int | None]:
        """``(generation, mark)`` to read from: what the cached log holds."""
        return (self._generation, self._mark) if self._log is not None else (None, None)

    def load(
        self,
        generation: int,
        since: int | None,
        messages: Sequence[Message],
        counts: Sequence[int],
        mark: int,
        size: int = 0,
    ) -> _core.MessageLog | None:
        """The log after that read, or ``None`` if the read does not continue the cache."""
        log = self._log
        if since is None:
            # A whole history is read as a rewrite reads it (what the memory store's
            # ``replace_prefix`` does): a caller-given turn id below the turn before it, which
            # only a ``replace_prefix`` can have stored, is numbered at that turn.
            log = _core.MessageLog()
            log.replace_prefix(0, messages, log.generation, tokens=list(counts))
            held = size
        elif log is None or since != self._mark or generation != self._generation:
            return None
        elif not messages and mark == since:  # nothing new (the common case): only the LRU
            self._read_at = (generation, mark)
            self._owner._touch(self)
            return log.snapshot()
        else:
            try:
                log.extend(messages, tokens=list(counts))
            except InvalidTurnId:  # written by a ctxtrim that did not check turns: read whole
                return None
            held = self._bytes + size
        self._log, self._generation, self._mark, self._bytes = log, generation, mark, held
        self._read_at = (generation, mark)
        snapshot = log.snapshot()
        self._owner._use(self, held)
        return snapshot

    def wrote(
        self,
        generation: int,
        start: int,
        messages: Sequence[Message],
        counts: Sequence[int],
        size: int,
    ) -> None:
        """This store stored ``messages`` as rows ``start...`` of ``generation``: the cached
        log takes them as they are, if it ends exactly at ``start`` in that generation, so
        the next load reads no row it wrote itself (a turn's append then trim decodes
        nothing). Any other case leaves the cache alone: the next load reads those rows.
        The messages stored are equal to what decoding their rows gives (``encode_payload``
        checks the round trip), so the log is the one a read would have made."""
        log = self._log
        if log is None or start != self._mark or generation != self._generation:
            return
        try:
            log.extend(messages, tokens=list(counts))
        except InvalidTurnId:  # unreachable after turn_guard; reading is always right
            self.release()
            return
        self._mark = start + len(messages)
        self._bytes += size
        self._owner._use(self, self._bytes)

    def release(self) -> None:
        """Drop the cached log (the store closed); the next load reads the history whole."""
        self._owner._forget(self)
        self._drop()

    def _drop(self) -> None:
        self._log = self._generation = self._mark = None
        self._bytes = 0


LogRead = tuple[int, int | None, list[Message], list[int], int, int]


async def history_through(
    cache: LogCache,
    limit: int | None,
    load_log: Callable[[], Awaitable[_core.MessageLog]],
) -> list[Message] | None:
    """``get_history(limit)`` from the cached log, or None when the caller reads the rows.

    A whole history is read into the cache (one read of every row, as a direct read would
    make, and later reads take only the rows appended since); a bounded read uses the cache
    only when it is already there (a read through a cold cache would read every row where
    the bounded read reads ``limit``)."""
    if limit is None or cache.warm:
        return (await load_log()).tail(limit)
    return None


async def load_cached(
    cache: LogCache, read: Callable[[int | None, int | None], Awaitable[LogRead]]
) -> _core.MessageLog:
    """The session's log through ``cache``: ``read(generation, mark)`` reads what follows
    ``mark`` if the session is still in ``generation`` (else the whole history)."""
    log = cache.load(*await read(*cache.start()))
    if log is None:
        log = cache.load(*await read(None, None))
    assert log is not None  # a whole read always replaces the cache
    return log


#: How often an append carrying caller-given turn ids re-checks them when the session
#: changed between the check and the write, before giving up with a ``StoreError``.
TURN_ATTEMPTS = 8


def turns_kept_moving(session_id: str) -> StoreError:
    return StoreError(
        f"session {session_id!r} kept changing while its turn ids were checked"
        f" ({TURN_ATTEMPTS} attempts); nothing was appended"
    )


async def turn_guard(
    log: Callable[[], Awaitable[_core.MessageLog]], cache: LogCache, messages: Sequence[Message]
) -> tuple[int, int] | None:
    """The one turn rule of every store, for a persistent store's append.

    ``None`` if no message carries a caller-given turn id (nothing to check). Otherwise the
    session's log is read (``log()``, the store's cached ``load_log``), the batch is checked
    against the turn it is at exactly as the memory store's log checks an append (an id
    lower than the current turn, or than an earlier id of the batch, raises
    :class:`~ctxtrim.errors.InvalidTurnId` with the core's message), and the
    ``(generation, mark)`` the check was made at is returned: the write must store the batch
    only if the session is still there (same generation, same length), inside the write's
    own transaction or script, and write nothing otherwise (the caller checks again).
    """
    for m in messages:
        if m.turn is not None:
            break
    else:
        return None  # no caller-given turn id: nothing to check
    current = await log()
    # Where that log was read (not ``start()``: another store's read may have released the
    # cached log since, e.g. from another thread).
    assert cache._read_at is not None  # a load always sets it
    generation, mark = cache._read_at
    current.fork().extend(messages, tokens=[0] * len(messages))  # raises InvalidTurnId
    return generation, mark
